"""What the rater's verdicts mean at the gate, through the real dispatch path: unknown programs
need what high ones need, a secret read is never let through by a mode, and ``git status``
in a repository whose config runs a program is not a read."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import make_harness
from tests.test_policy import ScriptedApprover
from tui.events import ApprovalAnswer
from tui.security.permissions import ApprovalMode


def _tool(workspace: Path, name: str, marker: Path) -> Path:
    """An executable that leaves ``marker`` behind when it runs."""
    tool = workspace / name
    tool.write_text(f"#!/bin/sh\ntouch {marker}\n")
    tool.chmod(0o755)
    return tool


def _repo(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)


async def test_read_only_mode_refuses_an_unknown_program(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _tool(workspace, "tool", marker)
    h = make_harness(workspace, mode=ApprovalMode.READ_ONLY)
    result = await h.call("run_shell", {"command": "./tool"})
    assert result.is_error and "computed risk: unknown" in result.text
    assert "danger-full-access" in result.text
    assert not marker.exists()


async def test_ask_mode_asks_before_an_unknown_program(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _tool(workspace, "tool", marker)
    approver = ScriptedApprover(ApprovalAnswer.deny())
    h = make_harness(workspace, mode=ApprovalMode.AUTO_EDIT, approver=approver)
    result = await h.call("run_shell", {"command": "./tool"})
    assert result.is_error and "denied" in result.text
    assert [r.risk for r in approver.requests] == ["unknown"]
    assert not marker.exists()


async def test_a_secret_read_asks_even_in_full_auto(workspace: Path) -> None:
    approver = ScriptedApprover(ApprovalAnswer.deny(), ApprovalAnswer.allow_once())
    h = make_harness(workspace, mode=ApprovalMode.FULL_AUTO, approver=approver)
    command = "tr '\\0' '\\n' < /proc/self/environ"
    refused = await h.call("run_shell", {"command": command})
    assert refused.is_error and "denied" in refused.text
    request = approver.requests[0]
    assert request.risk == "high"
    assert any("reads a secret: /proc/*/environ" in r for s in request.segments for r in s.reasons)
    # The person, having seen which secret, may let it run.
    assert not (await h.call("run_shell", {"command": command})).is_error
    assert len(approver.requests) == 2


async def test_a_rule_that_covers_a_secret_read_lets_it_run(workspace: Path) -> None:
    from tui.security.settings import SecuritySettings

    settings = SecuritySettings(allow=["run_shell(cat /proc/self/environ)"])
    approver = ScriptedApprover()
    h = make_harness(workspace, settings=settings, approver=approver)
    assert not (await h.call("run_shell", {"command": "cat /proc/self/environ"})).is_error
    assert approver.requests == []


async def test_git_status_in_a_clean_repository_runs_unasked(workspace: Path) -> None:
    _repo(workspace)
    approver = ScriptedApprover()
    h = make_harness(workspace, mode=ApprovalMode.ASK, approver=approver)
    assert not (await h.call("run_shell", {"command": "git status"})).is_error
    assert approver.requests == []


async def test_git_status_asks_when_the_repository_config_sets_fsmonitor(
    workspace: Path, tmp_path: Path
) -> None:
    _repo(workspace)
    marker = tmp_path / "fsmonitor-ran"
    hook = _tool(tmp_path, "hook", marker)
    approver = ScriptedApprover(ApprovalAnswer.deny())
    h = make_harness(workspace, mode=ApprovalMode.ASK, approver=approver)
    # Judged clean first, then the config changes: the cached verdict must not survive it.
    assert not (await h.call("run_shell", {"command": "git status"})).is_error
    with open(workspace / ".git" / "config", "a") as config:
        config.write(f"[core]\n\tfsmonitor = {hook}\n")
    result = await h.call("run_shell", {"command": "git status"})
    assert result.is_error and "denied" in result.text
    reasons = [r for s in approver.requests[0].segments for r in s.reasons]
    assert any(
        "repository config sets core.fsmonitor: git status would run it" in r for r in reasons
    )
    assert not marker.exists()


async def test_a_configured_secret_place_counts_for_commands_too(workspace: Path) -> None:
    from tui.security.settings import SecuritySettings

    (workspace / "prod.env").write_text("KEY=1\n")
    settings = SecuritySettings(extra_forbidden_paths=[str(workspace / "prod.env")])
    approver = ScriptedApprover(ApprovalAnswer.deny())
    h = make_harness(workspace, settings=settings, approver=approver)
    result = await h.call("run_shell", {"command": "cat prod.env"})
    assert result.is_error and "denied" in result.text
    assert approver.requests[0].risk == "high"

"""The security policy, always exercised through the real dispatch path (registry.execute)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.conftest import Harness, make_harness
from tui.events import ApprovalAnswer, ApprovalDecision, ApprovalRequested, ApprovalResolved
from tui.security.approval import (
    ApprovalBroker,
    CallbackApprover,
)
from tui.security.grants import GrantStore
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.rules import Rule
from tui.security.settings import SecuritySettings


class ScriptedApprover:
    """Answers each request with the next scripted answer and remembers what it was asked."""

    def __init__(self, *answers: ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequested] = []

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        self.requests.append(request)
        return self.answers.pop(0)


def asking(
    workspace: Path,
    *answers: ApprovalAnswer,
    mode: ApprovalMode = ApprovalMode.ASK,
    settings: SecuritySettings | None = None,
    grants: GrantStore | None = None,
) -> tuple[Harness, ScriptedApprover]:
    approver = ScriptedApprover(*answers)
    h = make_harness(workspace, mode=mode, settings=settings, approver=approver, grants=grants)
    return h, approver


ALWAYS = ApprovalAnswer(decision=ApprovalDecision.ALLOW_ALWAYS)


# -- approval modes --------------------------------------------------------------------------


async def test_read_only_mode_runs_reads_and_refuses_acts(workspace: Path) -> None:
    h = make_harness(workspace, mode=ApprovalMode.READ_ONLY)
    assert not (await h.call("run_shell", {"command": "ls -la"})).is_error
    refused = await h.call("run_shell", {"command": "touch made"})
    assert refused.is_error and "--approval-mode" in refused.text
    assert not (workspace / "made").exists()


async def test_ask_mode_without_an_approver_fails_closed_with_the_remedy(workspace: Path) -> None:
    h = make_harness(workspace, mode=ApprovalMode.ASK)
    result = await h.call("run_shell", {"command": "touch made"})
    assert result.is_error
    assert "needs approval but there is no UI and no TTY" in result.text
    assert "--approval-mode full-auto" in result.text
    assert not (workspace / "made").exists()


async def test_ask_mode_asks_and_allow_once_runs(workspace: Path) -> None:
    h, approver = asking(workspace, ApprovalAnswer.allow_once(), ApprovalAnswer.allow_once())
    assert not (await h.call("run_shell", {"command": "touch made"})).is_error
    assert (workspace / "made").exists()
    # Once means once: the same command asks again.
    await h.call("run_shell", {"command": "touch made"})
    assert len(approver.requests) == 2
    resolved = [e for e in h.events if isinstance(e, ApprovalResolved)]
    assert [e.decision for e in resolved] == ["allow_once", "allow_once"]


async def test_auto_edit_runs_edits_but_asks_for_commands(workspace: Path) -> None:
    h, approver = asking(workspace, ApprovalAnswer.deny(), mode=ApprovalMode.AUTO_EDIT)
    result = await h.call("run_shell", {"command": "touch made"})
    assert result.is_error and "Command execution denied by user." in result.text
    assert len(approver.requests) == 1


async def test_permission_ceiling_refuses_even_in_full_auto(workspace: Path) -> None:
    settings = SecuritySettings(permission_ceiling=PermissionMode.WORKSPACE_WRITE)
    h = make_harness(workspace, settings=settings)
    (workspace / "doomed").write_text("x")
    result = await h.call("run_shell", {"command": "rm doomed"})
    assert result.is_error and "needs danger-full-access" in result.text
    assert (workspace / "doomed").exists()
    assert not (await h.call("run_shell", {"command": "mkdir d"})).is_error


# -- the approval request --------------------------------------------------------------------


async def test_request_shows_everything_and_claims_never_lower_risk(workspace: Path) -> None:
    h, approver = asking(workspace, ApprovalAnswer.deny())
    command = "git status && rm -rf build 2>/dev/null"
    await h.call("run_shell", {"command": command, "risk": "low", "why": "clean up"})
    request = approver.requests[0]
    assert request.command == command
    assert request.risk == "high"
    assert request.claimed_risk == "low" and request.why == "clean up"
    assert request.actor == "local"
    assert [s.risk for s in request.segments] == ["low", "high"]
    assert request.segments[1].text.startswith("rm -rf build")


async def test_claimed_risk_can_raise_it(workspace: Path) -> None:
    h, approver = asking(workspace, ApprovalAnswer.deny())
    await h.call("run_shell", {"command": "touch a", "risk": "high"})
    assert approver.requests[0].risk == "high"


async def test_deny_with_message_reaches_the_model(workspace: Path) -> None:
    h, _ = asking(workspace, ApprovalAnswer.deny("use make clean instead"))
    result = await h.call("run_shell", {"command": "rm -rf build"})
    assert result.is_error
    assert "Command execution denied by user. The user said: use make clean instead" in result.text


async def test_cancel_while_waiting_for_approval(workspace: Path) -> None:
    never: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()

    async def wait_forever(request: ApprovalRequested) -> ApprovalAnswer:
        return await never

    h = make_harness(workspace, mode=ApprovalMode.ASK, approver=CallbackApprover(wait_forever))
    ctx = h.context("run_shell")
    task = asyncio.create_task(h.call("run_shell", {"command": "touch x"}, ctx))
    await asyncio.sleep(0.05)
    ctx.cancel.set()
    result = await asyncio.wait_for(task, 5)
    assert result.is_error and "cancelled while waiting for approval" in result.text
    assert not (workspace / "x").exists()


# -- allow always and grants -----------------------------------------------------------------


async def test_allow_always_grants_each_segment_exactly(workspace: Path) -> None:
    h, approver = asking(workspace, ALWAYS, ApprovalAnswer.deny())
    assert not (await h.call("run_shell", {"command": "touch a && mkdir b"})).is_error
    assert sorted(str(g.rule) for g in h.policy.grants.list()) == [
        "run_shell(mkdir b)",
        "run_shell(touch a)",
    ]
    # Each granted segment now runs alone without asking …
    assert not (await h.call("run_shell", {"command": "touch a"})).is_error
    assert len(approver.requests) == 1
    # … but a compound with an ungranted segment still asks, and the grant was not a prefix.
    result = await h.call("run_shell", {"command": "touch a && rm -rf b"})
    assert result.is_error and len(approver.requests) == 2
    assert (workspace / "b").exists()


async def test_allow_always_with_an_edited_prefix(workspace: Path) -> None:
    answer = ApprovalAnswer(decision=ApprovalDecision.ALLOW_ALWAYS, pattern="touch:*")
    h, approver = asking(workspace, answer)
    await h.call("run_shell", {"command": "touch one"})
    await h.call("run_shell", {"command": "touch two three"})
    assert len(approver.requests) == 1
    assert (workspace / "three").exists()


async def test_saved_grants_persist_per_workspace_and_can_be_revoked(
    workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('# my settings\n[approval]\nmode = "ask"\n')
    answer = ApprovalAnswer(decision=ApprovalDecision.ALLOW_ALWAYS, scope="saved")
    h, _ = asking(workspace, answer, grants=GrantStore(workspace, config))
    await h.call("run_shell", {"command": "touch saved"})
    text = config.read_text()
    assert "# my settings" in text and 'mode = "ask"' in text
    assert "run_shell(touch saved)" in text

    # A new session in the same workspace inherits it; another workspace does not.
    again, approver = asking(workspace, ApprovalAnswer.deny(), grants=GrantStore(workspace, config))
    assert not (await again.call("run_shell", {"command": "touch saved"})).is_error
    assert approver.requests == []
    other = tmp_path / "other"
    other.mkdir()
    assert GrantStore(other, config).list() == []

    assert again.policy.grants.revoke("run_shell(touch saved)")
    assert "touch saved" not in config.read_text()
    assert GrantStore(workspace, config).list() == []


async def test_grant_given_while_waiting_covers_the_queued_call(workspace: Path) -> None:
    gate = asyncio.Event()
    requests: list[ApprovalRequested] = []

    async def slow_always(request: ApprovalRequested) -> ApprovalAnswer:
        requests.append(request)
        await gate.wait()
        return ALWAYS

    h = make_harness(workspace, mode=ApprovalMode.ASK, approver=CallbackApprover(slow_always))
    first = asyncio.create_task(h.call("run_shell", {"command": "touch same"}))
    second = asyncio.create_task(h.call("run_shell", {"command": "touch same"}))
    await asyncio.sleep(0.05)
    gate.set()
    results = await asyncio.gather(first, second)
    assert not any(r.is_error for r in results)
    assert len(requests) == 1


# -- rules -----------------------------------------------------------------------------------


def test_rule_parsing_and_word_boundaries() -> None:
    assert Rule.parse("run_shell") == Rule("run_shell")
    assert Rule.parse("run_shell(git status)") == Rule("run_shell", "git status")
    prefix = Rule.parse("run_shell(git commit:*)")
    assert prefix.matches("run_shell", "git commit -m 'x'")
    assert prefix.matches("run_shell", "git commit")
    assert not prefix.matches("run_shell", "git commits")
    assert not Rule.parse("run_shell(rm:*)").matches("run_shell", "rmdir x")
    assert Rule.parse("write_file(src/:*)").matches("write_file", "src/a.py")


async def test_deny_rule_matches_any_segment(workspace: Path) -> None:
    h = make_harness(workspace, settings=SecuritySettings(deny=["run_shell(git push:*)"]))
    result = await h.call("run_shell", {"command": "git status; git push origin main"})
    assert result.is_error and "denied by the rule run_shell(git push:*)" in result.text


async def test_allow_rule_never_covers_a_compound_tail(workspace: Path) -> None:
    settings = SecuritySettings(allow=["run_shell(touch:*)"])
    h, approver = asking(workspace, ApprovalAnswer.deny(), settings=settings)
    assert not (await h.call("run_shell", {"command": "touch ok"})).is_error
    result = await h.call("run_shell", {"command": "touch ok2 && rm -rf ok"})
    assert result.is_error and len(approver.requests) == 1
    assert (workspace / "ok").exists()


async def test_ask_rule_asks_even_for_read_only_calls(workspace: Path) -> None:
    settings = SecuritySettings(ask=["run_shell(cat:*)"])
    h, approver = asking(
        workspace, ApprovalAnswer.deny(), settings=settings, mode=ApprovalMode.FULL_AUTO
    )
    assert (await h.call("run_shell", {"command": "cat /etc/hostname"})).is_error
    assert len(approver.requests) == 1


async def test_command_denylist_and_allowlist(workspace: Path) -> None:
    h = make_harness(workspace)
    result = await h.call("run_shell", {"command": "echo hi; rm -rf /"})
    assert result.is_error and "command_denylist" in result.text
    only_echo = make_harness(workspace, settings=SecuritySettings(command_allowlist=["echo"]))
    assert not (await only_echo.call("run_shell", {"command": "echo a | echo b"})).is_error
    refused = await only_echo.call("run_shell", {"command": "echo a | sed s/a/b/"})
    assert refused.is_error and "sed not in [security].command_allowlist" in refused.text


# -- rate limit and environment --------------------------------------------------------------


async def test_rate_limit_counts_acting_calls_only(workspace: Path) -> None:
    h = make_harness(workspace, settings=SecuritySettings(max_actions_per_hour=2))
    assert not (await h.call("run_shell", {"command": "touch a"})).is_error
    assert not (await h.call("run_shell", {"command": "touch b"})).is_error
    third = await h.call("run_shell", {"command": "touch c"})
    assert third.is_error and "rate limit reached: 2 acting calls per hour" in third.text
    assert not (await h.call("time", {})).is_error


async def test_api_keys_never_reach_commands(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("MY_TOOL_HOME", "/opt/tool")
    h = make_harness(workspace, settings=SecuritySettings(env_passthrough=["MY_TOOL_HOME"]))
    result = await h.call("run_shell", {"command": "env"})
    assert "sk-secret-value" not in result.text and "OPENAI_API_KEY" not in result.text
    assert "MY_TOOL_HOME=/opt/tool" in result.text
    assert f"PATH={os.environ['PATH']}" in result.text


# -- paths -----------------------------------------------------------------------------------


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    monkeypatch.setenv("HOME", str(home))
    return home


async def test_forbidden_paths_by_tilde_dotdot_and_symlink(
    workspace: Path, fake_home: Path
) -> None:
    h = make_harness(workspace)
    (workspace / "innocent").symlink_to(fake_home / ".ssh")
    for path in [
        "~/.ssh/id_ed25519",
        "innocent/id_ed25519",
        str(fake_home / ".ssh"),
    ]:
        result = await h.call("run_shell", {"command": "ls", "cwd": path})
        assert result.is_error and "protected path" in result.text, path
    # A `..` walk to it is refused before any folding: ZeroClaw's path-traversal rule.
    walk = await h.call("run_shell", {"command": "ls", "cwd": f"{workspace}/../home/.ssh"})
    assert walk.is_error and "`..` component" in walk.text


async def test_workspace_only_refuses_escapes(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    h = make_harness(workspace, settings=SecuritySettings(workspace_only=True))
    for path in [str(outside), "link"]:
        result = await h.call("run_shell", {"command": "ls", "cwd": path})
        assert result.is_error and "outside the workspace" in result.text, path
    for path in ["..", "../outside"]:  # refused whatever the mode: the path-traversal rule
        result = await h.call("run_shell", {"command": "ls", "cwd": path})
        assert result.is_error and "`..` component" in result.text, path
    assert not (await h.call("run_shell", {"command": "ls", "cwd": "."})).is_error


async def test_nul_bytes_are_refused(workspace: Path) -> None:
    h = make_harness(workspace)
    result = await h.call("run_shell", {"command": "ls", "cwd": "a\x00b"})
    assert result.is_error and "NUL byte" in result.text
    result = await h.call("run_shell", {"command": "echo a\x00b"})
    assert result.is_error and "NUL byte" in result.text


# -- the broker the UI answers through -------------------------------------------------------


async def test_broker_publishes_and_resolves_by_id() -> None:
    published: list[ApprovalRequested] = []
    broker = ApprovalBroker(published.append)
    request = ApprovalRequested(
        request_id=ApprovalBroker.next_id(), tool_call_id="c", tool_name="run_shell", arguments={}
    )
    task = asyncio.create_task(broker(request))
    await asyncio.sleep(0)
    assert published == [request]
    assert broker.resolve(request.request_id, ApprovalAnswer.allow_once())
    assert (await task).decision is ApprovalDecision.ALLOW_ONCE
    assert not broker.resolve(request.request_id, ApprovalAnswer.allow_once())


async def test_broker_timeout_resolves_to_deny() -> None:
    broker = ApprovalBroker(lambda request: None, timeout=0.05)
    request = ApprovalRequested(request_id="r", tool_call_id="c", tool_name="t", arguments={})
    answer = await broker(request)
    assert answer.decision is ApprovalDecision.DENY_WITH_MESSAGE
    assert "timed out" in (answer.message or "")

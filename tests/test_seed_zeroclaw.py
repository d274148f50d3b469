"""ZeroClaw's contracts (zeroclaw-labs/zeroclaw), exactly: path traversal refused as
``is_path_allowed`` refuses it, the loop detector's third stage, the two risk switches, and
the shell tool's other names and bare-string arguments its tool-call parser accepts.

One test per behaviour, named after it, through the real registry, policy and (for the loop)
a whole session against the scripted model server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import test_loop
from tests.conftest import make_harness
from tests.scripted_server import ScriptedServer
from tests.test_loop import call, open_session, result_text, shell, submit, tools_step
from tests.test_policy import ScriptedApprover
from tui.config import load_settings
from tui.events import ApprovalAnswer, Notice, ToolCallCompleted, ToolCallStarted
from tui.security.permissions import ApprovalMode
from tui.security.settings import SecuritySettings

server = test_loop.server
"""The fixture: afterwards every request is checked for call/result pairing."""

META: dict[str, Any] = {"risk": "low", "mutation": False, "privesc": False, "why": "checking"}
POLL = "echo ran >> runs.log; echo not yet"


def runs(workspace: Path) -> int:
    log = workspace / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


# -- is_path_allowed -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [ApprovalMode.FULL_AUTO, ApprovalMode.ASK, ApprovalMode.READ_ONLY])
async def test_zeroclaw_dotdot_path_components_are_blocked_in_every_mode(
    workspace: Path, mode: ApprovalMode
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "a..b.txt").write_text("dots inside a name are fine")
    h = make_harness(workspace, mode=mode, approver=ScriptedApprover())
    for name, arguments in [
        ("read_file", {"path": "../../etc/hostname"}),
        ("read_file", {"path": "sub/../../etc/hostname"}),
        ("read_file", {"path": f"{workspace}/.."}),
        ("read_file", {"path": "..%2f..%2fetc%2fhostname"}),
        ("list_files", {"path": ".."}),
        ("grep_search", {"pattern": "x", "path": "../"}),
        ("write_file", {"path": "../escaped.txt", "content": "x"}),
        ("run_shell", {"command": "ls", "cwd": "..", **META}),
    ]:
        result = await h.call(name, arguments)
        assert result.is_error and result.details["error_type"] == "PermissionDenied", name
        assert "never climb with `..` (the path-traversal rule" in result.text, result.text
    assert not (workspace.parent / "escaped.txt").exists()
    fine = await h.call("read_file", {"path": "sub/a..b.txt"})
    assert not fine.is_error and "dots inside a name" in fine.text
    other = await h.call("read_file", {"path": "~root/.profile"})
    assert other.is_error and "another account's home (~user)" in other.text


# -- the loop detector's third stage ---------------------------------------------------------------


async def test_zeroclaw_ping_pong_loop_third_stage_ends_the_turn(
    server: ScriptedServer, workspace: Path
) -> None:
    (workspace / "state.txt").write_text("not ready\n")
    # The same two calls alternating with unchanged results, which used to be warned and
    # refused every 9 calls for ever: 9 cycles scripted, then the answer to the next prompt.
    for index in range(9):
        server.add(tools_step(shell(f"ping_{index}", POLL)))
        server.add(tools_step(call(f"look_{index}", "read_file", {"path": "state.txt"})))
    server.add({"text": "Waiting for your word."})
    async with open_session("openai", server, workspace) as (session, rec):
        outcome = await submit(session, "wait for the state to change")
        assert outcome.reason == "error" and outcome.error is not None
        assert "the turn was stopped" in outcome.error
        messages = [n.message for n in rec.of(Notice) if n.level == "warning"]
        assert any("went on after being refused once" in m for m in messages), messages
        assert messages[-1].startswith("the turn was stopped: the model kept repeating a loop")
        # Warned at the 8th call, refused at the 9th, warned again at the 17th, stopped at 18.
        assert len(server.requests) == 18
        assert runs(workspace) == 8
        # The person's next message reaches the model, with the stopped call's result.
        again = await submit(session, "go on then")
        assert again.reason == "completed" and again.final_text == "Waiting for your word."
    stopped = result_text(server.requests[18], "look_8")
    assert stopped.startswith("Error (LoopStopped)") and "the turn is stopped" in stopped


async def test_zeroclaw_no_progress_loop_third_stage_ends_the_turn(
    server: ScriptedServer, workspace: Path
) -> None:
    for index in range(8):
        server.add(tools_step(shell(f"poll_{index}", POLL)))
    server.add({"text": "never reached"})
    async with open_session("anthropic", server, workspace) as (session, rec):
        outcome = await submit(session, "poll until it is ready")
    assert outcome.reason == "error" and "the turn was stopped" in (outcome.error or "")
    assert runs(workspace) == 3  # warned at the 3rd, refused at the 4th, stopped at the 5th
    assert len(server.requests) == 5
    assert any(n.message.startswith("the turn was stopped") for n in rec.of(Notice))


# -- block_high_risk_commands and require_approval_for_medium_risk ---------------------------


async def test_zeroclaw_block_high_risk_commands_refuses_before_asking(workspace: Path) -> None:
    (workspace / "build").mkdir()
    approver = ScriptedApprover()
    settings = SecuritySettings(block_high_risk_commands=True)
    h = make_harness(workspace, mode=ApprovalMode.FULL_AUTO, settings=settings, approver=approver)
    blocked = await h.call("run_shell", {"command": "rm -rf build", **META})
    assert blocked.is_error and blocked.details["error_type"] == "PermissionDenied"
    assert "Command blocked: high-risk command is disallowed by policy" in blocked.text
    assert "[security] block_high_risk_commands" in blocked.text
    assert (workspace / "build").exists() and approver.requests == []
    # The model's own "high" blocks a command the rater calls low, too.
    claimed = await h.call("run_shell", {"command": "ls", **{**META, "risk": "high"}})
    assert claimed.is_error and "high-risk command is disallowed" in claimed.text
    assert not (await h.call("run_shell", {"command": "ls", **META})).is_error
    # Named by the person: an allow rule, or ZeroClaw's way, every program in the allowlist.
    for named in (
        SecuritySettings(block_high_risk_commands=True, allow=["run_shell(rm -rf build)"]),
        SecuritySettings(block_high_risk_commands=True, command_allowlist=["rm", "ls"]),
    ):
        allowed = make_harness(workspace, mode=ApprovalMode.FULL_AUTO, settings=named)
        assert not (await allowed.call("run_shell", {"command": "rm -rf build", **META})).is_error
        (workspace / "build").mkdir()
    off = make_harness(workspace, mode=ApprovalMode.FULL_AUTO)
    assert not (await off.call("run_shell", {"command": "rm -rf build", **META})).is_error


async def test_zeroclaw_require_approval_for_medium_risk_asks_even_in_full_auto(
    workspace: Path,
) -> None:
    approver = ScriptedApprover(ApprovalAnswer.deny(), ApprovalAnswer.allow_once())
    settings = SecuritySettings(require_approval_for_medium_risk=True)
    h = make_harness(workspace, mode=ApprovalMode.FULL_AUTO, settings=settings, approver=approver)
    assert not (await h.call("run_shell", {"command": "ls", **META})).is_error  # low: no question
    assert approver.requests == []
    denied = await h.call("run_shell", {"command": "touch asked", **META})
    assert denied.is_error and "Command execution denied by user." in denied.text
    request = approver.requests[0]
    assert request.risk == "medium"
    assert "require_approval_for_medium_risk" in (request.reason or "")
    assert not (workspace / "asked").exists()
    assert not (await h.call("run_shell", {"command": "touch asked", **META})).is_error
    assert (workspace / "asked").exists() and len(approver.requests) == 2
    # The person's own allow rule still answers for it.
    ruled = SecuritySettings(require_approval_for_medium_risk=True, allow=["run_shell(touch:*)"])
    quiet = ScriptedApprover()
    h = make_harness(workspace, mode=ApprovalMode.FULL_AUTO, settings=ruled, approver=quiet)
    assert not (await h.call("run_shell", {"command": "touch again", **META})).is_error
    assert quiet.requests == []


def test_zeroclaw_risk_switches_turned_on_apply_untrusted_and_off_waits(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(config))
    on = "[security]\nblock_high_risk_commands = true\nrequire_approval_for_medium_risk = true\n"
    (workspace / ".agent-tui.toml").write_text(on)
    loaded = load_settings(workspace, env={})
    assert loaded.settings.security.block_high_risk_commands is True
    assert loaded.settings.security.require_approval_for_medium_risk is True
    assert not loaded.trust.pending
    (config / "config.toml").write_text(on)
    (workspace / ".agent-tui.toml").write_text(on.replace("true", "false"))
    loaded = load_settings(workspace, env={})
    assert loaded.settings.security.block_high_risk_commands is True
    assert loaded.settings.security.require_approval_for_medium_risk is True
    assert {c.key for c in loaded.trust.held} == {
        "security.block_high_risk_commands",
        "security.require_approval_for_medium_risk",
    }


# -- the shell's other names and bare-string arguments ----------------------------------------


async def test_zeroclaw_shell_names_and_bare_string_arguments_are_accepted(
    workspace: Path,
) -> None:
    h = make_harness(workspace)
    for name, raw in [
        ("bash", '"echo via-bash"'),  # a JSON string: the command itself
        ("sh", "echo via-sh"),  # not JSON at all: the command, as `sh>echo via-sh` reads
        ("shell", '{"command": "echo via-shell"}'),  # ZeroClaw's own shape: no metadata
        ("run_shell", "echo via-run-shell"),
    ]:
        result = await h.call(name, raw)
        assert not result.is_error, (name, result.text)
        assert result.model_result()["stdout"] == f"via-{name.replace('_', '-')}\n"
    lifecycle = [e for e in h.events if isinstance(e, ToolCallStarted | ToolCallCompleted)]
    assert len(lifecycle) == 8 and {e.tool_name for e in lifecycle} == {"run_shell"}
    # The object form under run_shell's own name is Buddy's: its metadata is required.
    strict = await h.call("run_shell", '{"command": "echo x"}')
    assert strict.is_error and "risk: required argument missing" in strict.text
    # A broken object is still broken JSON, not a command.
    broken = await h.call("bash", '{"command": "echo x"')
    assert broken.is_error and "not valid JSON" in broken.text
    # A bare string means nothing to a tool without a command to stand for.
    assert "must be a JSON object, got str" in (await h.call("read_file", '"README.md"')).text
    # ZeroClaw's self-approval is no approval: the person is still asked.
    approver = ScriptedApprover(ApprovalAnswer.deny())
    asking = make_harness(workspace, mode=ApprovalMode.ASK, approver=approver)
    refused = await asking.call("bash", '{"command": "touch self-approved", "approved": true}')
    assert refused.is_error and len(approver.requests) == 1
    assert not (workspace / "self-approved").exists()

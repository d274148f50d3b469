"""claw-code's hook protocol and phi-core's per-update hooks, through the real loop.

Everything is real: the model is ``ScriptedServer`` on 127.0.0.1, hooks are Python scripts
run as processes with the reduced environment, calls pass the real policy, and approvals go
to an approver that records what it was asked. Hooks come from the workspace file, so they
run only with the workspace trusted (as the loop tests check).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import with_metadata
from tests.scripted_server import ScriptedServer
from tests.test_loop import (
    answer,
    call,
    check_request,
    open_session,
    result_text,
    shell,
    submit,
    tools_step,
)
from tui.agent.hooks import (
    MAX_HOOK_VARIABLE_CHARS,
    Hooks,
    ToolCallInfo,
)
from tui.config.sections.hooks import HookCommand
from tui.events import (
    ApprovalAnswer,
    ApprovalRequested,
    Event,
    ToolCallCompleted,
    ToolOutputChunk,
)
from tui.security.approval import CallbackApprover
from tui.tools.result import ToolResult

LOGGER = """\
import json, os, sys
data = json.load(sys.stdin)
variables = {k: v for k, v in os.environ.items() if k.startswith("HOOK_")}
with open(sys.argv[2], "a") as log:
    log.write(json.dumps({"section": sys.argv[1], "stdin": data, "env": variables,
                          "leaked": os.environ.get("AGENT_TUI_TEST_SECRET")}) + "\\n")
if data["hook_event_name"] == "PostToolUseFailure":
    print("the failure hook saw it", file=sys.stderr)
    sys.exit(2)
"""

DECIDER = """\
import json, sys
data = json.load(sys.stdin)
command = json.dumps(data["tool_input"])
for word in ("allow", "ask", "deny"):
    if f"{word}-me" in command:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
              "permissionDecision": word, "permissionDecisionReason": f"the hook said {word}"}}))
"""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """The model, checked afterwards for one result per call (as in the loop tests)."""
    with ScriptedServer() as running:
        yield running
    for request in running.requests:
        check_request(request)


def write_hooks(workspace: Path, script: str, *sections: str, args: str = "") -> None:
    path = workspace / "hook.py"
    path.write_text(script, encoding="utf-8")
    lines = []
    for section in sections:
        lines += [
            f"[[hooks.{section}]]",
            'matcher = "*"',
            f"command = '{sys.executable} {path} {section} {args}'",
            "",
        ]
    (workspace / ".agent-tui.toml").write_text("\n".join(lines), encoding="utf-8")


def records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


# -- PostToolUseFailure and HOOK_* -------------------------------------------------------------


async def test_failure_hooks_replace_post_hooks_and_every_hook_gets_hook_variables(
    server: ScriptedServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TUI_TEST_SECRET", "must-not-leak")
    log = workspace / "log.jsonl"
    write_hooks(
        workspace,
        LOGGER,
        "pre_tool_use",
        "post_tool_use",
        "post_tool_use_failure",
        args=str(log),
    )
    server.add(
        tools_step(
            shell("call_ok", "echo fine"),
            call("call_missing", "read_file", {"path": "no-such-file.txt"}),
        ),
        answer("done"),
    )
    async with open_session("openai", server, workspace, trust=True) as (session, _):
        outcome = await submit(session, "go")

    assert outcome.reason == "completed"
    seen = {(r["stdin"]["tool_use_id"], r["stdin"]["hook_event_name"]): r for r in records(log)}
    assert sorted(seen) == [
        ("call_missing", "PostToolUseFailure"),
        ("call_missing", "PreToolUse"),
        ("call_ok", "PostToolUse"),
        ("call_ok", "PreToolUse"),
    ]
    failed = seen[("call_missing", "PostToolUseFailure")]
    assert failed["section"] == "post_tool_use_failure"
    assert seen[("call_ok", "PostToolUse")]["section"] == "post_tool_use"
    assert failed["env"]["HOOK_EVENT"] == "PostToolUseFailure"
    assert failed["env"]["HOOK_TOOL_NAME"] == "read_file"
    assert json.loads(failed["env"]["HOOK_TOOL_INPUT"]) == {"path": "no-such-file.txt"}
    assert failed["env"]["HOOK_TOOL_IS_ERROR"] == "1"
    assert "no-such-file.txt" in failed["env"]["HOOK_TOOL_OUTPUT"]
    assert failed["stdin"]["error"] == failed["env"]["HOOK_TOOL_OUTPUT"]
    ok = seen[("call_ok", "PostToolUse")]
    assert ok["env"]["HOOK_EVENT"] == "PostToolUse" and ok["env"]["HOOK_TOOL_IS_ERROR"] == "0"
    assert "fine" in ok["env"]["HOOK_TOOL_OUTPUT"]
    pre = seen[("call_ok", "PreToolUse")]
    assert pre["env"]["HOOK_EVENT"] == "PreToolUse" and "HOOK_TOOL_OUTPUT" not in pre["env"]
    assert json.loads(pre["env"]["HOOK_TOOL_INPUT"]) == with_metadata(
        "run_shell", {"command": "echo fine"}
    )
    assert all(r["leaked"] is None for r in records(log))  # the reduced environment
    second = server.requests[1]
    assert result_text(second, "call_missing").endswith(
        "[PostToolUseFailure hook] the failure hook saw it"
    )
    assert "hook]" not in result_text(second, "call_ok")


async def test_hook_output_variable_is_bounded_so_the_hook_still_starts(tmp_path: Path) -> None:
    """A megabyte of output in one environment string is past what Linux will exec."""
    script = tmp_path / "length.py"
    script.write_text(
        "import os, sys\nprint(len(os.environ['HOOK_TOOL_OUTPUT']), file=sys.stderr)\n"
        "sys.exit(2)\n",
        encoding="utf-8",
    )
    hooks = Hooks(
        post_commands=[HookCommand(command=f"{sys.executable} {script}")], cwd=str(tmp_path)
    )
    info = ToolCallInfo("c1", "run_shell", '{"command": "seq 1 1000000"}')
    result = await hooks.run_after_tool(info, ToolResult("x" * 1_000_000))
    said = result.text.rsplit("[PostToolUse hook] ", 1)[1]
    assert said.isdigit(), result.text[-300:]
    assert MAX_HOOK_VARIABLE_CHARS <= int(said) <= MAX_HOOK_VARIABLE_CHARS + 100


# -- permissionDecision ------------------------------------------------------------------------


class Asked:
    """An approver that records every question and answers with a fixed decision."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.requests: list[ApprovalRequested] = []

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        self.requests.append(request)
        return ApprovalAnswer.allow_once() if self.allow else ApprovalAnswer.deny()

    def ids(self) -> list[str]:
        return [r.tool_call_id for r in self.requests]


async def run_decided(
    server: ScriptedServer,
    workspace: Path,
    calls: list[dict[str, Any]],
    *,
    approval: str,
    allow: bool,
    security: dict[str, Any] | None = None,
) -> Asked:
    write_hooks(workspace, DECIDER, "pre_tool_use")
    server.add(tools_step(*calls), answer("done"))
    asked = Asked(allow)
    async with open_session(
        "openai", server, workspace, approval=approval, trust=True, security=security
    ) as (session, _):
        session._policy.approver = CallbackApprover(asked)
        outcome = await submit(session, "go")
    assert outcome.reason == "completed"
    return asked


async def test_allow_skips_the_question_the_mode_would_ask(
    server: ScriptedServer, workspace: Path
) -> None:
    asked = await run_decided(
        server,
        workspace,
        [shell("call_allowed", "touch allow-me.txt"), shell("call_plain", "touch plain.txt")],
        approval="ask",
        allow=False,
    )
    assert asked.ids() == ["call_plain"]  # the mode still asks about the call no hook allowed
    assert (workspace / "allow-me.txt").exists() and not (workspace / "plain.txt").exists()


async def test_allow_never_passes_an_ask_rule_a_secret_read_a_deny_rule_or_the_ceiling(
    server: ScriptedServer, workspace: Path
) -> None:
    asked = await run_decided(
        server,
        workspace,
        [
            shell("call_rule", "touch allow-me-rule.txt"),
            shell("call_secret", "cat ~/.netrc # allow-me"),
            shell("call_denied", "touch allow-me-denied.txt"),
        ],
        approval="ask",
        allow=False,
        security={
            "ask": ["run_shell(touch allow-me-rule:*)"],
            "deny": ["run_shell(touch allow-me-denied:*)"],
        },
    )
    assert asked.ids() == ["call_rule", "call_secret"]
    second = server.requests[1]
    assert "[security].deny" in result_text(second, "call_denied")
    assert not list(workspace.glob("allow-me-*"))


async def test_allow_never_passes_read_only_mode(server: ScriptedServer, workspace: Path) -> None:
    asked = await run_decided(
        server,
        workspace,
        [shell("call_write", "touch allow-me.txt")],
        approval="read-only",
        allow=True,
    )
    assert asked.ids() == []
    assert result_text(server.requests[1], "call_write").startswith("Error (PermissionDenied)")
    assert not (workspace / "allow-me.txt").exists()


async def test_ask_forces_a_question_where_the_mode_would_allow(
    server: ScriptedServer, workspace: Path
) -> None:
    asked = await run_decided(
        server,
        workspace,
        [shell("call_ask", "touch ask-me.txt"), shell("call_free", "touch free.txt")],
        approval="full-auto",
        allow=False,
    )
    assert asked.ids() == ["call_ask"]
    assert "the hook said ask" in asked.requests[0].reason
    assert not (workspace / "ask-me.txt").exists() and (workspace / "free.txt").exists()
    assert "denied" in result_text(server.requests[1], "call_ask")


async def test_deny_refuses_with_the_hooks_reason(server: ScriptedServer, workspace: Path) -> None:
    asked = await run_decided(
        server,
        workspace,
        [shell("call_deny", "touch deny-me.txt")],
        approval="full-auto",
        allow=True,
    )
    assert asked.ids() == []
    assert result_text(server.requests[1], "call_deny") == (
        "Error (PermissionDenied): blocked by a hook: the hook said deny"
    )
    assert not (workspace / "deny-me.txt").exists()


# -- per-update hooks --------------------------------------------------------------------------


async def test_update_hooks_see_change_and_drop_streamed_updates(
    server: ScriptedServer, workspace: Path
) -> None:
    server.add(
        tools_step(shell("call_out", "echo public-line"), shell("call_sec", "echo secret-line")),
        answer("done"),
    )
    before: list[tuple[str, str]] = []
    after: list[Event] = []

    def redact(info: ToolCallInfo, event: Event) -> Event | None:
        before.append((info.tool_call_id, event.kind))  # type: ignore[attr-defined]
        if isinstance(event, ToolOutputChunk):
            if "secret-line" in event.text:
                return None
            return event.model_copy(update={"text": event.text.replace("public", "PUBLIC")})
        return event

    async with open_session("openai", server, workspace) as (session, rec):
        assert session._loop is not None
        session._loop.hooks.before_tool_update.append(redact)
        session._loop.hooks.after_tool_update.append(lambda info, event: after.append(event))
        await submit(session, "go")

    shown = "".join(e.text for e in rec.of(ToolOutputChunk) if e.tool_call_id == "call_out")
    assert "PUBLIC-line" in shown and "secret" not in shown and "public-line" not in shown
    assert ("call_out", "tool_output") in before
    # Start and end are the loop's: never offered to the hooks, always published.
    assert {kind for _, kind in before} <= {"tool_output", "tool_progress", "notice"}
    assert sorted(e.tool_call_id for e in rec.of(ToolCallCompleted)) == ["call_out", "call_sec"]
    assert not [e for e in rec.of(ToolOutputChunk) if e.tool_call_id == "call_sec"]
    assert all(isinstance(e, ToolOutputChunk) and "secret" not in e.text for e in after)
    assert after  # the observer saw what was published
    # The model's result is the tool's own: update hooks shape what the person sees.
    assert "secret-line" in result_text(server.requests[1], "call_sec")

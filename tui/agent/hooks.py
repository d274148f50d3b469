"""Hooks around tool calls and model requests.

Two kinds, one contract: in-process callbacks (for embedding agent-tui) and shell commands
from ``[hooks]`` in config, fed JSON on stdin the way Claude Code's hooks are and ``HOOK_*``
environment variables the way claw-code's are, so existing hook scripts work. A pre-tool hook
may deny a call (the model reads the reason), rewrite its input, or answer
``permissionDecision``: ``ask`` forces an approval, ``allow`` skips one only where the policy
would have let the mode decide (see ``SecurityPolicy.authorize``). A post-tool hook may add
feedback to the result; a call that ended in error runs the ``PostToolUseFailure`` hooks
instead. In-process update hooks see, change or drop a call's streamed updates.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tui.agent.claude_names import PERMISSION_MODES, as_claude, claude_name, from_claude
from tui.config.sections.hooks import HookCommand
from tui.events import Event, ToolCallCompleted, ToolCallStarted
from tui.exec.backend import BackendError
from tui.exec.sandbox.sandbox import Confine
from tui.safe_text import clean, dumps_or, excerpt, loads_or
from tui.security.environment import reduced_environment
from tui.security.settings import DEFAULT_ENV_ALLOWLIST
from tui.tools.result import ToolResult

HookEventName = Literal["PreToolUse", "PostToolUse", "PostToolUseFailure"]
HookPermission = Literal["allow", "ask"]

MAX_HOOK_VARIABLE_CHARS = 32_000
"""``HOOK_TOOL_INPUT`` / ``HOOK_TOOL_OUTPUT`` are cut here: Linux refuses to start a program
with one environment string above 128 KiB, and a tool's output can be megabytes. The JSON on
stdin carries the input whole."""


@dataclass
class PreToolDecision:
    """What the pre-tool hooks decided: run (maybe with new arguments) or deny with a reason."""

    deny_reason: str | None = None
    arguments: str | None = None
    """Rewritten raw JSON arguments, when a hook changed them."""
    permission: HookPermission | None = None
    """``ask``: a person approves this call whatever the mode says; ``allow``: the mode's
    question is skipped (never a deny rule, the ceiling, a secret read or read-only mode)."""
    permission_reason: str = ""


@dataclass
class ToolCallInfo:
    tool_call_id: str
    tool_name: str
    arguments: str


PreToolCallback = Callable[[ToolCallInfo], Awaitable[PreToolDecision | None]]
PostToolCallback = Callable[[ToolCallInfo, ToolResult], Awaitable[ToolResult | None]]
UpdateCallback = Callable[[int], Awaitable[None]]
ToolUpdateHook = Callable[[ToolCallInfo, Event], Event | None]
"""Sees one streamed update of a running call (output chunk, progress, notice) before it is
published: returns it, a changed copy, or None to drop it. Synchronous, because updates
arrive in order from a synchronous sink and must stay in order."""
ToolUpdateObserver = Callable[[ToolCallInfo, Event], None]
"""Sees each update after it was published (what the UI got)."""


@dataclass
class Hooks:
    """Callbacks and commands, run in order; the first denial wins."""

    before_tool: list[PreToolCallback] = field(default_factory=list)
    after_tool: list[PostToolCallback] = field(default_factory=list)
    before_update: list[UpdateCallback] = field(default_factory=list)
    """Called with the turn number before each model request."""
    after_update: list[UpdateCallback] = field(default_factory=list)
    """Called with the turn number after each model response (and its tools) is done."""
    before_tool_update: list[ToolUpdateHook] = field(default_factory=list)
    """Run on each streamed update of a call before it is published (see ``ToolUpdateHook``)."""
    after_tool_update: list[ToolUpdateObserver] = field(default_factory=list)
    pre_commands: list[HookCommand] = field(default_factory=list)
    post_commands: list[HookCommand] = field(default_factory=list)
    post_failure_commands: list[HookCommand] = field(default_factory=list)
    """``PostToolUseFailure``: run instead of ``post_commands`` when the call ended in error."""
    session_id: str = ""
    cwd: str = ""
    env: dict[str, str] | None = None
    confine: Confine | None = None
    """Puts each hook command inside the sandbox (None: no sandbox on this machine)."""
    transcript_path: str = ""
    """The session's transcript (Claude Code hooks get theirs as ``transcript_path``)."""
    approval_mode: Callable[[], str] | None = None
    """The mode now, sent as Claude Code's ``permission_mode``."""

    async def run_before_tool(self, call: ToolCallInfo) -> PreToolDecision:
        decision = PreToolDecision()
        for callback in self.before_tool:
            try:
                answer = await callback(call)
            except Exception as error:  # a crashing check fails closed, like a failed command
                return PreToolDecision(deny_reason=f"a before-tool hook failed: {_describe(error)}")
            if answer is None:
                continue
            if answer.deny_reason:
                return answer
            call = _merge(decision, answer, call)
        for hook in self.pre_commands:
            if not _matches(hook, call.tool_name):
                continue
            answer = await self._run_pre_command(hook, call)
            if answer.deny_reason:
                return answer
            call = _merge(decision, answer, call)
        return decision

    async def run_after_tool(self, call: ToolCallInfo, result: ToolResult) -> ToolResult:
        for callback in self.after_tool:
            try:
                changed = await callback(call, result)
            except Exception as error:  # the call already ran: keep its result, say so
                changed = _with_feedback(result, f"an after-tool hook failed: {_describe(error)}")
            if changed is not None:
                result = changed
        failed = result.is_error
        event: HookEventName = "PostToolUseFailure" if failed else "PostToolUse"
        for hook in self.post_failure_commands if failed else self.post_commands:
            if _matches(hook, call.tool_name):
                result = await self._run_post_command(hook, call, result, event)
        return result

    def filter_update(self, call: ToolCallInfo, event: Event) -> Event | None:
        """``event`` as the before-update hooks leave it, or None when one dropped it.

        A crashing hook drops the update: it may be the one that hides a secret.
        """
        for hook in self.before_tool_update:
            try:
                changed = hook(call, event)
            except Exception:
                return None
            if changed is None:
                return None
            event = changed
        return event

    def observe_update(self, call: ToolCallInfo, event: Event) -> None:
        for observer in self.after_tool_update:
            try:
                observer(call, event)
            except Exception:  # an observer's bug must not break the call's stream
                continue

    @property
    def watches_updates(self) -> bool:
        return bool(self.before_tool_update or self.after_tool_update)

    def _env(
        self, event: HookEventName, call: ToolCallInfo, result: ToolResult | None
    ) -> dict[str, str]:
        base = self.env if self.env is not None else reduced_environment(DEFAULT_ENV_ALLOWLIST, [])
        project = {"CLAUDE_PROJECT_DIR": self.cwd} if self.cwd else {}
        return {**base, **project, **hook_variables(event, call, result)}

    def _payload(self, event: str, call: ToolCallInfo, **extra: Any) -> bytes:
        # Arguments nested too deeply for Python's parser (or its writer) reach the hook as
        # the raw text the model sent, as unparseable ones do.
        tool_input: Any = loads_or(call.arguments or "{}", call.arguments)
        if dumps_or(tool_input, "") == "":
            tool_input = call.arguments
        mode = self.approval_mode() if self.approval_mode is not None else "ask"
        # Claude Code's names and shapes first (``Edit`` with an absolute ``file_path``), so
        # its hook scripts run unchanged; ours beside them.
        return json.dumps(
            {
                "hook_event_name": event,
                "session_id": self.session_id,
                "cwd": self.cwd,
                "tool_name": claude_name(call.tool_name),
                "tool_use_id": call.tool_call_id,
                "tool_input": as_claude(call.tool_name, tool_input, self.cwd),
                "agent_tui_tool_name": call.tool_name,
                "agent_tui_tool_input": tool_input,
                "transcript_path": self.transcript_path,
                "permission_mode": PERMISSION_MODES.get(mode, "default"),
                **extra,
            }
        ).encode()

    async def _run_pre_command(self, hook: HookCommand, call: ToolCallInfo) -> PreToolDecision:
        outcome = await run_hook_command(
            hook,
            self._payload("PreToolUse", call),
            cwd=self.cwd,
            env=self._env("PreToolUse", call, None),
            confine=self.confine,
        )
        if outcome.error:
            return PreToolDecision(deny_reason=f"PreToolUse hook failed: {outcome.error}")
        if outcome.exit_code == 2:
            reason = outcome.stderr.strip() or "denied by a PreToolUse hook"
            return PreToolDecision(deny_reason=reason)
        output = outcome.json_output()
        specific = output.get("hookSpecificOutput") or {}
        if output.get("decision") == "block" or specific.get("permissionDecision") == "deny":
            reason = (
                specific.get("permissionDecisionReason")
                or output.get("reason")
                or "denied by a PreToolUse hook"
            )
            return PreToolDecision(deny_reason=str(reason))
        decision = PreToolDecision()
        if specific.get("permissionDecision") in ("allow", "ask"):
            decision.permission = specific["permissionDecision"]
            decision.permission_reason = excerpt(
                str(specific.get("permissionDecisionReason") or ""), 500
            )
        updated = specific.get("updatedInput", output.get("tool_input"))
        if isinstance(updated, dict):
            decision.arguments = json.dumps(from_claude(call.tool_name, updated))
        return decision

    async def _run_post_command(
        self, hook: HookCommand, call: ToolCallInfo, result: ToolResult, event: HookEventName
    ) -> ToolResult:
        extra: dict[str, Any] = {
            "tool_response": {"content": result.text, "is_error": result.is_error}
        }
        if event == "PostToolUseFailure":
            extra["error"] = result.text  # claude-code and claw-code name the failure's text
            extra["tool_error"] = result.text
        payload = self._payload(event, call, **extra)
        outcome = await run_hook_command(
            hook, payload, cwd=self.cwd, env=self._env(event, call, result), confine=self.confine
        )
        feedback = ""
        if outcome.error:
            feedback = f"{event} hook failed: {outcome.error}"
        elif outcome.exit_code == 2:
            feedback = outcome.stderr.strip()
        else:
            output = outcome.json_output()
            if output.get("decision") == "block":
                feedback = str(output.get("reason", ""))
        if not feedback:
            return result
        return _with_feedback(result, feedback, event)


def _matches(hook: HookCommand, tool_name: str) -> bool:
    """A matcher names our tool (``edit_file``) or Claude Code's (``Edit|Write``)."""
    return hook.matches(tool_name) or hook.matches(claude_name(tool_name))


def _merge(decision: PreToolDecision, answer: PreToolDecision, call: ToolCallInfo) -> ToolCallInfo:
    """Fold one hook's answer into the running decision; the next hook sees the new input.
    ``ask`` beats ``allow``: of two hooks, the stricter is kept."""
    if answer.arguments is not None:
        call = ToolCallInfo(call.tool_call_id, call.tool_name, answer.arguments)
        decision.arguments = answer.arguments
    if answer.permission == "ask" or (answer.permission == "allow" and decision.permission is None):
        decision.permission = answer.permission
        decision.permission_reason = answer.permission_reason
    return call


def hook_variables(
    event: HookEventName, call: ToolCallInfo, result: ToolResult | None
) -> dict[str, str]:
    """claw-code's ``HOOK_*`` variables for one hook run. Values are bounded and hold no NUL
    (which no environment can carry); the output variable exists only after the call."""
    variables = {
        "HOOK_EVENT": event,
        "HOOK_TOOL_NAME": _env_value(call.tool_name),
        "HOOK_TOOL_INPUT": _env_value(call.arguments or "{}"),
        "HOOK_TOOL_IS_ERROR": "1" if result is not None and result.is_error else "0",
    }
    if result is not None:
        variables["HOOK_TOOL_OUTPUT"] = _env_value(result.text)
    return variables


def _env_value(text: str) -> str:
    return excerpt(clean(text).replace("\x00", "\ufffd"), MAX_HOOK_VARIABLE_CHARS)


def _with_feedback(result: ToolResult, feedback: str, event: str = "PostToolUse") -> ToolResult:
    text = f"{result.text}\n[{event} hook] {feedback}"
    return result.noted(text, f"[{event} hook] {feedback}")


LIFECYCLE_EVENTS = (ToolCallStarted, ToolCallCompleted)
"""A call's start and end: the loop's to publish, never an update hook's to change."""


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


@dataclass
class HookOutcome:
    exit_code: int | None
    stdout: str
    stderr: str
    error: str | None = None

    def json_output(self) -> dict[str, Any]:
        text = self.stdout.strip()
        if not text.startswith("{"):
            return {}
        data = loads_or(text, {})
        return data if isinstance(data, dict) else {}


async def run_hook_command(
    hook: HookCommand,
    payload: bytes,
    *,
    cwd: str,
    env: dict[str, str] | None,
    confine: Confine | None = None,
) -> HookOutcome:
    """Run one hook command with the JSON payload on stdin, killed after its timeout.

    ``confine`` puts it in the sandbox: a hook is the person's own command, but it runs on
    tool input the model wrote, so it gets the workspace's walls, not the whole machine.
    """
    argv = ["/bin/sh", "-c", hook.command]
    try:
        if confine is not None:
            argv = await confine(argv, cwd or None)
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd or None,
            # Never this process's own environment: a hook sees what a command would.
            env=env if env is not None else reduced_environment(DEFAULT_ENV_ALLOWLIST, []),
            start_new_session=True,
        )
    except (OSError, BackendError) as error:
        return HookOutcome(None, "", "", f"could not start {hook.command!r}: {error}")
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(payload), hook.timeout)
    except TimeoutError:
        try:
            os.killpg(process.pid, 9)
        except ProcessLookupError:
            pass
        await process.wait()
        return HookOutcome(None, "", "", f"{hook.command!r} timed out after {hook.timeout:g} s")
    return HookOutcome(
        process.returncode,
        stdout.decode("utf-8", "replace"),
        stderr.decode("utf-8", "replace"),
    )

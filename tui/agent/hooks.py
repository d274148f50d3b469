"""Hooks around tool calls and model requests.

Two kinds, one contract: in-process callbacks (for embedding agent-tui) and shell commands
from ``[hooks]`` in config, fed JSON on stdin the way Claude Code's hooks are, so existing hook
scripts work. A pre-tool hook may deny a call (the model reads the reason) or rewrite its input;
a post-tool hook may add feedback to the result.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tui.security.environment import reduced_environment
from tui.security.settings import DEFAULT_ENV_ALLOWLIST
from tui.tools.result import ToolResult


class HookCommand(BaseModel):
    """A shell command run around tool calls whose tool name matches
    (one ``[[hooks.pre_tool_use]]`` / ``[[hooks.post_tool_use]]`` entry)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    matcher: str = "*"
    """``*`` for every tool, else a tool name or a regular expression matched in full."""
    command: str
    """The shell command; it receives the call as JSON on stdin."""
    timeout: float = Field(default=30, gt=0)
    """Seconds before the hook is killed."""

    @field_validator("matcher")
    @classmethod
    def _matcher_compiles(cls, value: str) -> str:
        """Catch a bad regex at start-up rather than on the first tool call."""
        if value != "*":
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    def matches(self, tool_name: str) -> bool:
        return self.matcher == "*" or re.fullmatch(self.matcher, tool_name) is not None


@dataclass
class PreToolDecision:
    """What the pre-tool hooks decided: run (maybe with new arguments) or deny with a reason."""

    deny_reason: str | None = None
    arguments: str | None = None
    """Rewritten raw JSON arguments, when a hook changed them."""


@dataclass
class ToolCallInfo:
    tool_call_id: str
    tool_name: str
    arguments: str


PreToolCallback = Callable[[ToolCallInfo], Awaitable[PreToolDecision | None]]
PostToolCallback = Callable[[ToolCallInfo, ToolResult], Awaitable[ToolResult | None]]
UpdateCallback = Callable[[int], Awaitable[None]]


@dataclass
class Hooks:
    """Callbacks and commands, run in order; the first denial wins."""

    before_tool: list[PreToolCallback] = field(default_factory=list)
    after_tool: list[PostToolCallback] = field(default_factory=list)
    before_update: list[UpdateCallback] = field(default_factory=list)
    """Called with the turn number before each model request."""
    after_update: list[UpdateCallback] = field(default_factory=list)
    """Called with the turn number after each model response (and its tools) is done."""
    pre_commands: list[HookCommand] = field(default_factory=list)
    post_commands: list[HookCommand] = field(default_factory=list)
    session_id: str = ""
    cwd: str = ""
    env: dict[str, str] | None = None

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
            if answer.arguments is not None:
                call = ToolCallInfo(call.tool_call_id, call.tool_name, answer.arguments)
                decision.arguments = answer.arguments
        for hook in self.pre_commands:
            if not hook.matches(call.tool_name):
                continue
            answer = await self._run_pre_command(hook, call)
            if answer.deny_reason:
                return answer
            if answer.arguments is not None:
                call = ToolCallInfo(call.tool_call_id, call.tool_name, answer.arguments)
                decision.arguments = answer.arguments
        return decision

    async def run_after_tool(self, call: ToolCallInfo, result: ToolResult) -> ToolResult:
        for callback in self.after_tool:
            try:
                changed = await callback(call, result)
            except Exception as error:  # the call already ran: keep its result, say so
                changed = _with_feedback(result, f"an after-tool hook failed: {_describe(error)}")
            if changed is not None:
                result = changed
        for hook in self.post_commands:
            if hook.matches(call.tool_name):
                result = await self._run_post_command(hook, call, result)
        return result

    def _payload(self, event: str, call: ToolCallInfo, **extra: Any) -> bytes:
        try:
            tool_input: Any = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            tool_input = call.arguments
        return json.dumps(
            {
                "hook_event_name": event,
                "session_id": self.session_id,
                "cwd": self.cwd,
                "tool_name": call.tool_name,
                "tool_use_id": call.tool_call_id,
                "tool_input": tool_input,
                **extra,
            }
        ).encode()

    async def _run_pre_command(self, hook: HookCommand, call: ToolCallInfo) -> PreToolDecision:
        outcome = await run_hook_command(
            hook, self._payload("PreToolUse", call), cwd=self.cwd, env=self.env
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
        updated = specific.get("updatedInput", output.get("tool_input"))
        if isinstance(updated, dict):
            return PreToolDecision(arguments=json.dumps(updated))
        return PreToolDecision()

    async def _run_post_command(
        self, hook: HookCommand, call: ToolCallInfo, result: ToolResult
    ) -> ToolResult:
        payload = self._payload(
            "PostToolUse",
            call,
            tool_response={"content": result.text, "is_error": result.is_error},
        )
        outcome = await run_hook_command(hook, payload, cwd=self.cwd, env=self.env)
        feedback = ""
        if outcome.error:
            feedback = f"PostToolUse hook failed: {outcome.error}"
        elif outcome.exit_code == 2:
            feedback = outcome.stderr.strip()
        else:
            output = outcome.json_output()
            if output.get("decision") == "block":
                feedback = str(output.get("reason", ""))
        if not feedback:
            return result
        return _with_feedback(result, feedback)


def _with_feedback(result: ToolResult, feedback: str) -> ToolResult:
    text = f"{result.text}\n[PostToolUse hook] {feedback}"
    return ToolResult(text, result.details, result.is_error, result.child_loop_id)


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
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}


async def run_hook_command(
    hook: HookCommand, payload: bytes, *, cwd: str, env: dict[str, str] | None
) -> HookOutcome:
    """Run one hook command with the JSON payload on stdin, killed after its timeout."""
    try:
        process = await asyncio.create_subprocess_shell(
            hook.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd or None,
            # Never this process's own environment: a hook sees what a command would.
            env=env if env is not None else reduced_environment(DEFAULT_ENV_ALLOWLIST, []),
            start_new_session=True,
        )
    except OSError as error:
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

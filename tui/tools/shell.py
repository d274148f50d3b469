"""``run_shell``: one shell command on the session's execution backend."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

from pydantic import Field

from tui.exec.backend import BackendError, ExecResult
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.context import ToolContext
from tui.tools.errors import Cancelled, ExecutionFailed
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule, truncate

STREAM_RULE = TruncationRule.head(4000, keep_tail=1000)
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 4 * 3600.0
SPILL_IN_THREAD_CHARS = 64 * 1024
"""Above this, saving the full output to a file moves off the event loop."""


class RunShellParams(ToolParams):
    command: str = Field(description="The shell command line to run (bash syntax).")
    why: str | None = Field(
        default=None, description="One sentence: why this command is needed now."
    )
    risk: Literal["low", "medium", "high"] | None = Field(
        default=None,
        description="Your own risk estimate. Shown to the user; it never lowers the computed risk.",
    )
    mutation: bool | None = Field(
        default=None, description="True if the command changes files, state or services."
    )
    privesc: bool | None = Field(
        default=None, description="True if it needs elevated privileges (sudo, root)."
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}).",
    )
    cwd: str | None = Field(
        default=None, description="Working directory; relative paths start at the workspace."
    )


class RunShellTool(Tool[RunShellParams]):
    name = "run_shell"
    label = "Shell"
    Params = RunShellParams
    permission = PermissionMode.READ_ONLY
    """The floor: the policy raises it per call from the command's computed risk."""
    truncation = STREAM_RULE
    aliases: ClassVar[dict[str, str]] = {
        "cmd": "command",
        "script": "command",
        "shell_command": "command",
    }
    streams_output = True
    honours_cancel = True
    description = """Run a shell command and return its exit code, stdout and stderr.

When to use: building, testing, running programs, inspecting the system, git, package
managers — anything that needs a real shell.
When NOT to use: reading, writing or editing a file (use read_file, write_file, edit_file);
finding files or text (use glob_search, grep_search); long-lived interactive programs.
Disambiguation: output above 4000 characters per stream is cut to its head and tail, and the
whole output is saved to a file whose path the result names (page it with read_file). Each
call runs in a fresh shell: `cd` does not persist, so pass cwd instead. Commands that change
things may need the user's approval; say why in `why`.
Examples: {"command": "pytest -q tests/test_api.py", "why": "check the fix"};
{"command": "git log --oneline -5"}; {"command": "make build", "cwd": "services/api",
"timeout": 600}"""

    def access(self, params: RunShellParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.READ_ONLY,
            command=params.command,
            read_paths=[params.cwd] if params.cwd else [],
            claimed_risk=params.risk,
            why=params.why,
            acting=True,
        )

    async def execute(self, params: RunShellParams, ctx: ToolContext) -> ToolResult:
        cwd = str(ctx.resolve_path(params.cwd)) if params.cwd else str(ctx.workspace)
        timeout = params.timeout or DEFAULT_TIMEOUT
        try:
            result = await ctx.backend.run(
                params.command,
                cwd=cwd,
                env=ctx.policy.command_env(),
                timeout=timeout,
                on_chunk=ctx.emit,
                cancel=ctx.cancel,
            )
        except BackendError as error:
            raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
        if len(result.stdout) + len(result.stderr) > SPILL_IN_THREAD_CHARS:
            return await asyncio.to_thread(format_result, result, ctx.tool_call_id, timeout)
        return format_result(result, ctx.tool_call_id, timeout)


def format_result(result: ExecResult, call_id: str, timeout: float) -> ToolResult:
    """The model's view: exit code, then each stream bounded with a marker saying what was cut."""
    details: dict[str, Any] = {
        "exit_code": result.exit_code,
        "duration_ms": round(result.duration_ms, 1),
        "truncated_chars": 0,
    }
    parts: list[str] = []
    streams = (
        [("stdout", result.stdout)]
        if result.merged_output
        else [("stdout", result.stdout), ("stderr", result.stderr)]
    )
    for stream, text in streams:
        cut = truncate(text, STREAM_RULE, spill_name=f"{call_id}-{stream}")
        details["truncated_chars"] += cut.cut_chars
        if cut.full_output_path:
            details[f"full_{stream}_path"] = cut.full_output_path
            details.setdefault("full_output_path", cut.full_output_path)
        if text:
            label = "output (stdout and stderr merged)" if result.merged_output else stream
            parts.append(f"{label}:\n{cut.text.rstrip(chr(10))}")
    parts.extend(f"note: {notice}" for notice in result.notices)
    body = "\n".join(parts) if parts else "(no output)"
    if result.cancelled:
        raise Cancelled(f"the command was cancelled and its process group killed.\n{body}")
    if result.timed_out:
        raise ExecutionFailed(
            f"the command timed out after {timeout:g} s and its process group was killed. "
            f"Run it with a larger timeout, or in the background.\n{body}"
        )
    return ToolResult(f"exit code: {result.exit_code}\n{body}", details)

"""phi-core's per-tool timeout: a limit per tool name, with a default, that cancels the call.

``[agent] tool_timeout`` bounds every call (unset: no limit, as in phi-core) and
``[agent] tool_timeouts`` names tools with their own (``{ fetch_url = 30, run_shell = 0 }``,
0 meaning none). The clock starts when the tool starts running, after any approval. When it
runs out, the call's own cancel event is set, so a tool that honours cancellation stops the
way Esc stops it (a command's process group killed), and the model reads a Timeout error that
names the limit and the setting; the loop goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tui.errors import Cancelled, Timeout
from tui.safe_text import excerpt
from tui.tools.context import ToolContext
from tui.tools.duration_words import format_duration
from tui.tools.result import ToolResult


@dataclass(frozen=True)
class ToolTimeouts:
    """Seconds each tool may run; None or 0: no limit."""

    default: float | None = None
    per_tool: dict[str, float] = field(default_factory=dict)

    def for_tool(self, name: str) -> float | None:
        limit = self.per_tool.get(name, self.default)
        return limit if limit else None

    def setting(self, name: str) -> str:
        """Where the limit for ``name`` comes from, for the message."""
        if name in self.per_tool:
            return f"[agent] tool_timeouts.{name}"
        return "[agent] tool_timeout"


async def run_limited(
    name: str,
    limit: float,
    setting: str,
    ctx: ToolContext,
    run: Callable[[ToolContext], Awaitable[ToolResult]],
) -> ToolResult:
    """``run(ctx)`` with a cancel event of its own, set by the turn's or when ``limit`` passes.

    Raises:
        Timeout: the limit passed (whatever the tool did on being cancelled).
    """
    parent = ctx.cancel
    own = asyncio.Event()
    timed_out = False

    async def watch() -> None:
        nonlocal timed_out
        try:
            await asyncio.wait_for(parent.wait(), limit)
        except TimeoutError:
            timed_out = True
        own.set()

    watcher = asyncio.ensure_future(watch())
    try:
        result = await run(dataclasses.replace(ctx, cancel=own))
    except Cancelled as error:
        if not timed_out:
            raise
        result = ToolResult.error("Cancelled", error.msg)
    finally:
        watcher.cancel()
    if not timed_out:
        return result
    said = result.text.split("\n", 1)[1] if result.is_error and "\n" in result.text else ""
    raise Timeout(
        f"{name} exceeded its timeout of {format_duration(limit)} ({setting}) and was "
        "cancelled; whatever it had done so far stays done. Split the work, or ask the user "
        "to raise the limit." + (f"\n{excerpt(said, 2000)}" if said else "")
    )

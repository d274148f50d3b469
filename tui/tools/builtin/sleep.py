"""``sleep``: wait a while (for a build, a deploy, a rate limit), stopping early on cancel."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import Field

from tui.errors import Cancelled
from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult


class SleepParams(ToolParams):
    seconds: float = Field(
        gt=0, le=3600, description="How long to wait, in seconds (at most 3600)."
    )


class SleepTool(Tool[SleepParams]):
    name = "sleep"
    label = "Sleep"
    Params = SleepParams
    honours_cancel = True
    description = """Wait for a number of seconds, doing nothing.

When to use: to give something time to happen before checking again (a server starting, a
build in a tmux pane, a deploy, a rate limit to reset).
When NOT to use: to wait for a command you run yourself (run_shell already waits for it); as
a substitute for checking whether the thing is done.
Disambiguation: stops at once when the user cancels; at most one hour per call.
Examples: {"seconds": 5}; {"seconds": 0.5}"""

    async def execute(self, params: SleepParams, ctx: ToolContext) -> ToolResult:
        start = time.monotonic()
        try:
            await asyncio.wait_for(ctx.cancel.wait(), timeout=params.seconds)
        except TimeoutError:
            elapsed = time.monotonic() - start
            return ToolResult(f"Slept {elapsed:.2f} s.", {"seconds": elapsed})
        elapsed = time.monotonic() - start
        raise Cancelled(f"cancelled after {elapsed:.2f} s of {params.seconds:g} s")


def sleep_tools() -> list[Tool[Any]]:
    return [SleepTool()]

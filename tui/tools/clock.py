"""``time``: the current date and time, since models have no clock."""

from __future__ import annotations

import datetime
import zoneinfo

from pydantic import Field

from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext
from tui.tools.errors import InvalidArguments
from tui.tools.result import ToolResult


class TimeParams(ToolParams):
    timezone: str | None = Field(
        default=None, description="IANA zone such as Europe/Paris; default: the machine's zone."
    )


class TimeTool(Tool[TimeParams]):
    name = "time"
    label = "Time"
    Params = TimeParams
    description = """Return the current date, time, weekday and Unix time.

When to use: anything that depends on today's date or the time now (deadlines, logs, "how
long ago", scheduling).
When NOT to use: to time a command (run_shell output has a duration); for file timestamps
(use run_shell with `stat` or list_files).
Disambiguation: the machine's clock where agent-tui runs, not the remote host's.
Examples: {}; {"timezone": "America/New_York"}"""

    async def execute(self, params: TimeParams, ctx: ToolContext) -> ToolResult:
        if params.timezone:
            try:
                zone: datetime.tzinfo = zoneinfo.ZoneInfo(params.timezone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise InvalidArguments(
                    f"unknown time zone {params.timezone!r}; use an IANA name like Europe/Paris"
                ) from None
            now = datetime.datetime.now(zone)
        else:
            now = datetime.datetime.now().astimezone()
        utc = now.astimezone(datetime.UTC)
        text = (
            f"{now.isoformat(timespec='seconds')} ({now.strftime('%A')}, {now.tzname()})\n"
            f"UTC: {utc.isoformat(timespec='seconds')}\nunix: {int(now.timestamp())}"
        )
        return ToolResult(text, {"unix": now.timestamp()})

"""``time``: the current date and time, since models have no clock."""

from __future__ import annotations

import datetime
import email.utils
import zoneinfo
from typing import Any

from pydantic import Field

from tui.errors import InvalidArguments
from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult


class TimeParams(ToolParams):
    timezone: str | None = Field(
        default=None, description="IANA zone such as Europe/Paris; default: the machine's zone."
    )


class TimeTool(Tool[TimeParams]):
    name = "time"
    label = "Time"
    Params = TimeParams
    description = """Return the time now: local, UTC, RFC 2822 (UTC), Unix seconds and millis.

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
        fields = clock_fields(now)
        text = (
            f"{now.isoformat(timespec='seconds')} ({now.strftime('%A')}, {now.tzname()})\n"
            f"UTC: {utc.isoformat(timespec='seconds')}\n"
            f"RFC 2822 (UTC): {fields['rfc_2822_utc']}\n"
            f"unix: {fields['unix_seconds']} (millis: {fields['unix_millis']})"
        )
        return ToolResult(text, {"unix": now.timestamp(), **fields})


def clock_fields(now: datetime.datetime) -> dict[str, Any]:
    """The machine-readable fields Buddy's ``time`` returns, so its users find them here."""
    utc = now.astimezone(datetime.UTC)
    return {
        "unix_seconds": int(utc.timestamp()),
        "unix_millis": int(utc.timestamp() * 1000),
        "iso_8601_utc": utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "iso_8601_millis_utc": utc.strftime("%Y-%m-%dT%H:%M:%S.")
        + f"{utc.microsecond // 1000:03d}Z",
        "rfc_2822_utc": email.utils.format_datetime(utc),
        "date_utc": utc.strftime("%Y-%m-%d"),
        "time_utc": utc.strftime("%H:%M:%S"),
    }

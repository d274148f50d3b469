"""A running tool's progress reports, coalesced into bus events.

A tool (an MCP server, say) may report progress thousands of times a second; the UI and the
stream-json reader need a few per second. Each call gets one ``ProgressCoalescer``: the first
report goes out at once, later ones at most every ``interval`` seconds, and the latest held
report is never lost — a timer sends it, and ``close`` flushes it before the call's end event.
Reports come from the tool's own (untrusted) side, so values are checked and text bounded.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from tui.events import ToolProgress
from tui.safe_text import clean, excerpt

MIN_INTERVAL = 0.1
"""Seconds between two progress events of one call: at most 10 a second."""

MAX_MESSAGE_CHARS = 200
"""A progress message is one short line in the tool block."""


def _fraction(value: float | None) -> float | None:
    """0..1, or None for anything that is not a finite number (NaN, inf, a string)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


def _message(text: object) -> str:
    if not isinstance(text, str):
        return ""
    # One line of plain text: no newlines, and no escape or control characters that could
    # move the cursor or recolour the terminal once shown.
    shown = "".join(ch if ch.isprintable() else " " for ch in clean(text[: MAX_MESSAGE_CHARS * 4]))
    return excerpt(" ".join(shown.split()), MAX_MESSAGE_CHARS)


class ProgressCoalescer:
    """Per-call sink for ``ToolContext.on_progress`` that publishes bounded-rate events."""

    def __init__(
        self,
        publish: Callable[[ToolProgress], None],
        *,
        tool_call_id: str,
        tool_name: str,
        loop_id: str = "main",
        interval: float = MIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._publish = publish
        self._call = (tool_call_id, tool_name, loop_id)
        self.interval = interval
        self._clock = clock
        self._last: float | None = None
        self._pending: ToolProgress | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    def report(self, fraction: float | None, message: str = "") -> None:
        """What ``ToolContext.on_progress`` calls; never raises into the tool."""
        if self._closed:
            return  # a late report after the call ended would reopen a finished block
        tool_call_id, tool_name, loop_id = self._call
        event = ToolProgress(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            fraction=_fraction(fraction),
            message=_message(message),
            loop_id=loop_id,
        )
        if event.fraction is None and not event.message:
            return
        now = self._clock()
        if self._last is None or now - self._last >= self.interval:
            self._send(event, now)
            return
        self._pending = event
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a synchronous caller): close() flushes it
                return
            self._timer = loop.call_later(self.interval - (now - self._last), self._flush)

    def close(self) -> None:
        """The call ended: send what is held (the last word) and accept nothing more."""
        if self._closed:
            return
        self._flush()
        self._closed = True

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending is not None:
            event, self._pending = self._pending, None
            self._send(event, self._clock())

    def _send(self, event: ToolProgress, now: float) -> None:
        self._last = now
        self._pending = None
        self._publish(event)

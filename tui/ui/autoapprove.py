"""Time-boxed auto-approve (``/approve 10m``): a window during which requests answer themselves.

A person who steps away for ten minutes should not come back to an agent stalled on its first
prompt, nor to one that was given the keys for ever. The window ends on its own; each request
answered inside it is announced, and the status bar shows the time left.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|m|min|mins|h|hr|hrs)?\s*$", re.I)
_UNITS = {"s": 1, "sec": 1, "secs": 1, "m": 60, "min": 60, "mins": 60, "h": 3600}
_UNITS.update({"hr": 3600, "hrs": 3600})
MAX_WINDOW = 8 * 3600.0
"""A window never lasts longer than a working day."""


class DurationError(ValueError):
    """The text is not a duration such as ``90s``, ``10m`` or ``1h``."""


def parse_duration(text: str) -> float:
    """``10m`` → 600.0; a bare number means minutes.

    Raises:
        DurationError: not a duration, zero, or longer than ``MAX_WINDOW``.
    """
    match = _DURATION.match(text)
    if not match:
        raise DurationError(f"{text.strip()!r} is not a duration: use 90s, 10m or 1h")
    value = float(match.group(1))
    unit = (match.group(2) or "m").lower()
    seconds = value * _UNITS[unit]
    if seconds <= 0:
        raise DurationError("the duration must be more than zero")
    if seconds > MAX_WINDOW:
        raise DurationError(f"at most {MAX_WINDOW / 3600:g} h at a time")
    return seconds


def format_remaining(seconds: float) -> str:
    """``9:05`` or ``1:02:03``: what the status bar shows."""
    total = max(0, int(seconds + 0.999))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class AutoApprove:
    """The window, with an injectable monotonic clock (tests freeze it)."""

    clock: Callable[[], float] = time.monotonic
    until: float | None = None
    answered: int = field(default=0)
    """Requests answered automatically in the current window."""

    def start(self, seconds: float) -> None:
        self.until = self.clock() + seconds
        self.answered = 0

    def stop(self) -> None:
        self.until = None

    def remaining(self) -> float:
        """Seconds left, 0 when no window is open (an expired window closes itself)."""
        if self.until is None:
            return 0.0
        left = self.until - self.clock()
        if left <= 0:
            self.until = None
            return 0.0
        return left

    @property
    def active(self) -> bool:
        return self.remaining() > 0

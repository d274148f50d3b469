"""A sliding-hour cap on acting tool calls, so a runaway loop cannot act without end."""

from __future__ import annotations

import collections
import time


class RateLimiter:
    def __init__(self, max_per_hour: int, *, window: float = 3600.0) -> None:
        self.max_per_hour = max_per_hour
        self.window = window
        self._stamps: collections.deque[float] = collections.deque()

    def _expire(self, now: float) -> None:
        while self._stamps and now - self._stamps[0] >= self.window:
            self._stamps.popleft()

    def check(self, now: float | None = None) -> float | None:
        """None when a call may go now; otherwise seconds until one may."""
        if self.max_per_hour <= 0:
            return None
        now = time.monotonic() if now is None else now
        self._expire(now)
        if len(self._stamps) < self.max_per_hour:
            return None
        return self.window - (now - self._stamps[0])

    def record(self, now: float | None = None) -> None:
        self._stamps.append(time.monotonic() if now is None else now)

    @property
    def used(self) -> int:
        self._expire(time.monotonic())
        return len(self._stamps)

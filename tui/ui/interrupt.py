"""Ctrl+C as people expect it from a terminal agent (Claude Code and Codex behave this way).

During a turn, Ctrl+C cancels it, like Esc. At idle with a draft in the prompt, it clears the
draft (and arms nothing). At idle with an empty prompt, the first press only arms quitting and
says so; a second press within ``QUIT_WINDOW`` seconds quits. A lone press never quits, so a
reflex Ctrl+C aimed at a command that just finished does not end the session.

The decision is kept apart from the app (it is a pure function of "busy?" and the clock), so it
is tested without a screen; the app only maps the answer to an action. While the person holds
the pane, Ctrl+C is not ours at all: the app's ``check_action`` refuses it and the mirror sends
it to the pane.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

QUIT_WINDOW = 2.0
"""Seconds within which a second Ctrl+C at idle quits."""

QUIT_HINT = "Press Ctrl+C again to quit"

Press = Literal["cancel", "clear", "arm", "quit"]


@dataclass
class CtrlC:
    """Counts Ctrl+C presses at idle; any press during a turn cancels and disarms."""

    clock: Callable[[], float] = time.monotonic
    window: float = QUIT_WINDOW
    _armed_at: float | None = field(default=None, init=False)

    def press(self, *, busy: bool, draft: bool = False) -> Press:
        if busy:
            self._armed_at = None
            return "cancel"
        if draft:
            self._armed_at = None
            return "clear"
        now = self.clock()
        if self._armed_at is not None and now - self._armed_at <= self.window:
            self._armed_at = None
            return "quit"
        self._armed_at = now
        return "arm"


__all__ = ["QUIT_HINT", "QUIT_WINDOW", "CtrlC", "Press"]

"""When the approval modal may take an answer: never from keys meant for something else.

The modal answers single letters (``y`` allows). A person typing "okay sounds good yes" into
the prompt when a request arrives would otherwise approve a command they never saw. So the
modal opens closed: it takes no answer until ``GRACE`` seconds after it appeared and
``GRACE`` seconds after the last key typed — into the prompt just before it appeared, or into
the modal itself while it was closed. Typing straight through the arrival keeps it closed
until the typing stops; a person who reads and then answers never notices the wait.

Pure arithmetic on a monotonic clock, so tests and snapshots can drive it with their own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tui.ui.typed import typed_at

__all__ = ["GRACE", "AnswerGate", "is_typing", "typed_at"]

GRACE = 0.5
"""Seconds of quiet (since the modal appeared and since the last key) before it answers."""

TYPING_KEYS = frozenset({"enter", "space", "backspace", "delete", "tab", "escape"})
"""Keys that are typing, besides printable characters: each one restarts the wait."""


def is_typing(key: str, character: str | None) -> bool:
    """Whether a key is part of typing text (and so may have been meant for the prompt),
    rather than reading: arrows and page keys scroll the modal and never restart the wait."""
    return bool(character and character.isprintable()) or key in TYPING_KEYS


@dataclass
class AnswerGate:
    """Open once ``grace`` seconds passed since ``opened`` and since the last typed key.

    Args:
        opened: When the question was first on screen; ``None`` until then, and closed: on
            a busy machine the first frame can come later than ``grace`` after the modal was
            made, and a key typed before it must not answer what nobody saw yet.
        last_typed: When a key was last typed before that (the prompt's), if ever.
        grace: The quiet period.
    """

    opened: float | None = None
    last_typed: float | None = None
    grace: float = GRACE

    def shown(self, now: float) -> None:
        """The question is on screen from ``now``: the wait counts from here."""
        self.opened = now if self.opened is None else max(self.opened, now)

    def opens_at(self) -> float:
        """The moment answers are taken (later typing moves it); never before it is shown."""
        if self.opened is None:
            return math.inf
        start = self.opened if self.last_typed is None else max(self.opened, self.last_typed)
        return start + self.grace

    def is_open(self, now: float) -> bool:
        """Whether a key typed ``now`` would answer."""
        return now >= self.opens_at()

    def remaining(self, now: float) -> float:
        """Seconds until it opens (``grace`` while not shown yet: at least that long)."""
        if self.opened is None:
            return self.grace
        return max(0.0, self.opens_at() - now)

    def typed(self, when: float) -> bool:
        """A key typed at ``when``: True when it may answer; False when it came while the
        gate was closed (then the wait starts again from it)."""
        if when >= self.opens_at():
            return True
        self.last_typed = max(when, self.last_typed or when)
        return False

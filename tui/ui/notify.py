"""Telling a person in another window that the app needs them: bell and desktop escapes.

Only when the terminal is not focused (Textual's focus reporting: ``AppBlur``/``AppFocus``):
someone looking at the app sees the modal already. Two moments matter: an approval waits (the
agent is stuck until they answer) and a turn that took long enough to walk away from ended.

The desktop notification is an escape the terminal turns into a system notification: OSC 9
(iTerm2, WezTerm, kitty, Windows Terminal, ghostty) or OSC 777 (VTE terminals, urxvt, foot).
Its body names a tool the model chose, so it is attacker text: control characters (which could
end the sequence and start another — an OSC 52 rewriting the clipboard, say) are removed and
``;`` (OSC 777's field separator) is replaced. Headless mode never builds a ``Notifier``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tui.session_api import DesktopKind

TITLE = "agent-tui"
MAX_BODY = 160
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def clean(text: str, *, limit: int = MAX_BODY) -> str:
    """``text`` safe inside an OSC string: no control characters, no ``;``, bounded."""
    flat = _CONTROLS.sub(" ", text).replace(";", ",").strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def desktop_sequences(body: str, kind: DesktopKind, *, title: str = TITLE) -> str:
    body, title = clean(body), clean(title)
    out = ""
    if kind in ("osc9", "both"):
        out += f"\x1b]9;{title}: {body}\a"
    if kind in ("osc777", "both"):
        out += f"\x1b]777;notify;{title};{body}\a"
    return out


@dataclass
class Notifier:
    """Rings and notifies through ``write`` while ``focused()`` says the terminal is away."""

    write: Callable[[str], None]
    focused: Callable[[], bool]
    enabled: bool = True
    bell: bool = True
    desktop: DesktopKind = "osc9"
    min_turn_seconds: float = 10.0

    def _send(self, body: str) -> bool:
        if not self.enabled or self.focused():
            return False
        out = "\a" if self.bell else ""
        if self.desktop != "off":
            out += desktop_sequences(body, self.desktop)
        if out:
            self.write(out)
        return bool(out)

    def approval_waiting(self, tool_name: str) -> bool:
        return self._send(f"approval waiting: {tool_name}")

    def turn_ended(self, seconds: float, reason: str) -> bool:
        if seconds < self.min_turn_seconds:
            return False
        return self._send(f"turn {reason} after {seconds:.0f} s")


@dataclass
class TurnClock:
    """When the main loop's turn began, to tell a long turn from a quick one."""

    now: Callable[[], float]
    started: float | None = None
    last_answer: str = ""
    """The main loop's latest answer, for the copy-last-answer key."""

    def begin(self) -> None:
        """A main-loop turn started (or a prompt was sent): the clock runs, if it did not."""
        if self.started is None:
            self.started = self.now()

    def answered(self, text: str) -> None:
        """The main loop's assistant said ``text``."""
        if text.strip():
            self.last_answer = text

    def end(self, final_text: str) -> float | None:
        """The main loop's turn ended; returns its length (None if it was not seen begin)."""
        self.answered(final_text)
        started, self.started = self.started, None
        return None if started is None else self.now() - started


__all__ = ["DesktopKind", "Notifier", "TurnClock", "clean", "desktop_sequences"]

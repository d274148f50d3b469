"""The last guard between text from outside and the terminal: no control character is drawn.

Model answers, tool output, file names and notices all reach the screen as Rich text, whose
characters Textual writes to the terminal as they are — an ESC or a C1 ``\\x9b`` in them would
start a real escape sequence (set the clipboard with OSC 52, retitle the window, move the
cursor and paint over what the person reads). Text we build spells such characters out
(``tui.safe_text``); this filter, applied to every line the app draws, removes any that got
through anyway. They have no width, so the layout does not move.
"""

from __future__ import annotations

import re

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class ControlFilter(LineFilter):
    """Drops C0, C1 and DEL characters from every segment drawn."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if not any(_CONTROL.search(segment.text) for segment in segments):
            return segments
        return [
            Segment(_CONTROL.sub("", text), style, control) if not control else segment
            for segment in segments
            for text, style, control in (segment,)
        ]

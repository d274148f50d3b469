"""Mouse selection for widgets drawn with the line API (tool blocks, the pager).

Textual selects text in widgets that render a ``Text``/``Content``; a line-API widget must
say itself which text lies under a selection and paint it. Two things make that work: each
strip carries ``offset`` meta (``Strip.apply_offsets``) so the screen can turn a mouse
position into a (column, line) of the widget's content, and the widget answers
``get_selection`` from its own lines. These helpers do both halves the same way for each.

The pager's source may be a 1 GiB file: only the selected lines are read, and at most
``MAX_SELECTED_LINES`` of them.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from textual.geometry import Offset
from textual.selection import Selection
from textual.strip import Strip

MAX_SELECTED_LINES = 100_000
"""A selection longer than this is cut here (the copy notice then shows the smaller count)."""


def selected_text(selection: Selection, line: Callable[[int], str], count: int) -> str:
    """The text under ``selection`` from ``count`` lines, reading only the lines it spans."""
    if count <= 0:
        return ""
    first = 0 if selection.start is None else max(0, selection.start.y)
    last = count - 1 if selection.end is None else min(count - 1, selection.end.y)
    last = min(last, first + MAX_SELECTED_LINES - 1)
    if last < first:
        return ""
    text = "\n".join(line(number) for number in range(first, last + 1))
    start = None if selection.start is None else Offset(selection.start.x, 0)
    end = None if selection.end is None else Offset(selection.end.x, selection.end.y - first)
    if end is not None and end.y > last - first:
        end = None  # the cut: up to the end of the last line read
    return Selection(start, end).extract(text)


def highlight(strip: Strip, selection: Selection | None, y: int, style: Style) -> Strip:
    """``strip`` (line ``y`` of the content) with the selected cells in ``style``."""
    if selection is None:
        return strip
    span = selection.get_span(y)
    if span is None:
        return strip
    start, end = span
    length = strip.cell_length
    end = length if end == -1 else min(end, length)
    if start >= end:
        return strip
    before, middle, after = strip.divide([start, end, length])
    return Strip.join([before, middle.apply_style(style), after])


__all__ = ["MAX_SELECTED_LINES", "highlight", "selected_text"]

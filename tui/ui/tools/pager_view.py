"""The pager's text: only the lines on screen are read, marked with search matches, wrapped or not.

The view's virtual height is the line count, so the scroll offset is always a line number, even
when wrapping: a wrapped line takes several rows, and the screen is laid out from its top line
down (as ``less`` does) rather than by measuring a gibibyte of text to size the scrollbar.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from tui.ui.selectable import highlight, selected_text
from tui.ui.tools.pager_index import LineSource
from tui.ui.tools.pager_search import find_all

MATCH = Style(bgcolor="yellow", color="black")
CURRENT = Style(bgcolor="bright_magenta", color="black", bold=True)


class LinesView(ScrollView, can_focus=True):
    """A scrolling view over a ``LineSource`` with a gutter of line numbers."""

    BINDINGS = [
        Binding("g,home", "scroll_home", "Top", show=True),
        Binding("G,end", "scroll_end", "Bottom", show=True),
        Binding("space", "page_down", "Page", show=False),
    ]

    def __init__(self, source: LineSource, on_scroll: Callable[[], None] = lambda: None) -> None:
        super().__init__()
        self.source = source
        self.needle = ""
        self.current: tuple[int, int] | None = None  # (line, rank) of the current match
        self.wrap = False
        self._on_scroll = on_scroll
        self._cache: LRUCache[tuple[int, int, int], list[Strip]] = LRUCache(1024)

    def grown(self) -> None:
        """More lines are indexed (or all are): size the scroll range to them."""
        gutter = len(str(len(self.source))) + 1
        width = 0 if self.wrap else min(self.source.width, 2000) + gutter + 1
        self.virtual_size = Size(width, len(self.source))
        self._cache.clear()
        self.refresh()

    def mark(self, needle: str, current: tuple[int, int] | None) -> None:
        self.needle = needle
        self.current = current
        self._cache.clear()
        self.refresh()

    def toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self.scroll_to(x=0, animate=False)
        self._cache.clear()
        self.grown()
        self.refresh()

    def show_line(self, number: int) -> None:
        """Bring line ``number`` into view, a third of the way down if it has to move."""
        top = self.scroll_offset.y
        height = self.scrollable_content_region.height
        if not (top <= number < top + max(height - 1, 1)) or (self.wrap and number != top):
            target = number if self.wrap else max(number - height // 3, 0)
            self.scroll_to(y=target, animate=False, immediate=True)
        self.refresh()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._on_scroll()

    def top_line(self) -> int:
        return int(self.scroll_offset.y)

    # -- drawing ----------------------------------------------------------------------------

    def _rows(self, number: int, width: int) -> list[Strip]:
        """Line ``number`` as screen rows: one, cropped at the scroll, or several, wrapped."""
        scroll_x = 0 if self.wrap else int(self.scroll_offset.x)
        selection = self.text_selection
        key = (number, scroll_x, width)
        cached = self._cache.get(key) if selection is None else None
        if cached is not None:
            return cached
        base = self.rich_style
        digits = len(str(len(self.source)))
        line = self.source.line(number)
        text = Text.from_ansi(line, no_wrap=True) if "\x1b" in line else Text(line.expandtabs(8))
        self._highlight(text, number)
        gutter = [Segment(f"{number + 1:>{digits}} ", base + Style(dim=True))]
        if self.wrap:
            body_width = max(width - digits - 1, 1)
            pieces = text.wrap(self.app.console, body_width, overflow="fold", no_wrap=False)
            blank = [Segment(" " * (digits + 1), base)]
            rows = []
            column = 0
            for at, piece in enumerate(pieces or [Text("")]):
                # Offsets in source columns: a selection across wrapped rows copies the line.
                body = Strip(list(piece.render(self.app.console))).apply_offsets(column, number)
                column += piece.cell_len
                row = Strip([*(gutter if at == 0 else blank), *body])
                rows.append(row.apply_style(base).crop_extend(0, width, base))
        else:
            body = Strip(list(text.render(self.app.console)))
            body = highlight(body, selection, number, self._selection_style())
            # Offsets in source columns and lines: a selection never takes in the gutter.
            body = body.crop(scroll_x, scroll_x + width).apply_offsets(scroll_x, number)
            rows = [Strip([*gutter, *body]).apply_style(base).crop_extend(0, width, base)]
        if selection is None:
            self._cache[key] = rows
        return rows

    def _selection_style(self) -> Style:
        return self.screen.get_component_rich_style("screen--selection")

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected lines of the source, read one by one (never the whole file)."""
        return selected_text(selection, self.source.line, len(self.source)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def _highlight(self, text: Text, number: int) -> None:
        if not self.needle:
            return
        current = self.current[1] if self.current and self.current[0] == number else -1
        for rank, at in enumerate(find_all(text.plain, self.needle)):
            text.stylize(CURRENT if rank == current else MATCH, at, at + len(self.needle))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        top = self.top_line()
        if not self.wrap:
            number = top + y
            if number >= len(self.source):
                return Strip.blank(width, self.rich_style)
            return self._rows(number, width)[0]
        number, row = top, 0
        while number < len(self.source):
            rows = self._rows(number, width)
            if row + len(rows) > y:
                return rows[y - row]
            row += len(rows)
            number += 1
        return Strip.blank(width, self.rich_style)

    def action_page_down(self) -> None:
        self.scroll_page_down()

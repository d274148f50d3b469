"""The full output of one call, however large, in a pager that never loads it all.

A worker thread indexes line offsets (eight bytes per line); the view reads only the lines on
screen, through a small strip cache. Two million lines of ``seq`` open in well under a second
and cost about 16 MB of offsets, not the text itself.
"""

from __future__ import annotations

import array
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.widgets import Footer, Static

from tui.locations import styles_dir
from tui.ui.selectable import highlight, selected_text
from tui.ui.tools.output import human_bytes

MAX_LINE_BYTES = 16 * 1024


class LineSource:
    """Lines of a file (indexed, read on demand) or of an in-memory string."""

    def __init__(self, text: str = "", path: Path | None = None) -> None:
        self.path = path
        self._lines: list[str] | None = None if path is not None else text.split("\n")
        self._offsets = array.array("q")
        self.size = len(text.encode()) if path is None else 0
        self.width = 0

    def index(self) -> None:
        """Find every line start (in a thread: it reads the whole file once)."""
        if self.path is None:
            assert self._lines is not None
            self.width = max((len(line) for line in self._lines[:5000]), default=0)
            return
        offsets = array.array("q", [0])
        widest = 0
        position = 0
        with self.path.open("rb") as file:
            while block := file.read(1 << 20):
                start = 0
                while (found := block.find(b"\n", start)) != -1:
                    widest = max(widest, found - start) if len(offsets) < 5000 else widest
                    offsets.append(position + found + 1)
                    start = found + 1
                position += len(block)
        if offsets[-1] == position and len(offsets) > 1:
            offsets.pop()  # a trailing newline does not start another line
        self.size = position
        self.width = widest
        self._offsets = offsets

    def __len__(self) -> int:
        if self._lines is not None:
            return len(self._lines)
        return len(self._offsets)

    def line(self, number: int) -> str:
        if self._lines is not None:
            return self._lines[number]
        assert self.path is not None
        start = self._offsets[number]
        end = self._offsets[number + 1] if number + 1 < len(self._offsets) else self.size
        with self.path.open("rb") as file:
            file.seek(start)
            data = file.read(min(end - start, MAX_LINE_BYTES))
        return data.decode("utf-8", "replace").rstrip("\n")


class LinesView(ScrollView, can_focus=True):
    """A scrolling view over a ``LineSource`` with a gutter of line numbers."""

    BINDINGS = [
        Binding("g,home", "scroll_home", "Top", show=True),
        Binding("G,end", "scroll_end", "Bottom", show=True),
        Binding("space", "page_down", "Page", show=False),
    ]

    def __init__(self, source: LineSource) -> None:
        super().__init__()
        self.source = source
        self._cache: LRUCache[tuple[int, int, int], Strip] = LRUCache(1024)

    def loaded(self) -> None:
        gutter = len(str(len(self.source))) + 1
        self.virtual_size = Size(min(self.source.width, 2000) + gutter + 1, len(self.source))
        self._cache.clear()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if number >= len(self.source):
            return Strip.blank(width, base)
        selection = self.text_selection
        key = (number, scroll_x, width)
        cached = self._cache.get(key) if selection is None else None
        if cached is not None:
            return cached
        gutter = len(str(len(self.source)))
        line = self.source.line(number)
        text = Text.from_ansi(line, no_wrap=True) if "\x1b" in line else Text(line.expandtabs(8))
        segments = [Segment(f"{number + 1:>{gutter}} ", base + Style(dim=True))]
        body = Strip(list(text.render(self.app.console)))
        body = highlight(body, selection, number, self._selection_style())
        # Offsets in source columns and lines: a selection never takes in the gutter.
        body = body.crop(scroll_x, scroll_x + width).apply_offsets(scroll_x, number)
        strip = Strip([*segments, *body]).apply_style(base).crop_extend(0, width, base)
        if selection is None:
            self._cache[key] = strip
        return strip

    def _selection_style(self) -> Style:
        return self.screen.get_component_rich_style("screen--selection")

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected lines of the source, read one by one (never the whole file)."""
        source = self.source
        return selected_text(selection, source.line, len(source)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def action_page_down(self) -> None:
        self.scroll_page_down()


class OutputPager(ModalScreen[None]):
    """``q``/``esc`` closes."""

    CSS_PATH = str(styles_dir() / "pager.tcss")
    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, title: str, text: str, path: Path | None, description: str) -> None:
        super().__init__()
        self.title_text = title
        self.source = LineSource(text, path)
        self.description = description

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="pager-title", markup=False)
        yield Static(f"{self.description} · indexing…", id="pager-info", markup=False)
        yield LinesView(self.source)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(LinesView).focus()
        self._index()

    @work(thread=True, exclusive=True, group="pager", exit_on_error=False, description="index")
    def _index(self) -> None:
        try:
            self.source.index()
        except OSError as error:
            self.app.call_from_thread(self._failed, str(error))
            return
        self.app.call_from_thread(self._ready)

    def _ready(self) -> None:
        view = self.query_one(LinesView)
        view.loaded()
        # Start at the end, where a command's verdict usually is (g goes to the top).
        view.call_after_refresh(view.scroll_end, animate=False)
        self.query_one("#pager-info", Static).update(
            f"{self.description} · {len(self.source):,} lines · {human_bytes(self.source.size)}"
        )

    def _failed(self, reason: str) -> None:
        self.query_one("#pager-info", Static).update(f"cannot read the output: {reason}")

"""The full output of one call, however large, in a pager that never loads it all.

A worker thread builds a sparse index of line starts (``pager_index``) and the view reads only
the lines on screen, so a gibibyte opens at once and costs a few megabytes. ``/`` searches by
streaming the file in another worker (cancelled by a new search or by closing), ``n`` / ``N``
step through the matches, ``:`` jumps to a line, ``w`` wraps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from tui.locations import styles_dir
from tui.ui.key_bar import KeyBar
from tui.ui.tools.output import human_bytes
from tui.ui.tools.pager_index import IndexCancelled, LineSource
from tui.ui.tools.pager_search import SearchResult, search
from tui.ui.tools.pager_view import LinesView

__all__ = ["LineSource", "LinesView", "OutputPager"]

PROGRESS_EVERY = 0.1
"""Seconds between progress reports from a worker: often enough to watch, rare enough to be free."""


class PagerPrompt(Input):
    """The ``/`` search and ``:`` jump line; Esc closes it, not the pager."""

    BINDINGS = [Binding("escape", "close", "Cancel", show=False)]
    kind = "/"
    """``/`` to search, ``:`` to jump; also the line's first character, as in ``less``."""

    def action_close(self) -> None:
        self.display = False
        self.screen.query_one(LinesView).focus()


class OutputPager(ModalScreen[None]):
    """``q``/``esc`` closes."""

    CSS_PATH = str(styles_dir() / "pager.tcss")
    BINDINGS = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("slash", "prompt('/')", "Search"),
        Binding("n", "next_match(1)", "Next", show=False),
        Binding("N", "next_match(-1)", "Previous", show=False),
        Binding("colon", "prompt(':')", "Line"),
        Binding("w", "wrap", "Wrap"),
    ]

    def __init__(self, title: str, text: str, path: Path | None, description: str) -> None:
        super().__init__()
        self.title_text = title
        self.source = LineSource(text, path)
        self.description = description
        self.result: SearchResult | None = None
        self.match: int | None = None  # index into ``result`` of the current match
        self.message = ""
        self.moved = False  # the person scrolled, searched or jumped: keep their place
        self.opened = time.monotonic()
        self.first_screen: float | None = None
        self._last_report = 0.0

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="pager-title", markup=False)
        yield Static(f"{self.description} · indexing…", id="pager-info", markup=False)
        yield LinesView(self.source, self._update_info)
        prompt = PagerPrompt(id="pager-prompt", select_on_focus=False)
        prompt.display = False
        yield prompt
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(LinesView).focus()
        self._index()

    def on_unmount(self) -> None:
        self.source.close()

    def on_key(self) -> None:
        self.moved = True  # a key pressed while indexing: do not jump away to the end after

    # -- the index --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="pager-index", exit_on_error=False)
    def _index(self) -> None:
        worker = get_current_worker()
        try:
            self.source.index(lambda: self._report(self._grown), lambda: worker.is_cancelled)
        except IndexCancelled:
            return
        except OSError as error:
            self.app.call_from_thread(self._failed, str(error))
            return
        self.app.call_from_thread(self._ready)

    def _report(self, callback: Callable[[], object]) -> None:
        """Hand progress to the event loop at most every ``PROGRESS_EVERY`` seconds."""
        now = time.monotonic()
        if now - self._last_report >= PROGRESS_EVERY or self.first_screen is None:
            self._last_report = now
            self.app.call_from_thread(callback)

    def _grown(self) -> None:
        if not self.is_attached:
            return
        self.query_one(LinesView).grown()
        if self.first_screen is None and len(self.source):
            self.first_screen = time.monotonic() - self.opened
        self._update_info()

    def _ready(self) -> None:
        view = self.query_one(LinesView)
        view.grown()
        if not self.moved:
            # Start at the end, where a command's verdict usually is (g goes to the top).
            view.call_after_refresh(view.scroll_end, animate=False)
        self._update_info()

    def _failed(self, reason: str) -> None:
        self.query_one("#pager-info", Static).update(f"cannot read the output: {reason}")

    def _update_info(self) -> None:
        if not self.is_attached:
            return
        view = self.query_one(LinesView)
        total = len(self.source)
        top = min(view.top_line() + 1, max(total, 1))
        bottom = min(view.top_line() + view.scrollable_content_region.height, total)
        parts = [self.description]
        if self.source.done:
            parts.append(f"lines {top:,}-{bottom:,} of {total:,} · {human_bytes(self.source.size)}")
        else:
            parts.append(f"lines {top:,}-{bottom:,} of {total:,}… · indexing…")
        if view.wrap:
            parts.append("wrap")
        if self.message:
            parts.append(self.message)
        self.query_one("#pager-info", Static).update(" · ".join(parts))

    # -- search and jump --------------------------------------------------------------------

    def action_prompt(self, kind: str) -> None:
        prompt = self.query_one(PagerPrompt)
        prompt.placeholder = "search (lower case ignores case)" if kind == "/" else "line number"
        prompt.kind = kind
        prompt.value = kind
        prompt.display = True
        prompt.focus()
        prompt.cursor_position = len(kind)

    @on(Input.Submitted, "#pager-prompt")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        prompt = self.query_one(PagerPrompt)
        prompt.action_close()
        value = event.value.removeprefix(prompt.kind)
        if prompt.kind == ":":
            self._jump(value.strip())
        elif value:
            self._start_search(value)

    def _jump(self, text: str) -> None:
        if not text.isdigit():
            self._say(f"not a line number: {text[:40]}")
            return
        total = len(self.source)
        number = min(max(int(text), 1), max(total, 1))
        self.moved = True
        self.query_one(LinesView).show_line(number - 1)
        beyond = int(text) > total
        self._say(f"line {text} is past the end ({total:,} lines)" if beyond else "")

    def _start_search(self, needle: str) -> None:
        self.moved = True
        self.result = SearchResult(needle)
        self.match = None
        self.query_one(LinesView).mark(needle, None)
        self._say(f"searching for {needle!r}…")
        self._search(self.result)

    @work(thread=True, exclusive=True, group="pager-search", exit_on_error=False)
    def _search(self, result: SearchResult) -> None:
        worker = get_current_worker()
        try:
            search(
                self.source,
                result.needle,
                result,
                lambda: self._report(lambda: self._searched(result)),
                lambda: worker.is_cancelled,
            )
        except OSError as error:
            self.app.call_from_thread(self._say, f"cannot search: {error}")
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._searched, result)

    def _searched(self, result: SearchResult) -> None:
        """Progress or the end of a search: go to the first match below the top line."""
        if result is not self.result or not self.is_attached:
            return
        if self.match is None and len(result):
            first = result.first_at_or_after(self.query_one(LinesView).top_line())
            if first is not None or result.done:
                self._go(first if first is not None else 0)
                return
        if self.match is not None:
            self._go(self.match, move=False)
        elif result.done:
            self._say(f"no matches for {result.needle!r}")
        else:
            share = result.scanned * 100 // max(self.source.size or result.scanned, 1)
            self._say(f"searching for {result.needle!r}… {share}%")

    def _go(self, match: int, move: bool = True, note: str = "") -> None:
        result = self.result
        assert result is not None
        self.match = match
        line = result.lines[match]
        view = self.query_one(LinesView)
        view.mark(result.needle, (line, result.ranks[match]))
        if move:
            view.show_line(line)
        total = f"{result.total:,}" if result.done else f"{result.total:,} so far"
        kept = "" if len(result) == result.total else f" (first {len(result):,} kept)"
        self._say(f"match {match + 1:,} of {total}{kept}{note}")

    def action_next_match(self, step: int) -> None:
        result = self.result
        if result is None:
            self._say("no search yet: / to search")
            return
        if not len(result):
            self._say(f"no matches for {result.needle!r}" if result.done else "searching…")
            return
        current = self.match if self.match is not None else -1 if step > 0 else len(result)
        target = current + step
        if 0 <= target < len(result):
            self._go(target)
        elif not result.done and step > 0:
            self._say("no more matches yet: still searching…")
        else:
            wrapped = 0 if step > 0 else len(result) - 1
            where = "below" if step > 0 else "above"
            self._go(wrapped, note=f" · no more matches {where}, wrapped")

    def action_wrap(self) -> None:
        self.query_one(LinesView).toggle_wrap()
        self._update_info()

    def _say(self, message: str) -> None:
        self.message = message
        self._update_info()

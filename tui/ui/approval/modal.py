"""The approval prompt: everything needed to decide, and a small typed vocabulary to answer.

What people could not see in other agents is what this shows first: the whole command,
wrapped and scrolling (never clipped, with an overflow sign), each segment of a compound
command with its computed risk and reasons, the model's own reason and risk label beside the
computed one, and where it runs. "Allow always" grants each segment exactly, or a prefix
pattern the person edits, for this session or saved — never a silent broad rule.

It is a modal over a running app: the chat and tool panels keep streaming behind it.
"""

from __future__ import annotations

import json

from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import Button, Input, RadioButton, RadioSet, Static

from tui.diffs import plain
from tui.events import ApprovalAnswer, ApprovalDecision, ApprovalRequested
from tui.locations import styles_dir
from tui.ui.approval.diff_body import approval_diff_body, shown_arguments
from tui.ui.cwd import printable

RISK_ORDER = {"low": 0, "medium": 1, "unknown": 2, "high": 3}
ANSWER_ACTIONS = frozenset({"allow_once", "allow_always", "deny", "deny_message"})


class CommandBody(VerticalScroll, can_focus=True):
    """The scrolling body; its border subtitle says how much is out of view."""

    def on_mount(self) -> None:
        self.call_after_refresh(self.update_overflow)

    def on_resize(self) -> None:
        self.update_overflow()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.update_overflow()

    def update_overflow(self) -> None:
        below = max(0, self.virtual_size.height - self.scrollable_content_region.height)
        below -= int(self.scroll_y)
        above = int(self.scroll_y)
        bits = []
        if above > 0:
            bits.append(f"↑ {above} lines above")
        if below > 0:
            bits.append(f"↓ {below} more lines — scroll with ↑ ↓ pgup pgdn")
        self.border_subtitle = " · ".join(bits) if bits else None
        self.set_class(bool(bits), "-overflow")


def exact_rules(request: ApprovalRequested) -> list[str]:
    """What "allow always, exact" grants: each segment as its own exact rule."""
    if request.command is None:
        return [request.suggested_pattern or request.tool_name]
    segments = [s.text.strip() for s in request.segments] or [request.command.strip()]
    return [f"{request.tool_name}({text})" for text in segments]


class ApprovalScreen(ModalScreen[ApprovalAnswer | None]):
    """Returns the person's ``ApprovalAnswer`` (None when dismissed because the call ended)."""

    CSS_PATH = str(styles_dir() / "approval.tcss")
    BINDINGS = [
        Binding("y", "allow_once", "Allow once"),
        Binding("a", "allow_always", "Allow always…"),
        Binding("n", "deny", "Deny"),
        Binding("m", "deny_message", "Deny with message…"),
        Binding("escape", "back", "Back / deny", show=False),
        Binding("enter", "confirm", "Confirm", show=False),
        Binding("o", "open_diff", "Whole diff", show=False),
    ]

    form: var[str] = var("", init=False)
    """``""``, ``always`` or ``message``: which sub-form is open."""

    def __init__(self, request: ApprovalRequested, *, waiting: int = 0) -> None:
        super().__init__()
        self.request = request
        self.waiting = waiting

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="approval-box") as box:
            box.border_title = f"Approve {request.tool_name}?"
            box.border_subtitle = f"{self.waiting} more waiting" if self.waiting else None
            yield Static(self._header(), id="approval-header")
            with CommandBody(id="approval-body") as body:
                body.border_title = self._body_title()
                yield Static(self._command_text(), id="approval-command")
                if request.why:
                    yield Static(self._why_text(), id="approval-why")
                if request.segments:
                    yield Static(self._segments_text(), id="approval-segments")
            # Docked at the bottom of the box: whatever the command's length and the
            # terminal's size, the ways to answer stay on screen and the body scrolls.
            with Vertical(id="approval-footer"):
                with Vertical(id="always-form") as form:
                    form.border_title = "Allow always — grant"
                    with RadioSet(id="always-kind"):
                        yield RadioButton(self._exact_label(), value=True, id="kind-exact")
                        yield RadioButton("this pattern (edit below):", id="kind-pattern")
                    yield Input(
                        request.suggested_pattern or "",
                        id="always-pattern",
                        placeholder="run_shell(git status:*)",
                    )
                    with RadioSet(id="always-scope"):
                        yield RadioButton("for this session", value=True, id="scope-session")
                        yield RadioButton("saved for this workspace", id="scope-saved")
                    with Horizontal(classes="form-row"):
                        yield Button("Allow always", id="always-ok", variant="warning")
                        yield Button("Back", id="always-back")
                        yield Static("⏎ confirms · esc back", classes="form-hint")
                with Vertical(id="message-form") as form:
                    form.border_title = "Deny, and tell the model why (it reads this)"
                    yield Input(id="deny-message", placeholder="e.g. use the staging host instead")
                    yield Static("enter sends · esc back", classes="form-hint")
                yield Static(self._keys_text(), id="approval-keys")

    def on_mount(self) -> None:
        self.query_one(CommandBody).focus()
        self.call_after_refresh(self.fit_body)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_body)

    def fit_body(self) -> None:
        """Give the command body the height left by the header and the docked footer.

        A vertical layout does not shrink an ``auto`` child, so without this a long command
        would push the box past the screen and clip its footer (the answer keys).
        """
        if not self.is_attached:
            return
        box = self.query_one("#approval-box")
        short = self.size.height < 30
        self.set_class(short, "-short")
        limit = self.size.height if short else int(self.size.height * 0.94)
        used = box.styles.gutter.height
        for part in (self.query_one("#approval-header"), self.query_one("#approval-footer")):
            margin = part.styles.margin
            used += part.outer_size.height + margin.top + margin.bottom
        body = self.query_one(CommandBody)
        height = max(3, limit - used)
        if body.styles.max_height is None or body.styles.max_height.value != height:
            body.styles.max_height = height

    # -- text ------------------------------------------------------------------------------

    def _color(self, name: str, fallback: str) -> str:
        try:
            return str(self.app.theme_variables.get(name) or fallback)
        except Exception:
            return fallback

    def _risk_style(self, risk: str | None) -> Style:
        if risk == "high":
            return Style.parse(f"bold {self._color('error', 'red')}")
        if risk in ("medium", "unknown"):
            return Style.parse(f"bold {self._color('warning', 'yellow')}")
        return Style.parse(self._color("success", "green"))

    def _header(self) -> Text:
        request = self.request
        text = Text()
        text.append("runs on ", "dim")
        text.append(request.actor, "bold")
        if request.cwd:
            text.append("  in ", "dim")
            where = Style.parse(f"bold reverse {self._color('warning', 'yellow')}")
            text.append(printable(request.cwd), where if request.cwd_elsewhere else "bold")
            if request.cwd_elsewhere:
                text.append(" (not the workspace)", "italic dim")
        if request.risk:
            text.append("    computed risk ", "dim")
            text.append(
                f" {request.risk.upper()} ", self._risk_style(request.risk) + Style(reverse=True)
            )
        if request.claimed_risk:
            text.append("    model says ", "dim")
            text.append(request.claimed_risk, self._risk_style(request.claimed_risk))
            if request.risk and RISK_ORDER.get(request.claimed_risk, 0) < RISK_ORDER.get(
                request.risk, 0
            ):
                text.append("  (the computed risk decides)", "italic dim")
        if request.loop_id != "main":
            text.append(f"    asked by sub-agent {request.loop_id.rsplit('.', 1)[-1]}", "italic")
        if request.sandbox:
            text.append("\nwhere: ", "dim")
            if request.sandbox.startswith("OUTSIDE"):
                loud = Style.parse(f"bold reverse {self._color('error', 'red')}")
                text.append(" runs OUTSIDE the sandbox ", loud)
                text.append(" can write anywhere you can, reach any host", "bold")
            elif request.sandbox.startswith("no sandbox"):
                text.append(
                    request.sandbox, Style.parse(f"bold {self._color('warning', 'yellow')}")
                )
            else:
                text.append(request.sandbox, "dim")
        if request.reason:
            text.append("\nasks because ", "dim")
            text.append(request.reason, "bold")
        return text

    def _body_title(self) -> str:
        request = self.request
        if request.diff is not None:
            return "arguments · diff of the change"
        if request.command is None:
            return "arguments"
        count = len(request.segments)
        lines = request.command.count("\n") + 1
        bits = [f"{len(request.command):,} chars"]
        if lines > 1:
            bits.append(f"{lines} lines")
        if count > 1:
            bits.append(f"{count} segments")
        return "command · " + " · ".join(bits)

    def _command_text(self) -> Text | Group:
        request = self.request
        if request.diff is not None:
            return approval_diff_body(request, arguments_text(shown_arguments(request)))
        if request.command is None:
            return arguments_text(request.arguments)
        text = Text(request.command)
        position = 0
        for segment in request.segments:
            needle = segment.text.strip()
            found = request.command.find(needle, position) if needle else -1
            if found < 0:
                continue
            if segment.risk != "low":
                style = self._risk_style(segment.risk) + Style(underline=True)
                text.stylize(style, found, found + len(needle))
            position = found + len(needle)
        return text

    def _segments_text(self) -> Table:
        """One row per segment: number, computed risk, the text with its reasons under it."""
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(justify="right", style="dim", no_wrap=True)
        table.add_column(no_wrap=True, width=7)
        table.add_column(ratio=1)
        for number, segment in enumerate(self.request.segments, 1):
            cell = Text(segment.text.strip())
            for reason in segment.reasons:
                cell.append(f"\n· {reason}", "italic dim")
            risk = Text(segment.risk.upper(), self._risk_style(segment.risk))
            table.add_row(str(number), risk, cell)
        return table

    def _why_text(self) -> Text:
        text = Text()
        text.append("why (the model): ", "bold")
        text.append(self.request.why or "")
        return text

    def _exact_label(self) -> str:
        rules = exact_rules(self.request)
        shown = ", ".join(rules[:3]) + (f" (+{len(rules) - 3} more)" if len(rules) > 3 else "")
        return f"exactly: {shown}"

    def _keys_text(self) -> Text:
        text = Text()
        for key, label in (
            ("y", "allow once"),
            ("a", "allow always…"),
            ("n", "deny"),
            ("m", "deny with message…"),
        ):
            text.append(f" {key} ", "bold reverse")
            text.append(f" {label}   ")
        text.append("esc", "bold")
        text.append(" back / deny", "dim")
        return text

    # -- forms -----------------------------------------------------------------------------

    def watch_form(self, form: str) -> None:
        self.set_class(form == "always", "-always")
        self.set_class(form == "message", "-message")
        self.call_after_refresh(self.fit_body)
        if form == "always":
            # Enter right away grants exactly, for this session: the narrowest "always".
            self.query_one("#always-ok", Button).focus()
        elif form == "message":
            self.query_one("#deny-message", Input).focus()
        else:
            self.query_one(CommandBody).focus()

    def action_allow_once(self) -> None:
        self.dismiss(ApprovalAnswer.allow_once())

    def action_allow_always(self) -> None:
        self.form = "always"

    def action_deny(self) -> None:
        self.dismiss(ApprovalAnswer.deny())

    def action_deny_message(self) -> None:
        self.form = "message"

    def action_confirm(self) -> None:
        """Enter in an open form (whatever inside it has focus) confirms it."""
        if self.form == "always":
            self.dismiss(self.always_answer())
        elif self.form == "message":
            message = self.query_one("#deny-message", Input).value.strip()
            self.dismiss(ApprovalAnswer.deny(message or None))

    def action_back(self) -> None:
        if self.form:
            self.form = ""
        else:
            self.dismiss(ApprovalAnswer.deny())

    def always_answer(self) -> ApprovalAnswer:
        """The answer the allow-always form describes right now."""
        pattern_chosen = self.query_one("#kind-pattern", RadioButton).value
        saved = self.query_one("#scope-saved", RadioButton).value
        pattern = self.query_one("#always-pattern", Input).value.strip() if pattern_chosen else ""
        return ApprovalAnswer(
            decision=ApprovalDecision.ALLOW_ALWAYS,
            pattern=pattern or None,
            scope="saved" if saved else "session",
        )

    @on(Input.Changed, "#always-pattern")
    def _pattern_edited(self, event: Input.Changed) -> None:
        if event.value != (self.request.suggested_pattern or ""):
            self.query_one("#kind-pattern", RadioButton).value = True

    @on(Input.Submitted, "#always-pattern")
    def _pattern_submitted(self) -> None:
        self.query_one("#kind-pattern", RadioButton).value = True
        self.dismiss(self.always_answer())

    @on(Button.Pressed, "#always-ok")
    def _always_ok(self) -> None:
        self.dismiss(self.always_answer())

    @on(Button.Pressed, "#always-back")
    def _always_back(self) -> None:
        self.form = ""

    @on(Input.Submitted, "#deny-message")
    def _deny_with_message(self, event: Input.Submitted) -> None:
        self.dismiss(ApprovalAnswer.deny(event.value.strip() or None))

    def action_open_diff(self) -> None:
        if self.request.diff is not None:
            from tui.ui.tools.pager import OutputPager

            title = f"{self.request.tool_name} · {self.request.arguments.get('path', '')}"
            self.app.push_screen(
                OutputPager(title, plain(self.request.diff, limit=None), None, "diff")
            )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While a form is open its letters are typing, not answers.
        return not (self.form and (action in ANSWER_ACTIONS or action == "open_diff"))


def arguments_text(arguments: dict[str, object]) -> Text:
    """Arguments the way a person reads them: multi-line strings (code, file content, a
    notebook cell) as the lines they are, not one JSON line full of ``\\n``."""
    text = Text()
    for index, (key, value) in enumerate(arguments.items()):
        if index:
            text.append("\n")
        text.append(f"{key}:", "bold")
        if isinstance(value, str) and "\n" in value:
            for line in value.split("\n"):
                text.append("\n  " + line)
        else:
            rendered = json.dumps(value, indent=2, ensure_ascii=False)
            text.append(" " + rendered.replace("\n", "\n  "))
    return text


if __name__ == "__main__":
    from textual.app import App

    from tui.events import RiskSegmentView

    demo_request = ApprovalRequested(
        request_id="approval-1",
        tool_call_id="call_1",
        tool_name="run_shell",
        arguments={"command": "git pull && rm -rf build/ && make -j8 install"},
        command="git pull && rm -rf build/ && make -j8 install",
        risk="high",
        segments=[
            RiskSegmentView(text="git pull", risk="medium", reasons=["network", "changes files"]),
            RiskSegmentView(text="rm -rf build/", risk="high", reasons=["recursive delete"]),
            RiskSegmentView(text="make -j8 install", risk="medium", reasons=["builds"]),
        ],
        claimed_risk="low",
        why="rebuild after pulling",
        suggested_pattern="run_shell(make -j8:*)",
        reason="ask mode: commands that act need approval (computed risk: high)",
    )

    class _Demo(App[None]):
        def on_mount(self) -> None:
            self.push_screen(ApprovalScreen(demo_request), lambda answer: self.exit(answer))

    print(_Demo().run())

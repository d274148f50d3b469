"""The approval prompt: everything needed to decide, and a small typed vocabulary to answer.

What people could not see in other agents is what this shows: the whole command, wrapped and
scrolling (never clipped, with an overflow sign), each segment of a compound command with its
computed risk and reasons, the model's own reason and risk label beside the computed one, and
where it runs. What the model wrote comes first and on one line a field; the call itself comes
after it, and the question above the keys names the computed risk (``texts``). "Allow always"
lists every rule it would add, each one possible to untick (``always_form``).

It opens closed: no key answers it until half a second after it appeared and after the last
keystroke (``gate``), so typing meant for the prompt never approves a command nobody saw.

It is a modal over a running app: the chat and tool panels keep streaming behind it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.markup import escape
from textual.reactive import var
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Input, SelectionList, Static

from tui.diffs import plain
from tui.events import ApprovalAnswer, ApprovalRequested
from tui.locations import styles_dir
from tui.safe_text import one_line
from tui.ui.approval import texts
from tui.ui.approval.always_form import AlwaysForm, exact_rules
from tui.ui.approval.gate import AnswerGate, is_typing, typed_at
from tui.ui.approval.hosts_form import HostsForm, grant_scope, hosts_text

ANSWER_ACTIONS = frozenset(
    {"allow_once", "allow_always", "allow_hosts", "deny", "deny_message", "back"}
)
BODY_MIN_LINES = 3
FORM_TYPING = frozenset(
    {"allow_once", "allow_always", "allow_hosts", "deny", "deny_message", "open_diff"}
)

__all__ = ["ApprovalScreen", "CommandBody", "exact_rules"]


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
            bits.append(f"↓ {below} more lines below — scroll with ↑ ↓ pgup pgdn")
        self.border_subtitle = " · ".join(bits) if bits else None
        self.set_class(bool(bits), "-overflow")


class AnswerFooter(Vertical):
    """The question and the ways to answer, docked under the body.

    Its height changes after the body was fitted (the keys line wraps once the gate opens, a
    form opens or closes): a fit queued for "after the refresh" could measure it before that
    layout, so the body is fitted again whenever it really changes.
    """

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, ApprovalScreen):
            screen.fit_body()


class ApprovalScreen(ModalScreen[ApprovalAnswer | None]):
    """Returns the person's ``ApprovalAnswer`` (None when dismissed because the call ended).

    Args:
        request: What is asked.
        waiting: Calls waiting behind this one (``ApprovalsWaiting``), shown in the border.
        last_typed: When a key was last typed before this appeared (the prompt's), if ever.
        monotonic: The clock of the answer gate.
    """

    CSS_PATH = str(styles_dir() / "approval.tcss")
    BINDINGS = [
        Binding("y", "allow_once", "Allow once"),
        Binding("a", "allow_always", "Allow always…"),
        Binding("n", "deny", "Deny"),
        Binding("m", "deny_message", "Deny with message…"),
        Binding("h", "allow_hosts", "Some hosts…"),
        Binding("escape", "back", "Back / deny", show=False),
        # Above the form's radio sets, rule list and buttons, which take Enter for themselves
        # otherwise: "⏎ confirms" is then true whatever has focus.
        Binding("enter", "confirm", "Confirm", show=False, priority=True),
        Binding("o", "open_diff", "Whole diff", show=False),
    ]

    form: var[str] = var("", init=False)
    """``""``, ``always``, ``message`` or ``hosts``: which sub-form is open."""

    def __init__(
        self,
        request: ApprovalRequested,
        *,
        waiting: int = 0,
        last_typed: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.request = request
        self.waiting = waiting
        self.monotonic = monotonic
        self.gate = AnswerGate(last_typed=last_typed)
        self._gate_timer: Timer | None = None

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="approval-box") as box:
            box.border_title = escape(f"Approve {one_line(request.tool_name, 60)}?")
            # The header has room for more lines (where the call runs, say): the body below
            # is fitted to whatever height it takes.
            yield Static(self._header(), id="approval-header")
            with CommandBody(id="approval-body") as body:
                body.border_title = texts.body_title(request)
                if request.why:
                    yield Static(texts.why_text(request), id="approval-why")
                yield Static(texts.command_text(request, self._risk_style), id="approval-command")
                if request.segments:
                    yield Static(
                        texts.segments_table(request, self._risk_style), id="approval-segments"
                    )
                if request.hosts:
                    yield Static(
                        hosts_text(
                            request, self._color("warning", "yellow"), self._color("error", "red")
                        ),
                        id="approval-hosts",
                    )
            # Docked at the bottom of the box: whatever the command's length and the
            # terminal's size, the question and the ways to answer stay on screen.
            with AnswerFooter(id="approval-footer"):
                yield AlwaysForm(request)
                if request.hosts:
                    yield HostsForm(request)
                with Vertical(id="message-form") as form:
                    form.border_title = "Deny, and tell the model why (it reads this)"
                    yield Input(id="deny-message", placeholder="e.g. use the staging host instead")
                    yield Static("⏎ sends · esc back", classes="form-hint")
                yield Static(texts.question_text(request, self._risk_style), id="approval-question")
                yield Static(self._keys(self.monotonic()), id="approval-keys")

    def on_mount(self) -> None:
        self.show_waiting(self.waiting)
        self.query_one(CommandBody).focus()
        self.call_after_refresh(self.fit_body)
        self.refresh_gate()
        # The wait counts from the first frame that shows the question, not from when it was
        # made: keys typed while the app was busy building it arrive after, and must not count.
        self.call_after_refresh(self._shown)

    def _shown(self) -> None:
        self.gate.shown(self.monotonic())
        self.refresh_gate()

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_body)

    def show_waiting(self, count: int) -> None:
        """``count`` more requests wait behind this one (updated while it is open)."""
        self.waiting = count
        box = self.query_one("#approval-box")
        box.border_subtitle = f"{count} more waiting" if count else None

    def fit_body(self) -> None:
        """Give the command body the height left by the header and the docked footer.

        A vertical layout does not shrink an ``auto`` child, so without this a long command
        would push the box past the screen and clip its footer (the answer keys).
        """
        if not self.is_attached:
            return
        try:
            self._fit_body()
        except NoMatches:
            pass  # answered while a refresh was queued: its parts are already gone

    def _fit_body(self) -> None:
        box = self.query_one("#approval-box")
        short = self.size.height < 30
        self.set_class(short, "-short")
        limit = self.size.height if short else int(self.size.height * 0.94)
        used = box.styles.gutter.height
        for part in (self.query_one("#approval-header"), self.query_one("#approval-footer")):
            margin = part.styles.margin
            used += part.outer_size.height + margin.top + margin.bottom
        if self.form == "always":
            # The rule list takes what the body can spare (the body keeps three lines): every
            # rule is listed, scrolling when the terminal is short.
            rules = self.query_one("#always-rules", SelectionList)
            others = used - rules.outer_size.height
            room = max(2, limit - others - BODY_MIN_LINES - 2)
            if rules.styles.max_height is None or rules.styles.max_height.value != room:
                rules.styles.max_height = room
            used = others + min(room, rules.option_count)
        body = self.query_one(CommandBody)
        height = max(BODY_MIN_LINES, limit - used)
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
        return texts.header_text(self.request, self._risk_style, self._color("warning", "yellow"))

    def _keys(self, now: float) -> Text:
        keys = texts.keys_text(self.gate.remaining(now))
        if self.request.hosts and self.gate.is_open(now):
            keys.append("   ")
            keys.append(" h ", "bold reverse")
            keys.append(" some hosts…")
        return keys

    # -- the gate --------------------------------------------------------------------------

    @property
    def answering(self) -> bool:
        """Whether a key may answer now."""
        return self.gate.is_open(self.monotonic())

    def refresh_gate(self) -> None:
        """Redraw the keys line, and look again when the gate should open.

        One reading of the clock for all of it: read twice, the line could be drawn closed and
        the next look found needless (the gate opened in between), leaving it closed for good.
        """
        if not self.is_attached:
            return
        now = self.monotonic()
        self.query_one("#approval-keys", Static).update(self._keys(now))
        self.set_class(not self.gate.is_open(now), "-waiting")
        self.call_after_refresh(self.fit_body)
        if self._gate_timer is not None:
            self._gate_timer.stop()
            self._gate_timer = None
        remaining = self.gate.remaining(now)
        if remaining > 0:
            self._gate_timer = self.set_timer(min(remaining, 0.1) + 0.01, self.refresh_gate)

    def on_key(self, event: events.Key) -> None:
        """A key typed while closed answers nothing and starts the wait again."""
        if self.form or not is_typing(event.key, event.character):
            return
        if not self.gate.typed(typed_at(event, self.monotonic())):
            event.stop()
            event.prevent_default()
            self.refresh_gate()

    # -- forms -----------------------------------------------------------------------------

    def watch_form(self, form: str) -> None:
        self.set_class(form == "always", "-always")
        self.set_class(form == "message", "-message")
        self.set_class(form == "hosts", "-hosts")
        self.call_after_refresh(self.fit_body)
        if form == "always":
            # Enter right away grants exactly what is listed, for this session.
            self.query_one("#always-ok", Button).focus()
        elif form == "message":
            self.query_one("#deny-message", Input).focus()
        elif form == "hosts":
            self.query_one("#hosts-list", SelectionList).focus()
        else:
            self.query_one(CommandBody).focus()

    def action_allow_once(self) -> None:
        self.dismiss(ApprovalAnswer.allow_once())

    def action_allow_always(self) -> None:
        self.form = "always"

    def action_deny(self) -> None:
        self.dismiss(ApprovalAnswer.deny())

    def action_allow_hosts(self) -> None:
        if self.request.hosts:
            self.form = "hosts"

    def action_deny_message(self) -> None:
        self.form = "message"

    def action_confirm(self) -> None:
        """Enter in an open form (whatever inside it has focus) confirms it."""
        if self.form == "always":
            focused = self.focused.id if self.focused is not None else None
            if focused == "always-back":
                self.form = ""
                return
            if focused == "always-pattern":  # Enter in the pattern: that pattern is the grant
                self.query_one(AlwaysForm).choose_pattern()
            self.dismiss(self.always_answer())
        elif self.form == "message":
            message = self.query_one("#deny-message", Input).value.strip()
            self.dismiss(ApprovalAnswer.deny(message or None))
        elif self.form == "hosts":
            if self.focused is not None and self.focused.id == "hosts-back":
                self.form = ""
                return
            self.dismiss(self.query_one(HostsForm).answer())

    def action_back(self) -> None:
        if self.form:
            self.form = ""
        else:
            self.dismiss(ApprovalAnswer.deny())

    def always_answer(self) -> ApprovalAnswer:
        """The answer the allow-always form describes right now (a fan-out's grant holds on
        the asked hosts' group, or those hosts: the body says which)."""
        answer = self.query_one(AlwaysForm).answer()
        if self.request.hosts and answer.decision.value == "allow_always":
            return answer.model_copy(update={"grant_hosts": grant_scope(self.request)})
        return answer

    @on(Button.Pressed, "#hosts-ok")
    def _hosts_ok(self) -> None:
        self.dismiss(self.query_one(HostsForm).answer())

    @on(Button.Pressed, "#hosts-back")
    def _hosts_back(self) -> None:
        self.form = ""

    @on(Input.Changed, "#always-pattern")
    def _pattern_edited(self, event: Input.Changed) -> None:
        self.query_one(AlwaysForm).pattern_edited(event.value)

    @on(AlwaysForm.Reshaped)
    def _form_reshaped(self) -> None:
        self.call_after_refresh(self.fit_body)

    @on(Button.Pressed, "#always-ok")
    def _always_ok(self) -> None:
        self.dismiss(self.always_answer())

    @on(Button.Pressed, "#always-back")
    def _always_back(self) -> None:
        self.form = ""

    def action_open_diff(self) -> None:
        if self.request.diff is not None:
            from tui.ui.tools.pager import OutputPager

            title = f"{self.request.tool_name} · {self.request.arguments.get('path', '')}"
            self.app.push_screen(
                OutputPager(
                    one_line(title, 200), plain(self.request.diff, limit=None), None, "diff"
                )
            )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "confirm":
            return bool(self.form)  # without a form, Enter is the body's (and the gate's)
        if self.form:
            # While a form is open its letters are typing, not answers; Esc closes it.
            return action not in FORM_TYPING
        if action == "allow_hosts" and not self.request.hosts:
            return False
        if action in ANSWER_ACTIONS and not self.answering:
            return None  # shown, but it answers nothing yet (see ``gate``)
        return True


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

"""Trust this workspace? The question a cloned repository's own settings wait for.

Shown before the session is built when the workspace's ``.agent-tui.toml`` or ``.mcp.json``
would loosen approvals, run programs or send data elsewhere, and again on ``/trust``. It lists
exactly what trusting would change, riskiest first (what runs a program, then what sends data
away, then what loosens approvals), each with what it does in words, the whole of what it would
run — a server's command, every argument, its environment, as the file writes them, never cut
— and the file and line it comes from. The list scrolls with the keyboard (↑ ↓ PgUp PgDn Home
End) while the buttons keep focus, and says how much is below. It defaults to "don't trust":
the focused button, Esc and ``n`` all refuse; only ``t`` or the Trust button accept.

Everything here was written by the repository: it is shown as plain text, controls spelled
out, never as markup.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.locations import styles_dir
from tui.safe_text import one_line
from tui.views import HeldChangeView, TrustView

GROUPS = (
    ("runs", "Runs programs on your machine"),
    ("sends", "Sends your prompts, keys, files or searches elsewhere"),
    ("loosens", "Loosens approvals or security"),
)
"""The held changes, riskiest group first."""


def summary_text(trust: TrustView) -> Text:
    """One line above the list: how many changes wait, and of which kind."""
    counts = [(sum(1 for c in trust.held if c.why == why), why) for why, _ in GROUPS]
    parts = [f"{count} {why}" for count, why in counts if count]
    text = Text()
    text.append(f"{len(trust.held)} change{'s' if len(trust.held) != 1 else ''} wait", "bold")
    if parts:
        text.append(f" ({', '.join(parts)})", "bold yellow")
    text.append(" · ↑ ↓ PgUp PgDn scroll", "dim")
    return text


def describe_trust(trust: TrustView) -> Text:
    """The list the screen shows, grouped by what each change could do to you."""
    text = Text()
    files = ", ".join(one_line(str(path)) for path in trust.files)
    text.append("This workspace's own files want to change your settings:\n", "bold")
    text.append(f"{files}\n", "dim")
    for why, title in GROUPS:
        changes = [c for c in trust.held if c.why == why]
        if not changes:
            continue
        text.append(f"\n{title}\n", "bold yellow" if why != "loosens" else "bold")
        for change in changes:
            _change(text, change)
    if trust.refused:
        text.append("\nNever taken from a workspace file (ignored either way)\n", "bold")
        for change in trust.refused:
            _change(text, change)
    text.append(
        "\nUntrusted, the workspace still applies what only tightens your settings (a stricter "
        "mode, more deny rules, tools switched off). A changed file asks again.",
        "dim",
    )
    return text


def _change(text: Text, change: HeldChangeView) -> None:
    text.append("  • ")
    text.append(one_line(change.key, 200), "bold")
    text.append(f"  {one_line(change.effect)}\n")
    for detail in change.details:
        text.append(f"      {one_line(detail)}\n")
    text.append(f"      from {one_line(change.source)}\n", "dim")


class TrustList(VerticalScroll, can_focus=False):
    """The changes, scrolled by the screen's keys; its border says how much is out of view."""

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.update_overflow()

    def on_resize(self) -> None:
        self.update_overflow()

    def update_overflow(self) -> None:
        below = max(0, self.virtual_size.height - self.scrollable_content_region.height)
        below -= int(self.scroll_y)
        above = int(self.scroll_y)
        bits = []
        if above > 0:
            bits.append(f"↑ {above} lines above")
        if below > 0:
            bits.append(f"↓ {below} more lines below")
        self.border_subtitle = " · ".join(bits) if bits else None


class TrustScreen(ModalScreen[bool]):
    """Returns True only when the person chose to trust the workspace."""

    CSS_PATH = str(styles_dir() / "trust.tcss")
    BINDINGS = [
        Binding("t", "trust", "Trust"),
        Binding("n,escape", "refuse", "Don't trust"),
        Binding("down,j", "scroll('down')", "Scroll down", show=False),
        Binding("up,k", "scroll('up')", "Scroll up", show=False),
        Binding("pagedown", "scroll('page_down')", "Page down", show=False),
        Binding("pageup", "scroll('page_up')", "Page up", show=False),
        Binding("home", "scroll('home')", "Top", show=False),
        Binding("end", "scroll('end')", "Bottom", show=False),
    ]

    def __init__(self, trust: TrustView) -> None:
        super().__init__()
        self.trust = trust

    def compose(self) -> ComposeResult:
        with Vertical(id="trust-box") as box:
            box.border_title = escape(f"Trust {one_line(self.trust.key)}?")
            yield Static(summary_text(self.trust), id="trust-summary")
            with TrustList(id="trust-list"):
                yield Static(describe_trust(self.trust), id="trust-changes")
            with Horizontal(id="trust-buttons"):
                yield Button("Don't trust (n)", id="refuse", variant="primary")
                yield Button("Trust (t)", id="trust", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#refuse", Button).focus()
        self.call_after_refresh(self.fit_list)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_list)

    def fit_list(self) -> None:
        """The list takes what the box can spare beside its summary and buttons."""
        if not self.is_attached:
            return
        box = self.query_one("#trust-box")
        short = self.size.height < 30
        self.set_class(short, "-short")
        limit = self.size.height if short else int(self.size.height * 0.9)
        used = box.styles.gutter.height
        for part in (self.query_one("#trust-summary"), self.query_one("#trust-buttons")):
            margin = part.styles.margin
            used += part.outer_size.height + margin.top + margin.bottom
        listing = self.query_one(TrustList)
        height = max(3, limit - used)
        if listing.styles.max_height is None or listing.styles.max_height.value != height:
            listing.styles.max_height = height
        listing.update_overflow()

    def action_scroll(self, where: str) -> None:
        listing = self.query_one(TrustList)
        moves = {
            "down": lambda: listing.scroll_down(animate=False),
            "up": lambda: listing.scroll_up(animate=False),
            "page_down": lambda: listing.scroll_page_down(animate=False),
            "page_up": lambda: listing.scroll_page_up(animate=False),
            "home": lambda: listing.scroll_home(animate=False),
            "end": lambda: listing.scroll_end(animate=False),
        }
        moves[where]()

    @on(Button.Pressed, "#trust")
    def action_trust(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#refuse")
    def action_refuse(self) -> None:
        self.dismiss(False)

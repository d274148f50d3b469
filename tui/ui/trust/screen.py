"""Trust this workspace? The question a cloned repository's own settings wait for.

Shown before the session is built when the workspace's ``.agent-tui.toml`` or ``.mcp.json``
would loosen approvals, run programs or send data elsewhere, and again on ``/trust``. It lists
exactly what trusting would change, file and line for each, and defaults to "don't trust": the
focused button, Esc and ``n`` all refuse; only ``t`` or the Trust button accept.
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
    ("sends", "Sends your prompts, keys or searches elsewhere"),
    ("loosens", "Loosens approvals or security"),
)


def describe_trust(trust: TrustView) -> Text:
    """The list the screen shows, grouped by what each change could do to you."""
    text = Text()
    files = ", ".join(str(path) for path in trust.files)
    text.append("This workspace's own files want to change your settings:\n", "bold")
    text.append(f"{files}\n", "dim")
    for why, title in GROUPS:
        changes = [c for c in trust.held if c.why == why]
        if not changes:
            continue
        text.append(f"\n{title}\n", "bold yellow" if why != "loosens" else "bold")
        for change in changes:
            _line(text, change)
    if trust.refused:
        text.append("\nNever taken from a workspace file (ignored either way)\n", "bold")
        for change in trust.refused:
            _line(text, change)
    text.append(
        "\nUntrusted, the workspace still applies what only tightens your settings (a stricter "
        "mode, more deny rules, tools switched off). A changed file asks again.",
        "dim",
    )
    return text


def _line(text: Text, change: HeldChangeView) -> None:
    text.append("  • ")
    text.append(change.key, "bold")
    text.append(f"  {change.effect}\n")
    text.append(f"      {change.source}\n", "dim")


class TrustScreen(ModalScreen[bool]):
    """Returns True only when the person chose to trust the workspace."""

    CSS_PATH = str(styles_dir() / "trust.tcss")
    BINDINGS = [
        Binding("t", "trust", "Trust"),
        Binding("n,escape", "refuse", "Don't trust"),
    ]

    def __init__(self, trust: TrustView) -> None:
        super().__init__()
        self.trust = trust

    def compose(self) -> ComposeResult:
        with Vertical(id="trust-box") as box:
            box.border_title = escape(f"Trust {one_line(self.trust.key)}?")
            with VerticalScroll(id="trust-list"):
                yield Static(describe_trust(self.trust), id="trust-changes")
            with Horizontal(id="trust-buttons"):
                yield Button("Don't trust (n)", id="refuse", variant="primary")
                yield Button("Trust (t)", id="trust", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#refuse", Button).focus()

    @on(Button.Pressed, "#trust")
    def action_trust(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#refuse")
    def action_refuse(self) -> None:
        self.dismiss(False)

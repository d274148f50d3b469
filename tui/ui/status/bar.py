"""One line at the bottom: provider and model, backend, approvals, spend, what runs, the clock
of an auto-approve window. Updated only when a value changes.

Spend reads ``12.3k in (8.0k cached) · 450 out · $0.04 · 31% ctx``: the cached share says
whether prompt caching works, the cost is left out for a model without a known price, and
the share of the context window (the last request's prompt over the window) appears only
once a window is known (``context_window``, set by the app from the loop's context meter).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from rich.text import Text
from textual.widgets import Static


@dataclass
class StatusInfo:
    provider: str = ""
    model: str = ""
    actor: str = "local"
    mode: str = "ask"
    sandbox: str = ""
    """Where commands run in this mode (``sandbox: …``, ``no sandbox: …``); empty: unknown."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    """Of ``input_tokens``, read from the provider's prompt cache."""
    cost_usd: float | None = None
    context_tokens: int = 0
    """The prompt size of the last request, in tokens."""
    context_window: int | None = None
    """The model's window; ``None`` hides the percentage."""
    running_tools: int = 0
    working: bool = False
    auto_approve: str = ""
    """Remaining time of an auto-approve window, empty when none."""
    holding_pane: bool = False
    dropped: int = 0
    """Output chunks the bus dropped because the UI fell behind."""


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 1000:
        return f"{count / 1000:.1f}k"
    return str(count)


def _cost(usd: float) -> str:
    """Cents matter at the start of a session, dollars later."""
    return f"${usd:.4f}" if usd < 0.01 else f"${usd:.2f}"


def render_status(info: StatusInfo) -> Text:
    sep = ("  │  ", "dim")
    text = Text(no_wrap=True, overflow="ellipsis")
    if info.holding_pane:
        text.append(" YOU HAVE THE PANE'S KEYBOARD · ctrl+] gives it back ", "bold reverse")
        text.append("  ")
    if info.working:
        text.append(" ● working ", "bold reverse")
    else:
        text.append(" ○ idle ", "dim")
    text.append("  ")
    if info.provider:
        text.append(info.provider, "bold")
        text.append(f" · {info.model}")
    else:
        text.append("no model", "bold")
    text.append(*sep)
    text.append(info.actor)
    text.append(*sep)
    text.append("mode ")
    text.append(info.mode, "bold")
    if info.sandbox.startswith("no sandbox"):
        text.append("  ")
        text.append(" NO SANDBOX ", "bold reverse")
    elif info.sandbox:
        text.append(" · sandboxed", "dim")
    text.append(*sep)
    text.append(f"{_tokens(info.input_tokens)} in")
    if info.cached_tokens:
        text.append(f" ({_tokens(info.cached_tokens)} cached)", "dim")
    text.append(f" · {_tokens(info.output_tokens)} out")
    if info.cost_usd is not None:
        text.append(f" · {_cost(info.cost_usd)}")
    if info.context_window and info.context_tokens:
        share = min(999, round(100 * info.context_tokens / info.context_window))
        shown = f"{share}%" if share else "<1%"
        text.append(f" · {shown} ctx", "bold" if share >= 85 else "")
    if info.running_tools:
        text.append(*sep)
        text.append(f"⚙ {info.running_tools} running", "bold")
    if info.auto_approve:
        text.append(*sep)
        text.append(f" auto-approve {info.auto_approve} ", "bold reverse")
    if info.dropped:
        text.append(*sep)
        text.append(f"{info.dropped} chunks dropped (UI behind)", "italic")
    return text


class StatusBar(Static):
    """Holds a ``StatusInfo``; ``set(**changes)`` repaints only when something changed."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.info = StatusInfo()

    def set(self, **changes: object) -> None:
        names = {f.name for f in fields(StatusInfo)}
        changed = False
        for name, value in changes.items():
            if name not in names:
                raise AttributeError(name)
            if getattr(self.info, name) != value:
                setattr(self.info, name, value)
                changed = True
        if changed:
            self.update(render_status(self.info), layout=False)  # always one line
            self.set_class(self.info.auto_approve != "", "-auto")
            self.set_class(self.info.holding_pane, "-holding")
            self.set_class(self.info.working, "-working")

    def on_mount(self) -> None:
        self.update(render_status(self.info))

    @property
    def plain(self) -> str:
        return render_status(self.info).plain


if __name__ == "__main__":
    from textual.app import App, ComposeResult

    class _Demo(App[None]):
        def compose(self) -> ComposeResult:
            yield StatusBar()

        def on_mount(self) -> None:
            self.query_one(StatusBar).set(
                provider="openai",
                model="gpt-4.1",
                working=True,
                running_tools=2,
                input_tokens=12345,
                cached_tokens=9000,
                output_tokens=678,
                cost_usd=0.0412,
                context_tokens=40_000,
                context_window=128_000,
                auto_approve="9:41",
            )

    _Demo().run()

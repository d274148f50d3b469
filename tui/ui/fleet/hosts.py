"""The host list: every fleet host's state, last exit code and running command, one line each.

It learns everything from ``FleetHostState`` events (the latest per host replaces the one
before) and says, per host, what stands behind its approval mode: ``kernel`` where the host's
own bubblewrap confines its commands, ``rater`` where only the command rater decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from tui.safe_text import one_line

if TYPE_CHECKING:
    from tui.events import FleetHostState

STATE_MARKS = {
    "idle": ("○", "dim"),
    "connecting": ("◌", "cyan"),
    "ready": ("●", "green"),
    "running": ("▶", "bold cyan"),
    "unreachable": ("✗", "bold red"),
    "blocked": ("⊘", "yellow"),
    "closed": ("·", "dim"),
}
GUARD = {"kernel": ("kernel", "green"), "rater": ("rater", "bold yellow"), "unknown": ("", "dim")}


class HostList(Static):
    """One line per host (two when it runs a command), in inventory order."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.hosts: dict[str, FleetHostState] = {}
        """The latest ``FleetHostState`` of each host."""
        self.order: list[str] = []

    def set_hosts(self, names: list[str]) -> None:
        """The fleet's hosts, in order, before their first state arrives."""
        self.order = list(names)
        self.border_title = f"hosts ({len(names)})"
        self.redraw()

    def apply(self, event: FleetHostState) -> None:
        if event.host not in self.order:
            self.order.append(event.host)
        self.hosts[event.host] = event
        self.redraw()

    def redraw(self) -> None:
        width = min(16, max((len(name) for name in self.order), default=4))
        text = Text(no_wrap=True, overflow="ellipsis")
        counts: dict[str, int] = {}
        for index, name in enumerate(self.order):
            state = self.hosts.get(name)
            kind = state.state if state is not None else "idle"
            counts[kind] = counts.get(kind, 0) + 1
            mark, style = STATE_MARKS.get(kind, ("?", ""))
            if index:
                text.append("\n")
            text.append(f"{mark} ", style)
            text.append(f"{name[:width]:<{width}}", "bold" if kind == "running" else "")
            if state is None:
                continue
            if state.last_exit is not None:
                text.append(f" {state.last_exit:>3}", "red" if state.last_exit else "green")
            else:
                text.append("    ")
            word, colour = GUARD.get(state.guard, ("", ""))
            if word:
                text.append(f" {word}", colour)
            if kind in ("unreachable", "blocked"):
                text.append(f" {kind}", style)
            if state.running:
                text.append(f"\n    $ {one_line(state.running, 60)}", "cyan")
            elif kind == "unreachable" and state.detail:
                detail = " ".join(state.detail.split())
                short = detail if len(detail) <= 24 else detail[:23] + "…"
                text.append(f"\n    {short}", "dim red")
        self.update(text)
        shown = " · ".join(f"{count} {kind}" for kind, count in counts.items())
        self.border_subtitle = shown


__all__ = ["HostList"]

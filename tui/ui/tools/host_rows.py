"""A fan-out's hosts under its tool block: one row a host, each expanding to its output.

The block above shows the command and the merged live stream (every line led by its host);
these rows say, per host, where it stands (queued, running, exit code and time, timed out,
connection lost, not run and why) and open on Enter or a click to that host's own output, as
it came back bounded, with the path of its whole saved output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from tui.safe_text import one_line

if TYPE_CHECKING:
    from tui.events import FanoutHostUpdate

MARKS = {
    "queued": ("·", ""),
    "running": ("▶", "accent"),
    "ok": ("✓", "success"),
    "failed": ("✗", "error"),
    "timeout": ("⏱", "warning"),
    "dropped": ("⚡", "error"),
    "refused": ("⊘", "warning"),
    "cancelled": ("■", "warning"),
}
"""Each status's mark and the theme colour it is drawn in."""
FALLBACK = {"accent": "cyan", "success": "green", "error": "red", "warning": "yellow"}
WORDS = {
    "queued": "waiting for a fork",
    "running": "running",
    "timeout": "TIMED OUT",
    "dropped": "CONNECTION FAILED",
    "refused": "not run",
    "cancelled": "cancelled",
}


class HostRow(Static, can_focus=True):
    """One host of a fan-out; Enter or a click shows its output under it."""

    BINDINGS = [Binding("enter", "toggle_output", "Expand host", show=False)]

    def __init__(self, host: str, width: int) -> None:
        super().__init__("", classes="host-row")
        self.host = host
        self.width = width
        self.status = "queued"
        self.exit_code: int | None = None
        self.duration_ms = 0.0
        self.output = ""
        self.saved: str | None = None
        self.sandbox: str | None = None
        self.expanded = False

    def apply(self, event: FanoutHostUpdate) -> None:
        self.status = str(event.status)
        self.exit_code = event.exit_code
        self.duration_ms = float(event.duration_ms or 0.0)
        self.output = str(event.output or self.output)
        self.saved = event.full_output_path or self.saved
        self.sandbox = event.sandbox or self.sandbox
        self.set_class(self.status in ("failed", "dropped", "timeout"), "-bad")
        self.set_class(self.status == "refused", "-refused")
        self.redraw()

    def redraw(self) -> None:
        mark, colour = MARKS.get(self.status, ("?", ""))
        line = Text()
        line.append(f"{mark} ", f"bold {self._colour(colour)}" if colour else "dim")
        line.append(f"{'▾' if self.expanded else '▸'} ", "dim")
        line.append(f"{self.host:<{self.width}} ", "bold")
        if self.status in ("ok", "failed"):
            line.append(f"exit {self.exit_code}", "bold" if self.status == "failed" else "")
            line.append(f" · {self.duration_ms:.0f} ms", "dim")
        else:
            line.append(WORDS.get(self.status, self.status))
        first = one_line(self.output.strip().split("\n", 1)[0], 60) if self.output else ""
        if first and not self.expanded:
            line.append(f"  {first}", "dim")
        if not self.expanded:
            self.update(line)
            return
        body = Text("\n")
        body.append(self.output.rstrip("\n") or "(no output)")
        if self.saved:
            body.append(f"\nwhole output: {self.saved}", "dim")
        if self.sandbox:
            body.append(f"\n{self.sandbox}", "dim")
        self.update(line + body)

    def _colour(self, name: str) -> str:
        try:
            return str(self.app.theme_variables.get(name) or FALLBACK[name])
        except Exception:  # not mounted in an app yet
            return FALLBACK[name]

    def action_toggle_output(self) -> None:
        self.expanded = not self.expanded
        self.redraw()

    def on_click(self, event: events.Click) -> None:
        self.action_toggle_output()


class HostRows(Vertical):
    """The rows of one fan-out call, in the order its hosts were named."""

    def __init__(self, call_id: str) -> None:
        super().__init__(classes="host-rows")
        self.call_id = call_id
        self.rows: dict[str, HostRow] = {}

    def apply(self, event: FanoutHostUpdate) -> None:
        row = self.rows.get(event.host)
        if row is None:
            width = max([len(event.host), *(len(name) for name in self.rows)])
            row = HostRow(str(event.host), min(width, 24))
            self.rows[event.host] = row
            for other in self.rows.values():
                other.width = min(width, 24)
            self.mount(row)
        row.apply(event)
        self.border_title = self.summary()

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for row in self.rows.values():
            counts[row.status] = counts.get(row.status, 0) + 1
        return f"{len(self.rows)} hosts · " + " · ".join(
            f"{count} {WORDS.get(status, status)}" for status, count in counts.items()
        )


__all__ = ["HostRow", "HostRows"]

"""The fleet's mirror: a grid of small live panes, one per host, and one key to focus one.

Each cell is a ``PaneMirror`` of its own fed with that host's frames (``PaneSnapshot``s whose
actor names the host), so the person watches every host's shell at once. Enter or a click on
a cell (or f7 on the highlighted one) focuses that host: the mirror panel then shows its pane
full-size, and ctrl+t takes over its keyboard as for one host; f7 goes back to the grid.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.markup import escape
from textual.message import Message

from tui.ui.mirror.pane import PaneFrame, PaneMirror

HOST_IN_ACTOR = re.compile(r"^(?:ssh|container):([^/]+)")


def host_of(actor: str) -> str | None:
    """``ssh:web05/tmux:%0`` → ``web05`` (None: not a remote host's)."""
    match = HOST_IN_ACTOR.match(actor)
    return match.group(1) if match else None


class HostCell(Vertical, can_focus=True):
    """One host's small live pane, with its name and state in the border."""

    BINDINGS = [Binding("enter", "focus_host", "Focus host", show=False)]

    @dataclass
    class Chosen(Message):
        """The person chose this host to see full-size."""

        host: str

    def __init__(self, host: str) -> None:
        super().__init__(classes="host-cell")
        self.host = host
        self.pane = PaneMirror()
        self.pane.can_focus = False
        self.state = ""
        self.gone: str | None = None
        """Why this host's pane is no more (its last frame stays, faded, until a fresh one)."""

    def compose(self) -> ComposeResult:
        yield self.pane

    def on_mount(self) -> None:
        self.retitle()

    def show(self, frame: PaneFrame) -> None:
        self.pane.show(frame)
        if self.gone is not None:
            self.gone = None
            self.set_class(False, "-gone")
            self.retitle()

    def set_gone(self, why: str) -> None:
        """The host's pane went with its tmux session or server."""
        self.gone = why
        self.set_class(True, "-gone")
        self.retitle()

    def set_state(self, state: str, last_exit: int | None) -> None:
        self.state = state if last_exit is None else f"{state} · exit {last_exit}"
        self.set_class(state == "running", "-running")
        self.set_class(state in ("unreachable", "blocked"), "-down")
        self.retitle()

    def retitle(self) -> None:
        self.border_title = escape(self.host)
        said = ["[b $warning]pane gone[/]"] if self.gone is not None else []  # first: a cell
        said += [escape(self.state)] if self.state else []  # is narrow, and this matters most
        self.border_subtitle = " · ".join(said) or None

    def action_focus_host(self) -> None:
        self.post_message(self.Chosen(self.host))

    def on_click(self, event: events.Click) -> None:
        self.post_message(self.Chosen(self.host))


class MirrorGrid(Grid):
    """Every host's cell, laid out in as square a grid as fits."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cells: dict[str, HostCell] = {}

    def set_hosts(self, names: list[str]) -> None:
        for name in names:
            if name not in self.cells:
                cell = HostCell(name)
                self.cells[name] = cell
                self.mount(cell)
        columns = max(1, math.ceil(math.sqrt(len(self.cells) * 2)))
        self.styles.grid_size_columns = min(columns, len(self.cells) or 1)

    def show(self, host: str, frame: PaneFrame) -> None:
        cell = self.cells.get(host)
        if cell is not None:
            cell.show(frame)

    def set_gone(self, host: str, why: str) -> None:
        cell = self.cells.get(host)
        if cell is not None:
            cell.set_gone(why)

    def set_state(self, host: str, state: str, last_exit: int | None) -> None:
        cell = self.cells.get(host)
        if cell is not None:
            cell.set_state(state, last_exit)

    def highlighted(self) -> str | None:
        """The cell with focus, if any."""
        focused = self.screen.focused if self.is_attached else None
        return focused.host if isinstance(focused, HostCell) else None


__all__ = ["HostCell", "MirrorGrid", "host_of"]

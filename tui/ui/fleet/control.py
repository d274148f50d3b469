"""The app's fleet: the host list, the grid of hosts' panes, and which host is focused.

A session on a fleet shows a host list beside the tool stream and, in the mirror panel, a
grid with every host's live pane. Focusing a host (Enter or a click on its cell, f7 on the
highlighted one) shows its pane full-size in the mirror, where ctrl+t takes its keyboard as
for one host; f7 again goes back to the grid. A session on one target shows none of this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.ui.fleet.grid import MirrorGrid, host_of
from tui.ui.fleet.hosts import HostList

if TYPE_CHECKING:
    from textual.widget import Widget

    from tui.events import FleetHostState
    from tui.session_api import SessionAPI
    from tui.ui.host import AppHost
    from tui.ui.mirror.pane import PaneFrame
    from tui.ui.pane_control import PaneControl

FOCUS_KEY = "f7"


class FleetView:
    """Feeds the host list and the grid, and moves the full-size mirror between hosts.

    Args:
        host: The app.
        panes: The full-size mirror's control (it follows the focused host).
        hosts: The host list widget (in the tool row).
        right: The right column (gets ``-fleet`` so the host list shows).
    """

    def __init__(self, host: AppHost, panes: PaneControl, hosts: HostList, right: Widget) -> None:
        self.host = host
        self.panes = panes
        self.hosts = hosts
        self.right = right
        self.grid: MirrorGrid | None = None
        self.names: list[str] = []
        self.focused: str | None = None
        """The host whose pane the full-size mirror shows (the default host at first)."""
        self.frames: dict[str, PaneFrame] = {}
        """Each host's latest frame (what the full-size mirror shows when it is focused)."""
        self.gone: dict[str, str] = {}
        """Hosts whose pane went with its tmux session or server since their last frame: why."""

    @property
    def active(self) -> bool:
        return bool(self.names)

    @property
    def showing_grid(self) -> bool:
        return self.active and self.host.mirror.has_class("-grid")

    def attach(self, session: SessionAPI) -> None:
        """Show the fleet of ``session`` (nothing for a session on one target)."""
        self.names = session.fleet_hosts
        self.focused = session.default_host
        self.panes.fleet_host = None
        self.right.set_class(self.active, "-fleet")
        if not self.active:
            return
        self.hosts.set_hosts(self.names)
        if self.grid is None:
            self.grid = MirrorGrid(id="mirror-grid")
            self.host.mirror.mount(self.grid)
        self.grid.set_hosts(self.names)
        self.host.mirror.add_class("-grid")
        self.host.mirror.refresh_titles(None)
        session.announce_fleet()
        self.host.run_worker(
            session.start_fleet_mirrors,
            name="_fleet_mirrors",
            group="pane-pump",
            exit_on_error=False,
            description="a pane mirror per fleet host",
        )

    # -- events ------------------------------------------------------------------------------

    def host_state(self, event: FleetHostState) -> None:
        self.hosts.apply(event)
        if self.grid is not None:
            self.grid.set_state(event.host, event.state, event.last_exit)

    def frame(self, frame: PaneFrame) -> bool:
        """Keep ``frame`` for its host's cell; True when the full-size mirror shows it too."""
        if not self.active:
            return True
        name = host_of(frame.actor) or self.focused or ""
        self.frames[name] = frame
        self.gone.pop(name, None)
        if self.grid is not None:
            self.grid.show(name, frame)
        return name == self.focused

    def pane_gone(self, actor: str, why: str) -> None:
        """A host's pane went with its tmux session or server: its cell says so."""
        if not self.active:
            return
        name = host_of(actor) or self.focused or ""
        self.gone[name] = why
        if self.grid is not None:
            self.grid.set_gone(name, why)

    def follows(self, actor: str) -> bool:
        """A call on ``actor`` moves the full-size mirror only on the focused host."""
        return not self.active or host_of(actor) == self.focused

    # -- the person's choice -----------------------------------------------------------------

    def choose(self, name: str) -> None:
        """Show ``name``'s pane full-size (its keyboard is then ctrl+t's)."""
        if name not in self.names:
            return
        session = self.host.session
        self.focused = name
        self.panes.focus_host(None if name == session.default_host else name)
        frame = self.frames.get(name)
        if frame is not None:
            self.panes.show(frame)
            if name in self.gone:
                self.host.mirror.set_gone(self.gone[name])
        self.host.mirror.remove_class("-grid")
        self.host.panels.show_mirror()
        self.host.mirror.refresh_titles(f"host {name} · {FOCUS_KEY} back to the grid")

    def toggle(self) -> None:
        """f7: the highlighted (or focused) host full-size, or back to the grid."""
        if not self.active:
            self.host.notify("no fleet: one target, one pane", severity="warning")
            return
        if not self.showing_grid:
            if self.panes.holding:
                self.panes.release()
            self.host.mirror.add_class("-grid")
            self.host.mirror.refresh_titles(None)
            return
        chosen = (self.grid.highlighted() if self.grid else None) or self.focused
        if chosen is not None:
            self.choose(chosen)


__all__ = ["FOCUS_KEY", "FleetView"]

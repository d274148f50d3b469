"""The session's pane: what the app may ask of the tmux pane the agent's commands run in.

``AgentSession`` answers every pane question of ``SessionAPI`` here (frames, size, the
person's keys, the tmux session behind the pane, a fleet's hosts and their mirrors), so the
app never holds a backend. A backend offers the pane by answering ``TmuxPane``
(``tui.exec.tmux_pane``), asked once through ``tmux_pane``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from tui.exec.tmux_pane import TmuxPane, TypedKind, tmux_pane
from tui.session_api import KeysNotSent, PaneSession, Typed

if TYPE_CHECKING:
    from tui.bus import EventBus
    from tui.exec.backend import ExecutionBackend
    from tui.exec.fleet.fleet import Fleet
    from tui.exec.fleet.mirrors import HostMirrors
    from tui.exec.tmux.mirror import PaneMirror


def coalesce(items: Sequence[Typed]) -> list[Typed]:
    """Join runs of text, so a burst of typing is one send; never reorders anything."""
    merged: list[Typed] = []
    for item in items:
        if item.kind == "text" and merged and merged[-1].kind == "text":
            merged[-1] = Typed("text", merged[-1].data + item.data)
        else:
            merged.append(item)
    return merged


TypedSink = Callable[[str, TypedKind, str], Awaitable[None]]
"""Where typed things go, ``(pane id, kind, data)``: a pane's ``TmuxPane.send_typed``."""


async def forward(send: TypedSink, pane_id: str, items: Sequence[Typed]) -> None:
    """Send ``items`` to the pane in order, runs of text joined; the person is at the
    keyboard: no shared-shell guard, no policy (``TmuxPane.send_typed``).

    Raises:
        KeysNotSent: a send failed; nothing after it was sent, so nothing arrives out of
            order.
    """
    batch = coalesce(items)
    for index, item in enumerate(batch):
        try:
            await send(pane_id, item.kind, item.data)
        except Exception as error:
            raise KeysNotSent(error, batch[index:]) from error


class SessionPane:
    """``AgentSession``'s pane and fleet methods (a part of its class, not an object of its
    own: the attributes below are the session's)."""

    _backend: ExecutionBackend
    _bus: EventBus
    _fleet: Fleet | None
    _pane_pump: PaneMirror | None
    _fleet_mirrors: HostMirrors | None

    def _pane(self, host: str | None = None) -> TmuxPane | None:
        """The target's tmux pane, or an opened fleet host's; None where there is no tmux."""
        backend: ExecutionBackend | None = self._backend
        if host is not None and self._fleet is not None:
            opened = self._fleet.opened(host)
            backend = opened.backend if opened is not None else None
        return tmux_pane(backend) if backend is not None else None

    def has_pane(self, host: str | None = None) -> bool:
        """The target (or the fleet's ``host``) runs commands in a tmux pane."""
        return self._pane(host) is not None

    async def start_pane_mirror(self) -> None:
        """Frames of the agent's tmux pane onto the bus (``PaneSnapshot``), for the mirror."""
        from tui.exec.tmux.mirror import PaneMirror

        pane = self._pane()
        if pane is None:
            return
        await self.stop_pane_mirror()
        pump = PaneMirror(pane, self._bus.publish)
        self._pane_pump = pump
        await pump.start()

    def refresh_pane_mirror(self) -> None:
        """Take a frame now (the pane was resized)."""
        if self._pane_pump is not None:
            self._pane_pump.refresh()

    async def stop_pane_mirror(self) -> None:
        pump, self._pane_pump = self._pane_pump, None
        if pump is not None:
            await pump.close()

    async def resize_pane(self, pane_id: str, columns: int, rows: int) -> None:
        """Give ``pane_id`` (and its window) the mirror box's size; nothing on a pane that is
        not ours to size."""
        pane = self._pane()
        if pane is not None:
            await pane.resize_pane(pane_id, columns, rows)

    async def send_to_pane(self, host: str | None, pane_id: str, items: Sequence[Typed]) -> None:
        """The person's keys during a take-over, in order (see ``forward``).

        Raises:
            KeysNotSent: a send failed, or no pane takes keys there.
        """
        pane = self._pane(host)
        if pane is None:
            where = f"host {host}" if host is not None else self._backend.actor
            raise KeysNotSent(LookupError(f"no tmux pane on {where}"), list(items))
        await forward(pane.send_typed, pane_id, items)

    async def pane_session(self) -> PaneSession | None:
        """The tmux session of the agent's shell, how to attach to it, whether it is kept."""
        pane = self._pane()
        if pane is None:
            return None
        kept = await pane.is_kept()
        return PaneSession(pane.default_session, pane.attach_command(), kept)

    async def keep_pane(self, keep: bool) -> PaneSession | None:
        """``/pane keep`` / ``/pane close``: the session as it now stands; None without one."""
        pane = self._pane()
        if pane is None:
            return None
        await pane.set_kept(keep)
        return PaneSession(pane.default_session, pane.attach_command(), keep)

    async def user_pane(self) -> str | None:
        """One line on the person's own tmux pane; None when agent-tui is not inside tmux."""
        from tui.exec.tmux.sessions import user_pane  # libtmux only when asked

        return await user_pane()

    # -- a fleet: the host list and a mirror per host -------------------------------------------

    @property
    def fleet_hosts(self) -> list[str]:
        """The fleet's hosts in inventory order (empty: one target)."""
        return list(self._fleet.inventory.hosts) if self._fleet is not None else []

    @property
    def default_host(self) -> str | None:
        return self._fleet.default_host if self._fleet is not None else None

    def announce_fleet(self) -> None:
        """Publish every host's state now (a host list that starts listening after them)."""
        if self._fleet is not None:
            self._fleet.publish = self._bus.publish
            self._fleet.announce()

    async def start_fleet_mirrors(self) -> None:
        """Frames of every fleet host's tmux pane, each host's as it opens."""
        if self._fleet is not None and self._fleet_mirrors is None:
            from tui.exec.fleet.mirrors import HostMirrors

            self._fleet_mirrors = HostMirrors(self._fleet, self._bus.publish)
            await self._fleet_mirrors.start()

    async def stop_fleet_mirrors(self) -> None:
        mirrors, self._fleet_mirrors = self._fleet_mirrors, None
        if mirrors is not None:
            await mirrors.stop()

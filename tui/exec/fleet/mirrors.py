"""A live mirror of every fleet host's tmux pane but the default host's (whose frames come
from the session's own pane mirror), each started as its host opens."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tui.events import Event
from tui.exec.backend import ExecutionBackend
from tui.exec.fleet.fleet import Fleet
from tui.exec.tmux.mirror import PaneMirror
from tui.exec.tmux_pane import tmux_pane

HOST_FRAME_RATE = 10.0
"""Frames a second of a host's cell in the grid: many small cells, none followed closely."""


@dataclass
class HostMirrors:
    fleet: Fleet
    publish: Callable[[Event], None]
    pumps: dict[str, PaneMirror] = field(default_factory=dict)
    _background: set[asyncio.Future[None]] = field(default_factory=set)

    async def start(self) -> None:
        """Mirror the hosts open now, and each host that opens later (inside a call)."""
        for name in self.fleet.links:
            opened = self.fleet.opened(name)
            if opened is not None:
                await self._mirror(name, opened.backend)
        self.fleet.on_opened = lambda name, opened: self._later(self._mirror(name, opened.backend))

    def _later(self, work: Awaitable[None]) -> None:
        """Run ``work`` beside the caller (a host opened inside a call): kept until done."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _mirror(self, name: str, backend: ExecutionBackend) -> None:
        pane = tmux_pane(backend)
        if name == self.fleet.default_host or name in self.pumps or pane is None:
            return
        pump = PaneMirror(pane, self.publish, max_rate=HOST_FRAME_RATE)
        self.pumps[name] = pump
        await pump.start()

    async def stop(self) -> None:
        pumps, self.pumps = self.pumps, {}
        self.fleet.on_opened = None
        for pump in pumps.values():
            await pump.close()

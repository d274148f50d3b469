"""The pane mirror: a live, coloured picture of the pane the agent last used.

The UI cannot attach a tmux client inside a Textual app, so it gets frames instead: each
``%output`` of the followed pane marks the screen dirty, and a single pump task turns dirty
into one ``capture-pane -e`` plus cursor and size (one pipelined round trip), published as a
``PaneSnapshot``. Output that arrives while a frame is being taken or within ``1/max_rate``
seconds of the last one only keeps the flag set, so a flood costs at most ``max_rate``
captures a second, and the last frame after the flood is always taken.

The mirror follows the pane the agent acts on (``add_use_listener``). It works on any
``TmuxPane``; what the person types in a take-over goes to the pane through the session, not
through the mirror.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from tui.events import Event, PaneSnapshot
from tui.exec.backend import BackendError
from tui.exec.tmux_pane import TmuxPane

log = logging.getLogger(__name__)

Publish = Callable[[Event], None]


class PaneMirror:
    """Publishes ``PaneSnapshot``s of one pane, following the agent's last-used pane.

    Args:
        backend: The backend whose panes are mirrored.
        publish: Where frames go (the session bus's ``publish``).
        max_rate: Frames per second at most.
        follow: Switch to whichever pane the agent uses next.
        loop_id: Stamped on the events (which agent loop the pane belongs to).
    """

    def __init__(
        self,
        backend: TmuxPane,
        publish: Publish,
        *,
        max_rate: float = 30.0,
        follow: bool = True,
        loop_id: str = "main",
    ) -> None:
        self.backend = backend
        self.publish = publish
        self.min_interval = 1.0 / max_rate
        self.follow_agent = follow
        self.loop_id = loop_id
        self.pane_id: str | None = None
        self.frames = 0
        self._dirty = asyncio.Event()
        self._last = 0.0
        self._pump: asyncio.Task[None] | None = None
        self._remove_output: Callable[[], None] | None = None
        self._remove_use: Callable[[], None] | None = None
        self._remove_gone: Callable[[], None] | None = None
        self._closed = False

    async def start(self, pane_id: str | None = None) -> None:
        """Mirror ``pane_id`` (default: the agent's last pane, else the shared one)."""
        if self.follow_agent and self._remove_use is None:
            self._remove_use = self.backend.add_use_listener(self.follow)
        if self._remove_gone is None:
            self._remove_gone = self.backend.add_gone_listener(self._on_gone)
        if pane_id is None:
            pane_id = self.backend.last_pane or self.backend.default_pane
        if pane_id is None:
            await self.backend.start()
            pane_id = self.backend.default_pane
        if pane_id is not None:
            self.follow(pane_id)
        if self._pump is None:
            self._pump = asyncio.ensure_future(self._run())

    def follow(self, pane_id: str) -> None:
        """Mirror ``pane_id`` from now on; a first frame of it is taken at once."""
        if pane_id == self.pane_id or self._closed:
            return
        if self._remove_output is not None:
            self._remove_output()
        self.pane_id = pane_id
        self._remove_output = self.backend.add_output_listener(pane_id, self._on_output)
        self._dirty.set()

    def refresh(self) -> None:
        """Take a frame soon even without output (after a resize, say)."""
        self._dirty.set()

    def _on_output(self, data: bytes) -> None:
        self._dirty.set()

    def _on_gone(self, pane_id: str, why: str) -> None:
        """The followed pane went with its session or server: the mirror is told (it keeps
        its last frame), and keeps listening: the next pane may well take the same id."""
        if pane_id != self.pane_id or self._closed:
            return
        self.publish(
            PaneSnapshot(
                pane_id=pane_id,
                actor=self.backend.pane_actor(pane_id),
                sandbox=self.backend.sandbox_label(pane_id),
                gone=why,
                loop_id=self.loop_id,
            )
        )

    async def _run(self) -> None:
        while not self._closed:
            await self._dirty.wait()
            wait = self._last + self.min_interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)  # rate limit: later output joins this frame
            self._dirty.clear()
            pane_id = self.pane_id
            if pane_id is None:
                continue
            self._last = time.monotonic()
            try:
                screen = await self.backend.snapshot(pane_id)
            except BackendError as error:
                log.debug("mirror: no frame of %s: %s", pane_id, error)
                continue
            except Exception:
                log.exception("mirror: frame of %s failed", pane_id)
                continue
            if pane_id != self.pane_id:
                continue  # switched panes while capturing: the new one is already dirty
            self.frames += 1
            self.publish(
                PaneSnapshot(
                    pane_id=pane_id,
                    actor=self.backend.pane_actor(pane_id),
                    lines=screen.lines,
                    cursor_x=screen.cursor_x,
                    cursor_y=screen.cursor_y,
                    width=screen.width,
                    height=screen.height,
                    sandbox=self.backend.sandbox_label(pane_id),
                    loop_id=self.loop_id,
                )
            )

    async def close(self) -> None:
        self._closed = True
        for remove in (self._remove_use, self._remove_gone):
            if remove is not None:
                remove()
        if self._remove_output is not None:
            self._remove_output()
        if self._pump is not None:
            self._pump.cancel()
            try:
                await self._pump
            except asyncio.CancelledError:
                pass

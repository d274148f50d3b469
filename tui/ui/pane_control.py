"""Which pane the mirror follows, its size, and the person's take-over of its keyboard.

The mirror shows the pane the agent last acted on (or the one ``/pane`` names); the pane is
kept at the mirror box's size. Ctrl+T hands the person the pane's keyboard: every key then
goes straight to tmux, in order, until Ctrl+] gives it back. A key tmux does not take is said
once per take-over and never ends it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tui.session_api import KeysNotSent, Typed
from tui.ui.mirror.pane_size import PaneSizeFollower

if TYPE_CHECKING:
    from tui.session_api import SessionAPI
    from tui.ui.host import AppHost
    from tui.ui.mirror.pane import PaneFrame

PANE_IN_ACTOR = re.compile(r"tmux:(%\d+)")
"""The pane id in a tool call's actor (``ssh:host/tmux:%3``)."""
KEPT_FRAMES = 16


class PaneControl:
    """The followed pane, its frames, its size and who has its keyboard.

    Args:
        host: The app (its mirror, chat, status bar, panels and workers).
    """

    def __init__(self, host: AppHost) -> None:
        self.host = host
        self.holding = False
        """The person has the pane's keyboard."""
        self.target: str | None = None
        """The pane the mirror shows."""
        self.pinned = False
        """The person chose ``target`` (``/pane %3``): frames of others do not move it."""
        self.frames: dict[str, PaneFrame] = {}
        """The last frame of each pane seen (at most ``KEPT_FRAMES``)."""
        self.fleet_host: str | None = None
        """The fleet host whose pane the mirror shows (None: the session's default target)."""
        self._keys: list[Typed] = []
        self._sending = False
        self._keys_failing = False
        self._sizer: PaneSizeFollower | None = None

    # -- following -------------------------------------------------------------------------

    def attach(self, session: SessionAPI) -> None:
        """Show what ``session``'s target allows: frames, the pane's size following the box."""
        mirror = self.host.mirror
        if not session.has_pane():
            mirror.set_unavailable(f"no tmux pane: the backend is {session.actor}")
            return
        mirror.set_unavailable(None)
        self.host.run_worker(
            session.start_pane_mirror,
            name="_start_pane_pump",
            group="pane-pump",
            exclusive=True,
            exit_on_error=False,
            description="pane frames",
        )
        self._sizer = PaneSizeFollower(
            session.resize_pane, on_resized=self._resized, on_error=self._resize_failed
        )
        self.fit()

    def agent_acted(self, actor: str) -> None:
        """A tool call started on ``actor``: follow its pane, if it has one."""
        match = PANE_IN_ACTOR.search(actor)
        if match:
            self.select(match.group(1))

    def select(self, pane_id: str, *, pinned: bool = False) -> None:
        self.pinned = pinned
        if self.target == pane_id:
            return
        self.target = pane_id
        frame = self.frames.get(pane_id)
        if frame is not None:
            self.host.mirror.show(frame)
        self.fit()

    def show(self, frame: PaneFrame) -> None:
        """A new frame of some pane: kept, and shown if it is the followed one."""
        self.frames[frame.pane_id] = frame
        if len(self.frames) > KEPT_FRAMES:
            del self.frames[next(iter(self.frames))]
        if self.target is None or (not self.pinned and frame.pane_id != self.target):
            # The mirror's frames follow the pane the agent types into, which can be a window
            # other than the one its call named (a command approved with other walls).
            self.target = frame.pane_id
        mirror = self.host.mirror
        if frame.pane_id == self.target:
            mirror.show(frame)
            if (frame.width, frame.height) != mirror.inner_size():
                self.fit()

    def gone(self, pane_id: str, why: str) -> None:
        """The followed pane went with its session or server: its last frame stays, marked,
        until the next pane's first frame; a take-over of it ends."""
        if pane_id != self.target:
            return
        if self.holding:
            self.release(
                f"tmux {pane_id}, which you held, is gone ({why}); the agent's next command "
                "starts a fresh pane"
            )
        else:
            self.host.chat.add_notice(
                f"the agent's tmux pane {pane_id} is gone ({why}); its next command starts a "
                "fresh one",
                level="warning",
            )
        self.host.mirror.set_gone(why)

    def focus_host(self, host: str | None) -> None:
        """Follow ``host``'s panes from now on (a fleet; None: the default target's)."""
        if host == self.fleet_host:
            return
        self.release()
        self.fleet_host = host
        self.frames.clear()
        self.target = None
        self.pinned = False

    def fit(self) -> None:
        """The followed pane takes the mirror box's inner size (debounced, at least 20x5)."""
        if self.fleet_host is not None:
            return  # another fleet host's pane keeps its own size (the grid shows it small)
        if self._sizer is not None and self.target is not None:
            self._sizer.request(self.target, *self.host.mirror.inner_size())

    def _resized(self, pane_id: str) -> None:
        self.host.session.refresh_pane_mirror()

    def _resize_failed(self, error: Exception) -> None:
        self.host.notify(
            f"could not resize the pane to the mirror: {error}", severity="warning", markup=False
        )

    async def close(self) -> None:
        if self._sizer is not None:
            await self._sizer.close()

    # -- the person's keyboard -------------------------------------------------------------

    def take(self) -> None:
        host = self.host
        session = host.session
        if not session.has_pane(self.fleet_host):
            host.notify(
                f"no tmux pane: the backend is {session.actor}", severity="warning", markup=False
            )
            return
        if self.target is None:
            host.notify("no pane yet: the agent has not used one", severity="warning")
            return
        host.panels.show_mirror()
        self.holding = True
        self._keys_failing = False
        host.refresh_bindings()
        host.mirror.set_holding(True)
        host.status.set(holding_pane=True)
        host.chat.add_notice(
            f"you have the keyboard of tmux {self.target}; ctrl+] gives it back",
            level="warning",
        )

    def release(self, said: str | None = None) -> None:
        """Give the keyboard back; ``said``: what the chat says instead of the usual line."""
        if not self.holding:
            return
        host = self.host
        self.holding = False
        host.refresh_bindings()
        host.mirror.set_holding(False)
        host.status.set(holding_pane=False)
        host.chat.add_notice(said or f"the agent has the keyboard of tmux {self.target} again")
        host.prompt.focus()

    def typed(self, keys: list[Typed]) -> None:
        if not self.holding:
            return
        self._keys.extend(keys)
        if not self._sending:
            self._sending = True
            self.host.run_worker(
                self._send,
                name="_send_pane_keys",
                group="pane-keys",
                exit_on_error=False,
                description="forward keys to the tmux pane",
            )

    async def _send(self) -> None:
        """Send what was typed, in order; a failure is said once per take-over, never ends it."""
        session = self.host.session
        try:
            while self._keys and self.target is not None:
                batch = list(self._keys)
                self._keys.clear()
                try:
                    await session.send_to_pane(self.fleet_host, self.target, batch)
                except KeysNotSent as failed:
                    if not self._keys_failing:
                        self._keys_failing = True
                        self.host.chat.add_error(
                            "keys not sent",
                            f"tmux {self.target} did not take {len(failed.unsent)} of "
                            f"the keys you typed: {failed.error}. You still have its keyboard; "
                            "ctrl+] gives it back.",
                        )
        finally:
            self._sending = False

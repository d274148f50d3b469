"""TmuxBackend: commands typed into a tmux pane the person can watch and take over.

It wraps a HOST backend (this machine, a container or an SSH host) and never runs tmux
itself: it starts ``tmux -C`` control clients through ``host.spawn``, one per managed session
(tmux sends a client ``%output`` only for panes of the session it is attached to). Files
never go through a pane: ``read_file``/``write_file`` are the host's.

A command's life: guard it (``guard``), check the pane is at its prompt and not in copy mode,
paste the text (``paste-buffer -p``: bracketed where the shell asked for it, so tabs and
newlines are not keystrokes), press Enter, and wait for the end marker in the pane's
``%output`` (``markers``). Nothing polls: the reader task wakes the waiter the moment the
marker arrives. On timeout the command is left running, since a person may want it, and the
result says how to recover. A shared pane or server that disappeared is recreated and set up
again, and every result of that call says so.

The class is written in four parts, one a file, all on the same state: ``shared`` (settings,
control clients, managed panes, the shared session and pane, targets, pane output), ``jobs``
(commands), ``pane_io`` (screens and keys) and ``managed`` (the tools' sessions and panes).
This file holds what concerns the whole: starting, the sandbox of the panes' shells, the
session kept or not, and closing. It is the ``TmuxPane`` of ``tui.exec.tmux_pane``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tui.exec.backend import BackendError
from tui.exec.tmux.instances import ending_sessions
from tui.exec.tmux.jobs import PaneJobs
from tui.exec.tmux.managed import ManagedPanes
from tui.exec.tmux.pane_io import PaneIO
from tui.exec.tmux.server import forget_server, kill_sessions, stop_panes
from tui.exec.tmux.sessions import is_kept, set_kept

if TYPE_CHECKING:
    from tui.exec.tmux_pane import TmuxPane

log = logging.getLogger(__name__)


class TmuxBackend(PaneJobs, PaneIO, ManagedPanes):
    """Runs commands in a shared tmux pane on ``host``; see the module docstring and, for its
    arguments, ``SharedShell``."""

    async def start(self) -> list[str]:
        """Connect (starting tmux and the shared pane if needed); the notices it produced."""
        notices = self._take_notices()
        await self.ensure_started(notices)
        await self._shared_pane(notices)
        return notices + self._take_notices()

    async def refresh_sandbox(self) -> list[str]:
        """Restart the shared pane's shell if the mode's walls changed; what was said."""
        if not self._shells.active:
            return []
        return await self.start()

    def sandbox_label(self, pane_id: str | None = None) -> str | None:
        """Which sandbox the shell of ``pane_id`` (default: the shared pane) runs in."""
        if not self._shells.active:
            return None if self.sandbox is None else "no sandbox"
        pane = self._panes.get(pane_id or self.default_pane or "")
        walls = pane.confinement if pane is not None else None
        return walls.label if walls is not None else "sandbox unknown"

    async def set_kept(self, kept: bool) -> None:
        """Keep the session after quit (re-attached at the next start here), or not."""
        await set_kept(await self._primary(), self.default_session, kept)

    async def is_kept(self) -> bool:
        return await is_kept(await self._primary(), self.default_session)

    async def close(self) -> None:
        """Close our own session unless kept (``own_session``); detach our control clients."""
        self._panes.stop_checking()
        if self.own_session and self._started_once:
            try:
                ending = await ending_sessions(
                    self.place, self.owner, [self.default_session, *sorted(self.created_sessions)]
                )
                # First whatever runs in their panes, detached jobs too: they outlive a kill.
                await stop_panes(self.place, ending)
                await kill_sessions(
                    self.place, ending, client=self._clients.known(self.default_session)
                )
                if ending and not self.take_turns:  # a server of its own: nothing else there
                    await forget_server(self.place)
            except (BackendError, OSError) as error:
                log.warning("could not close tmux session %s: %s", self.default_session, error)
        await self._clients.close()
        self._panes.close("the backend was closed")
        self._shells.close()


if TYPE_CHECKING:
    _IS_A_TMUX_PANE: type[TmuxPane] = TmuxBackend
    """mypy holds the backend to ``TmuxPane``, member by member."""

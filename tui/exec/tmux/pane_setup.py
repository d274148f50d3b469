"""Setting a pane up: teach its shell the marker protocol and learn what it can do.

A pane becomes a ``ManagedPane`` only once its shell answered the set-up line (``markers``):
its kind (bash, zsh, sh), its marker nonce (kept in a pane option, so a later agent reuses
it), whether bash has ``PS0`` (4.4+) or needs the ``__atui_go;`` prefix, and on a local host
the shell's pid (what a cancel sweeps). The set-up line wipes its own echo: the whole screen of
a pane we made, only the rows it was typed on in a pane a person may have been using.
"""

from __future__ import annotations

import asyncio
import re
import time

from tui.exec.backend import BackendError
from tui.exec.tmux import orphans
from tui.exec.tmux.clients import ClientPool
from tui.exec.tmux.control import ControlClient, TmuxCommandError
from tui.exec.tmux.keyboard import type_command
from tui.exec.tmux.markers import (
    MAX_MARKER_BYTES,
    ShellKind,
    bootstrap_line,
    detect_shell,
    find_markers,
    new_nonce,
    prompt_row,
    shell_kind_of,
)
from tui.exec.tmux.pane_shells import PaneShells
from tui.exec.tmux.panes import ManagedPane, PaneRegistry, pane_status
from tui.exec.tmux.prompt import PromptWatch
from tui.exec.tmux.sessions import NONCE_OPTION

SETUP_TIMEOUT = 15.0
"""Seconds for a new pane's shell to start and answer the set-up line (slow rc files)."""


class MarkerWatch:
    """Collects the markers a pane prints while its shell is being set up."""

    def __init__(self, nonce: str) -> None:
        self.nonce = nonce
        self.data = bytearray()
        self.markers: list[tuple[int, int | None]] = []
        self._processed = 0
        self._changed = asyncio.Event()

    def feed(self, chunk: bytes) -> None:
        begin = max(0, len(self.data) - MAX_MARKER_BYTES)
        self.data += chunk
        for marker in find_markers(bytes(self.data[begin:]), self.nonce):
            if marker.start + begin >= self._processed:
                self._processed = marker.end + begin
                self.markers.append((marker.id, marker.exit_code))
                self._changed.set()
        if len(self.data) > 1 << 16:
            drop = len(self.data) - 4096
            del self.data[:drop]
            self._processed = max(0, self._processed - drop)

    async def wait_end(self, deadline: float) -> tuple[int, int]:
        """``(id, exit code)`` of the first end marker."""
        while True:
            for marker_id, exit_code in self.markers:
                if exit_code is not None:
                    return marker_id, exit_code
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            await asyncio.wait_for(self._changed.wait(), remaining)


class PaneSetup:
    """Turns a tmux pane into a ``ManagedPane`` of ``panes``.

    Args:
        clients: The control clients (the pane's session's client does the set-up).
        panes: Where the set-up pane is registered.
        shell: The command new panes run (its kind is trusted for panes we created).
        local_host: The host is this machine: the shell's pid is learnt for cancels.
        notices: Where to say what an earlier agent left running in a reused pane.
    """

    def __init__(
        self,
        clients: ClientPool,
        panes: PaneRegistry,
        *,
        shell: str | None,
        local_host: bool,
        notices: list[str],
    ) -> None:
        self.clients = clients
        self.panes = panes
        self.shell = shell
        self.local_host = local_host
        self.notices = notices

    async def set_up(self, pane_id: str, session: str, *, created: bool) -> None:
        """Teach the pane's shell the marker protocol (idempotent) and learn its capabilities."""
        client = await self.clients.client(session)
        status = await pane_status(client, pane_id)
        if status is None:
            raise BackendError(f"pane {pane_id} is gone")
        kind = (shell_kind_of(self.shell) if created and self.shell else None) or detect_shell(
            status.command
        )
        if kind is None and created:
            kind = await _default_shell_kind(client)
        if kind is None:
            raise BackendError(f"pane {pane_id} runs `{status.command}`, not a shell we know")
        (stored,) = await client.command(f"display-message -p -t {pane_id} '#{{{NONCE_OPTION}}}'")
        nonce = stored.strip() if re.fullmatch(r"[0-9a-f]{8}", stored.strip()) else new_nonce()
        await client.command(f"set-option -p -t {pane_id} {NONCE_OPTION} {nonce}")
        pane = ManagedPane(pane_id, session, kind, nonce, prefix_start=kind is ShellKind.SH)
        pane.confinement = await PaneShells.read_tag(client, pane_id)
        pane.prompt = PromptWatch(nonce)
        if self.local_host:
            pane.shell_pid = await orphans.shell_pid(client, pane_id)
        watch = MarkerWatch(nonce)
        pane.watchers.append(watch.feed)
        self.panes.add(pane)
        deadline = time.monotonic() + SETUP_TIMEOUT
        try:
            line = await _bootstrap(client, pane_id, kind, nonce, created=created)
            await type_command(client, pane_id, line, clear=True)
            _, status_code = await watch.wait_end(deadline)
            if kind is ShellKind.BASH:
                # PS0 needs bash 4.4; older ones get the sh-style start marker instead.
                pane.prefix_start = status_code != 0
            if created:
                await client.command(f"clear-history -t {pane_id}")
            elif left := await orphans.leftovers(pane.shell_pid):
                self.notices.append(
                    f"still running in the agent's pane {pane_id} from before: {left}"
                )
        except TimeoutError:
            self.panes.pop(pane_id)
            raise BackendError(
                f"the shell in pane {pane_id} ({status.command}) did not answer the set-up "
                f"within {SETUP_TIMEOUT:g} s"
            ) from None
        except BaseException:
            self.panes.pop(pane_id)
            raise
        finally:
            pane.watchers.remove(watch.feed)


async def _bootstrap(
    client: ControlClient, pane_id: str, kind: ShellKind, nonce: str, *, created: bool
) -> str:
    """The set-up line, wiping its own echo: the whole screen of a pane we made, only the
    rows it was typed on in a pane a person may have been using."""
    if created:
        return bootstrap_line(kind, nonce, clear=True)
    (line,) = await client.command(
        f"display-message -p -t {pane_id} "
        "'#{cursor_x} #{cursor_y} #{pane_width} #{pane_height}'"
    )
    numbers = [int(n) for n in line.split() if n.isdigit()]
    if len(numbers) != 4:
        return bootstrap_line(kind, nonce)
    probe = bootstrap_line(kind, nonce, erase_from=999)
    row = prompt_row(probe, *numbers)
    return bootstrap_line(kind, nonce, erase_from=row)


async def _default_shell_kind(client: ControlClient) -> ShellKind | None:
    """The kind of tmux's ``default-shell``, which a pane made without a command runs."""
    try:
        (line,) = await client.command("show-options -gv default-shell")
    except (TmuxCommandError, ValueError):
        return None
    return detect_shell(line)

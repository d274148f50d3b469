"""A pane's shell: what a new pane runs (inside its walls), and teaching it the markers.

The watched shell lives on between commands, so whatever one command leaves in it (aliases,
functions, ``PROMPT_COMMAND``, ``PATH``, background jobs) runs again later. Starting the shell
itself inside the sandbox makes that harmless: nothing it runs can do more than its walls let
it. Every pane is tagged with its walls (``@agent_tui_sandbox``), and a command is only typed
into a pane whose walls are no wider than what the command was approved for (``PaneShells``).

A pane becomes a ``ManagedPane`` only once its shell answered the set-up line (``markers``):
its kind (bash, zsh, sh), its marker nonce (kept in a pane option, so a later agent reuses
it), whether bash has ``PS0`` (4.4+) or needs the ``__atui_go;`` prefix, and on a local host
the shell's pid (what a cancel sweeps). The set-up line wipes its own echo: the whole screen of
a pane we made, only the rows it was typed on in a pane a person may have been using
(``PaneShells.set_up``).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import re
import shlex
import time

from tui.exec.backend import BackendError
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.tmux.control import ControlClient, TmuxCommandError, quote, type_command
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
from tui.exec.tmux.panes import (
    ManagedPane,
    PaneRegistry,
    PromptWatch,
    left_running,
    pane_status,
    shell_pid,
)
from tui.exec.tmux.sessions import NONCE_OPTION
from tui.security.confinement import Confinement

SANDBOX_OPTION = "@agent_tui_sandbox"
"""A pane's walls (``Confinement.key``), so a later agent re-attaching knows them too."""


def login_shell() -> list[str]:
    """The person's own shell as a login shell, as tmux would start it."""
    shell = os.environ.get("SHELL") or ""
    if not shell:
        try:
            shell = pwd.getpwuid(os.getuid()).pw_shell
        except KeyError:
            shell = ""
    return [shell or "/bin/sh", "-l"]


class PaneShells:
    """Builds each new pane's command line, checks a pane against a call's walls, and sets a
    pane's shell up for commands.

    Args:
        shell: The shell command line panes run (``bash --norc``); None: the login shell.
            Its kind is trusted for panes we created.
        sandbox: The session's sandbox; None or inactive: panes run ``shell`` as it is.
        panes: Where a set-up pane is registered.
        local_host: The host is this machine: a shell's pid is learnt for cancels.
        notices: Where to say what an earlier agent left running in a reused pane.
    """

    def __init__(
        self,
        shell: str | None,
        sandbox: Sandbox | None,
        panes: PaneRegistry,
        *,
        local_host: bool,
        notices: list[str],
    ) -> None:
        self.shell = shell
        self.sandbox = sandbox
        self.panes = panes
        self.local_host = local_host
        self.notices = notices

    @property
    def active(self) -> bool:
        return self.sandbox is not None and self.sandbox.active

    def base(self) -> Confinement | None:
        """The shared pane's walls in the session's mode now (None: no sandbox)."""
        return self.sandbox.base() if self.sandbox is not None and self.active else None

    async def command(self, confinement: Confinement | None, cwd: str | None) -> str | None:
        """The pane command for ``confinement`` (None: the mode's), or ``shell`` unconfined."""
        if self.sandbox is None or not self.active:
            if self.sandbox is not None and self.sandbox.mode == "required":
                await self.sandbox.wrap(["true"])  # raises: required and not available
            return self.shell
        walls = confinement or self.sandbox.base()
        argv = shlex.split(self.shell) if self.shell else login_shell()
        if walls.outside:
            return shlex.join(argv)
        wrapped = await self.sandbox.wrap(argv, walls, cwd=cwd, terminal=True)
        return "exec " + shlex.join(wrapped)

    @staticmethod
    async def tag(client: ControlClient, pane_id: str, walls: Confinement | None) -> None:
        """Record ``walls`` on the pane (nothing without a sandbox)."""
        if walls is not None:
            await client.command(f"set-option -p -t {pane_id} {SANDBOX_OPTION} {quote(walls.key)}")

    @staticmethod
    async def read_tag(client: ControlClient, pane_id: str) -> Confinement | None:
        (line,) = await client.command(f"display-message -p -t {pane_id} '#{{{SANDBOX_OPTION}}}'")
        return Confinement.from_key(line)

    def check(self, pane_walls: Confinement | None, call: Confinement | None, pane_id: str) -> None:
        """Refuse to type into a pane whose walls are wider than the call was approved for.

        Raises:
            BackendError: the pane is unconfined, confined more loosely, or of unknown walls.
        """
        if not self.active:
            return
        wanted = call or self.base()
        if wanted is None:
            return
        if pane_walls is None:
            raise BackendError(
                f"pane {pane_id} was not started by this agent's sandbox (its walls are unknown): "
                "nothing is typed into it; use the shared pane or one made with tmux_create_pane"
            )
        if not wanted.covers(pane_walls):
            raise BackendError(
                f"pane {pane_id} runs {pane_walls.label}; this call was approved for "
                f"{wanted.label}, so nothing is typed there"
            )

    async def set_up(
        self, client: ControlClient, pane_id: str, session: str, *, created: bool
    ) -> None:
        """Teach the pane's shell the marker protocol (idempotent), learn what it can do and
        register it as a ``ManagedPane``. ``client`` is attached to ``session`` (the pane's:
        only that client hears its output)."""
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
            pane.shell_pid = await shell_pid(client, pane_id)
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
            elif left := await left_running(pane.shell_pid):
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


# -- setting a pane up --------------------------------------------------------------------------

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

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

On this machine a sandboxed pane's shell is started by a few lines of ``sh`` around ``bwrap``
(``PANE_WRAPPER``), with bwrap's ``--json-status-fd`` in a private file: when bwrap gave up
building the walls (a hidden file such as a shell history was being rewritten between the
look-up and the mount) the shell never started, and instead of the pane closing the wrapper
says so in the pane and waits. ``set_up`` then checks the file (no ``exit-code``: nothing ran;
the sandbox cannot write that file), looks the places up again and starts the pane once more
(``respawn-pane``), as the local one-shot commands do (``LocalBackend.run``). On an SSH host
or in a container the host's shell vouches instead, printing the nonce of that start in the
pane (``host_line``), which a shell inside the walls cannot know.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import re
import shlex
import time
from dataclasses import dataclass

from tui.exec.backend import BackendError
from tui.exec.sandbox.bwrap import setup_failed
from tui.exec.sandbox.remote import NOT_STARTED, STATUS_FD, RemoteSandbox
from tui.exec.sandbox.remote import new_nonce as refusal_nonce
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
from tui.scratch import private_folder, remove_private_folder
from tui.security.confinement import Confinement

SANDBOX_OPTION = "@agent_tui_sandbox"
"""A pane's walls (``Confinement.key``), so a later agent re-attaching knows them too."""

NOT_BUILT = "agent-tui: the sandbox could not be built"
"""What a local pane's wrapper prints when bwrap never started the shell (``PANE_WRAPPER``)."""
_NOT_BUILT_SEEN = re.compile(re.escape(NOT_BUILT).encode() + rb" \(start (\d+)\)")
_NOT_STARTED_SEEN = re.compile(rb"agent-tui ([0-9a-f]{32}): " + re.escape(NOT_STARTED.encode()))
"""A remote pane's host shell vouching, with the nonce of its start, that bwrap gave up."""

PANE_WRAPPER = (
    'f=$1; shift; printf \'{"pane": "%s"}\\n\' "$TMUX_PANE" >"$f"; "$@" 3>>"$f"; s=$?; ran=; '
    'while IFS= read -r l || [ -n "$l" ]; do case $l in *\'"exit-code"\'*) ran=1;; esac; '
    'done <"$f"; if [ "$s" = 1 ] && [ -z "$ran" ]; then '
    'printf \'\\n{"bwrap-exit": 1}\\n\' >>"$f"; '
    f"printf '\\r\\n%s (start %s)\\r\\n' '{NOT_BUILT}' \"${{f##*-}}\"; "
    "exec sleep 30; fi; exit $s"
)
"""A local sandboxed pane's process: ``sh -c PANE_WRAPPER agent-tui-pane STATUS BWRAP-ARGV``.

It writes its pane's id into the status file, then runs bwrap (with ``--json-status-fd 3``
appending there) as its child; when bwrap exits 1 without having written ``exit-code`` (the
walls were never built) the wrapper adds its own line to the file, prints ``NOT_BUILT`` and
holds the pane (for 30 s at most) until ``set_up`` starts it again. Any other end ends the
pane as a plain ``exec`` would."""


@dataclass(frozen=True)
class _Start:
    """One wrapped start of a local pane's shell: what to build again if bwrap gave up."""

    walls: Confinement
    cwd: str | None
    status: str
    at: float = 0.0
    """When it was made (``time.monotonic``): a remote start is forgotten after a while."""


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
        self._starts: dict[int, _Start] = {}
        self._remote_starts: dict[str, _Start] = {}
        """A remote pane's starts by the nonce its host shell says a refusal with."""
        self._start_ids = 0
        self._status_dir: str | None = None

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
        if isinstance(self.sandbox, RemoteSandbox):
            nonce = refusal_nonce() if self.sandbox.reports_start else None
            wrapped = await self.sandbox.wrap(
                argv, walls, cwd=cwd, terminal=True, status_fd=STATUS_FD if nonce else None
            )
            if nonce is not None:
                now = time.monotonic()
                for old, start in list(self._remote_starts.items()):
                    if now - start.at > REMOTE_START_KEPT:  # that pane started, or is gone
                        del self._remote_starts[old]
                self._remote_starts[nonce] = _Start(walls, cwd, "", now)
            # The host's login shell may be any (fish …): the covering loop is POSIX sh.
            line = await self.sandbox.shell_line(wrapped, nonce, pane=True)
            return "exec /bin/sh -c " + shlex.quote(line)
        if not self.local_host:
            return "exec " + shlex.join(
                await self.sandbox.wrap(argv, walls, cwd=cwd, terminal=True)
            )
        wrapped = await self.sandbox.wrap(argv, walls, cwd=cwd, terminal=True, status_fd=3)
        if self._status_dir is None:
            self._status_dir = private_folder("panes")
        self._start_ids += 1
        status = os.path.join(self._status_dir, f"start-{self._start_ids}")
        self._starts[self._start_ids] = _Start(walls, cwd, status)
        wrapper = ["/bin/sh", "-c", PANE_WRAPPER, "agent-tui-pane", status]
        return "exec " + shlex.join([*wrapper, *wrapped])

    def started_in_vain(self, pane_id: str, refusals: list[str] | None = None) -> _Start | None:
        """The start of ``pane_id``'s shell whose bwrap never started it, if there is one.

        Only the wrapper writes the pane's id and its own verdict into the status file (the
        sandbox cannot reach that file), and only when bwrap wrote no ``exit-code``: a shell
        that ran and exited with 1, or words a program printed, never count. On a remote host
        the host's shell says so on the pane's screen with the nonce of that start (never in
        reach of the sandbox): ``refusals``, the nonces the pane showed.
        """
        for nonce in refusals or ():
            if nonce in self._remote_starts:
                return self._remote_starts.pop(nonce)
        for start_id, start in list(self._starts.items()):
            pane, failed = _read_status(start.status)
            if pane == pane_id and failed:
                self._forget_start(start_id)
                return start
        return None

    def started(self, pane_id: str) -> None:
        """``pane_id``'s shell answered: forget its starts."""
        for start_id, start in list(self._starts.items()):
            if _read_status(start.status)[0] == pane_id:
                self._forget_start(start_id)

    def _forget_start(self, start_id: int) -> None:
        start = self._starts.pop(start_id, None)
        if start is not None:
            with contextlib.suppress(OSError):
                os.unlink(start.status)  # bwrap may still hold it open: harmless

    def close(self) -> None:
        """Remove the status files of the panes' starts."""
        self._starts.clear()
        self._remote_starts.clear()
        if self._status_dir is not None:
            remove_private_folder(self._status_dir)
            self._status_dir = None

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
        # A sandboxed pane's process is its wrapper (bwrap, or sh around it) at first: the
        # shell we started is the one to trust.
        started = self.shell or (shlex.join(login_shell()) if self.active else None)
        kind = (shell_kind_of(started) if created and started else None) or detect_shell(
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
            retried = typed = False
            respawned_at = 0
            while True:
                # Looked for before typing and after each word from a wrapper: it may have
                # spoken before the watch was there (it writes the status file first), and
                # nothing is typed into a pane that is to be started again.
                if created and self._remote_starts and not typed:
                    # A host shell that said it before the watch was there said it on screen.
                    screen = await client.command(f"capture-pane -p -J -t {pane_id}")
                    watch.saw_screen("\n".join(screen).encode())
                start = (
                    self.started_in_vain(pane_id, watch.refusals)
                    if created and (self._starts or watch.refusals)
                    else None
                )
                if start is not None:
                    if retried:
                        # bwrap's words come before the wrapper's in the pane: wait for those.
                        await watch.wait_words(respawned_at, time.monotonic() + 5)
                        raise BackendError(
                            f"the sandbox of pane {pane_id} could not be built, twice: "
                            f"{watch.bwrap_said() or 'bwrap gave up'}"
                        )
                    retried, typed = True, False
                    respawned_at = watch.words
                    await self._start_again(client, pane_id, start)
                    if self.local_host:
                        pane.shell_pid = await shell_pid(client, pane_id)
                    deadline = time.monotonic() + SETUP_TIMEOUT
                    continue
                if not typed:
                    await type_command(client, pane_id, line, clear=True)
                    typed = True
                try:
                    _, status_code = await watch.wait_end(deadline)
                    break
                except NotBuilt:
                    continue  # only the status file says whether it was this pane's
            if self._starts:
                self.started(pane_id)
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

    async def _start_again(self, client: ControlClient, pane_id: str, start: _Start) -> None:
        """Start ``pane_id``'s shell again in the same walls, the places looked up afresh."""
        if isinstance(self.sandbox, RemoteSandbox):
            self.sandbox.look_again()
        command = await self.command(start.walls, start.cwd)
        parts = ["respawn-pane", "-k", "-t", pane_id]
        if start.cwd:
            parts += ["-c", quote(start.cwd.replace("#", "##"))]
        if command:
            parts.append(quote(command))
        await client.command(" ".join(parts))


# -- setting a pane up --------------------------------------------------------------------------

SETUP_TIMEOUT = 15.0
"""Seconds for a new pane's shell to start and answer the set-up line (slow rc files)."""
REMOTE_START_KEPT = 2 * SETUP_TIMEOUT + 30.0
"""Seconds a remote pane's start is remembered: longer than its set-up (twice, with a start
again between) and than a refused pane is held (``exec sleep 30``)."""


class NotBuilt(Exception):
    """A pane printed ``NOT_BUILT`` (to be checked: ``PaneShells.started_in_vain``)."""


def _read_status(path: str) -> tuple[str | None, bool]:
    """A wrapped start's status file: the pane it names, and whether bwrap never started the
    shell (the wrapper's verdict, and no ``exit-code`` from bwrap)."""
    try:
        with open(path, "rb") as handle:
            status = handle.read()
    except OSError:
        return None, False
    pane: str | None = None
    verdict: object = None
    for line in status.splitlines():
        with contextlib.suppress(ValueError):
            said = json.loads(line)
            if isinstance(said, dict) and isinstance(said.get("pane"), str) and pane is None:
                pane = said["pane"]
            if isinstance(said, dict) and "bwrap-exit" in said:
                verdict = said["bwrap-exit"]
    return pane, verdict == 1 and setup_failed(status, 1)


class MarkerWatch:
    """Collects the markers a pane prints while its shell is being set up, and the word of a
    local pane's wrapper that its sandbox was not built."""

    def __init__(self, nonce: str) -> None:
        self.nonce = nonce
        self.data = bytearray()
        self.markers: list[tuple[int, int | None]] = []
        self.not_built: list[int] = []
        self.refusals: list[str] = []
        """Nonces a remote pane's host shell said a refusal with (``_NOT_STARTED_SEEN``)."""
        self.words = 0
        """How many times a wrapper has said ``NOT_BUILT`` here."""
        self._processed = 0
        self._not_built_at = 0
        self._changed = asyncio.Event()

    def feed(self, chunk: bytes) -> None:
        begin = max(0, len(self.data) - MAX_MARKER_BYTES)
        self.data += chunk
        for marker in find_markers(bytes(self.data[begin:]), self.nonce):
            if marker.start + begin >= self._processed:
                self._processed = marker.end + begin
                self.markers.append((marker.id, marker.exit_code))
                self._changed.set()
        said = [*_NOT_BUILT_SEEN.finditer(self.data, self._not_built_at)]
        said += _NOT_STARTED_SEEN.finditer(self.data, self._not_built_at)
        for seen in sorted(said, key=lambda match: match.end()):
            self._not_built_at = max(self._not_built_at, seen.end())
            if seen.re is _NOT_STARTED_SEEN:
                self.refusals.append(seen.group(1).decode())
                self.not_built.append(0)
            else:
                self.not_built.append(int(seen.group(1)))
            self.words += 1
            self._changed.set()
        if len(self.data) > 1 << 16:
            drop = len(self.data) - 4096
            del self.data[:drop]
            self._processed = max(0, self._processed - drop)
            self._not_built_at = max(0, self._not_built_at - drop)

    def saw_screen(self, screen: bytes) -> None:
        """Refusals on the pane's screen, said before this watch was there."""
        for seen in _NOT_STARTED_SEEN.finditer(screen):
            if seen.group(1).decode() not in self.refusals:
                self.refusals.append(seen.group(1).decode())

    def bwrap_said(self) -> str:
        """bwrap's last complaint in the pane (``bwrap: Can't ...``), or ''."""
        found = re.findall(rb"bwrap: [^\r\n]*", self.data)
        return found[-1].decode(errors="replace") if found else ""

    async def wait_words(self, past: int, deadline: float) -> None:
        """Until a wrapper has said ``NOT_BUILT`` more than ``past`` times (or ``deadline``)."""
        while self.words <= past:
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_end(self, deadline: float) -> tuple[int, int]:
        """``(id, exit code)`` of the first end marker.

        Raises:
            NotBuilt: the pane said its sandbox was not built (once for each time it said so).
            TimeoutError: ``deadline`` passed.
        """
        while True:
            if self.not_built:
                raise NotBuilt(self.not_built.pop(0))
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

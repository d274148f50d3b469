"""TmuxBackend: commands typed into a tmux pane the person can watch and take over.

It wraps a HOST backend (local today; a container or SSH host later) and never runs tmux
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
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

from tui.exec.backend import BackendError, ChunkSink, ExecResult, ExecutionBackend
from tui.exec.local import LocalBackend
from tui.exec.tmux import lifecycle, orphans
from tui.exec.tmux.control import ControlClient, ControlClosed, Reply, TmuxCommandError, quote
from tui.exec.tmux.guard import check_shared_shell
from tui.exec.tmux.keyboard import hex_lines, literal_lines, paste_lines
from tui.exec.tmux.markers import (
    MAX_MARKER_BYTES,
    CommandStream,
    ShellKind,
    bootstrap_line,
    command_text,
    detect_shell,
    find_markers,
    new_nonce,
    prompt_row,
    shell_kind_of,
    strip_markers,
)
from tui.exec.tmux.prompt import PromptWatch, clear_input, discard_input, moved, refusal
from tui.exec.tmux.sessions import (
    DEFAULT_PANE_OPTION,
    NONCE_OPTION,
    OWNER_OPTION,
    PLACEHOLDER,
    LimitReached,
    NotOurs,
    PaneInfo,
    SessionInfo,
    canonical_session_name,
    capture_flags,
    is_pane_id,
    list_panes,
    list_sessions,
    name_pane,
    new_pane_command,
    session_owner,
    setup_new_session,
)

log = logging.getLogger(__name__)

SETUP_TIMEOUT = 15.0
"""Seconds for a new pane's shell to start and answer the set-up line (slow rc files)."""
CANCEL_GRACE = 2.0
"""Seconds to wait for the prompt after Ctrl-C before reporting the command still running."""
TYPE_CHUNK = 1000
"""Characters per ``set-buffer``/``send-keys`` command: modest lines for tmux's parser."""
KEEP_LIMIT = 16 * 1024 * 1024

_KEY_NAMES = {
    "enter", "escape", "tab", "btab", "space", "bspace", "up", "down", "left", "right",
    "home", "end", "pageup", "pgup", "ppage", "pagedown", "pgdn", "npage", "insert", "ic",
    "delete", "dc", "any",
}  # fmt: skip
_KEY = re.compile(r"^(?:[CMS]-)*(?:F(?:[1-9]|1[0-2])|KP[A-Za-z0-9]+|[A-Za-z]+|[!-~])$")

Direction = Literal["right", "below", "window"]
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def valid_key(name: str) -> bool:
    """True for tmux key names (``C-c``, ``Enter``, ``M-x``, ``F5``, ``Up``, ``q``)."""
    if not _KEY.match(name):
        return False
    base = re.sub(r"^(?:[CMS]-)*", "", name)
    return (
        len(base) == 1
        or base.lower() in _KEY_NAMES
        or bool(re.fullmatch(r"F(?:[1-9]|1[0-2])|KP[A-Za-z0-9]+", base))
    )


@dataclass
class CaptureResult:
    pane_id: str
    text: str
    notices: list[str] = field(default_factory=list)


@dataclass
class _Job:
    pane_id: str
    command: str
    stream: CommandStream
    done: asyncio.Future[None]
    started: float = field(default_factory=time.monotonic)
    on_chunk: ChunkSink | None = None
    baseline: orphans.Baseline | None = None
    """Who was in the pane shell's session before (local panes): what a cancel spares."""


@dataclass
class _Pane:
    pane_id: str
    session: str
    kind: ShellKind
    nonce: str
    prefix_start: bool = False
    """No ``PS0``/``preexec`` (POSIX sh, old bash): type ``__atui_go;`` before commands."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    job: _Job | None = None
    last_job: _Job | None = None
    shell_pid: int | None = None
    """The pane's shell, on a local host only (its session is swept on cancel)."""
    watchers: list[Callable[[bytes], None]] = field(default_factory=list)
    prompt: PromptWatch | None = None
    """Where the shell stands (prompt, running, half-typed input) and its directory."""


@dataclass
class _PaneStatus:
    in_mode: bool
    dead: bool
    command: str
    path: str
    session: str


class _MarkerWatch:
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


class TmuxBackend(ExecutionBackend):
    """Runs commands in a shared tmux pane on ``host``; see the module docstring.

    Args:
        host: Where tmux runs (must support ``spawn``) and where files are read and written.
        socket_name: The tmux server (``tmux -L``); private to agent-tui by default.
        session: The shared session's name (canonicalised to ``atui-…``).
        history_limit: Scrollback of panes we create.
        shell: Command new panes run (``bash --norc``); None: tmux's ``default-shell``.
        owner: The tag on everything we create; only tagged sessions are listed or killed.
        default_cwd: Where new panes start.
        env: Environment for the tmux client (and so a server it starts, and its panes).
        config: ``tmux -f`` file for a server we start (None: tmux's usual ~/.tmux.conf).
        max_sessions, max_panes: Limits on what the tools may create (default included).
        allow_user_pane_capture: ``[tmux] allow_user_pane_capture``: the capture tool may
            read the person's own pane (``$TMUX_PANE``).
        width, height: Size of sessions we create while nobody is attached.
        workspace: The workspace's real path, tagged on the session (``lifecycle``).
        own_session: The session is this instance's own: ``close`` kills it (and the
            sessions the tools created) unless it is kept.
        keep_session: Mark the session kept from the start (``[tmux] keep_session``).
    """

    SUPPORTS_TMUX = True

    def __init__(
        self,
        host: ExecutionBackend,
        *,
        socket_name: str = "agent-tui",
        session: str = "agent",
        history_limit: int = 50_000,
        shell: str | None = None,
        owner: str = "agent-tui",
        default_cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        config: str | None = None,
        max_sessions: int = 8,
        max_panes: int = 16,
        allow_user_pane_capture: bool = False,
        width: int = 200,
        height: int = 50,
        workspace: str | None = None,
        own_session: bool = False,
        keep_session: bool = False,
    ) -> None:
        if not host.SUPPORTS_SPAWN:
            raise BackendError(f"{host.actor} cannot host tmux: it cannot start processes")
        self.host = host
        self.socket_name = socket_name
        self.default_session = canonical_session_name(session)
        self.history_limit = history_limit
        self.shell = shell
        self.owner = owner
        self.default_cwd = default_cwd
        self.env = dict(env) if env is not None else None
        self.config = config
        self.max_sessions = max_sessions
        self.max_panes = max_panes
        self.allow_user_pane_capture = allow_user_pane_capture
        """The person let ``tmux_capture_pane user_pane=true`` read their own pane."""
        self.width = width
        self.height = height
        self.workspace = workspace
        self.own_session = own_session
        self.keep_session = keep_session
        self.created_sessions: set[str] = set()
        """Sessions the tools created here: closed with ours unless ours is kept."""
        self.default_pane: str | None = None
        self.last_pane: str | None = None
        self._clients: dict[str, ControlClient] = {}
        self._panes: dict[str, _Pane] = {}
        self._start_lock = asyncio.Lock()
        self._connect_locks: dict[str, asyncio.Lock] = {}
        self._output_listeners: dict[str, list[Callable[[bytes], None]]] = {}
        self._use_listeners: list[Callable[[str], None]] = []
        self._started_once = False
        self._pending_notices: list[str] = []
        """Notices from calls that return none (send_keys, list_…): the next run or capture
        reports them, so a recreated pane is never silent."""
        self._check_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Future[None]] = set()

    # -- identity ----------------------------------------------------------------------------

    @property
    def actor(self) -> str:
        pane = self.default_pane
        return f"{self.host.actor}/tmux:{pane}" if pane else f"{self.host.actor}/tmux"

    @property
    def _default_target(self) -> str:
        return quote(f"={self.default_session}:")

    def pane_actor(self, pane_id: str) -> str:
        return f"{self.host.actor}/tmux:{pane_id}"

    def tmux_argv(self, *args: str) -> list[str]:
        """A ``tmux`` command line on our socket, never nested in the person's own tmux."""
        return self.place.argv(*args)

    @property
    def place(self) -> lifecycle.Place:
        return lifecycle.Place(self.host, self.socket_name, self.config, self._spawn_env())

    def attach_command(self) -> str:
        """What a person types in another terminal to watch or join the agent's session."""
        return lifecycle.attach_command(self.place, self.default_session)

    async def set_kept(self, kept: bool) -> None:
        """Keep the session after quit (re-attached at the next start here), or not."""
        await lifecycle.set_kept(await self._primary(), self.default_session, kept)

    async def is_kept(self) -> bool:
        return await lifecycle.is_kept(await self._primary(), self.default_session)

    # -- files go to the host, never through a pane -----------------------------------------

    async def read_file(self, path: str) -> bytes:
        return await self.host.read_file(path)

    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        await self.host.write_file(path, data, make_parents=make_parents)

    # -- commands ----------------------------------------------------------------------------

    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
        target: str | None = None,
        expect_cwd: str | None = None,
    ) -> ExecResult:
        """Type ``command`` into the shared pane (or ``target``) and wait for its prompt.

        ``env`` only matters when this call starts the tmux server: a pane's shell keeps
        its environment. ``cwd`` is a ``cd`` typed first, when the pane is elsewhere.
        On timeout the command keeps running; ``timed_out`` is set and a notice names the
        pane and how to stop or watch it. ``expect_cwd``: the directory the command was
        approved in; if the shell is elsewhere now, nothing is typed (BackendError).
        """
        if cancel is not None and cancel.is_set():
            return ExecResult(exit_code=None, cancelled=True, merged_output=True)
        check_shared_shell(command)
        started = time.perf_counter()
        notices = self._take_notices()
        state = await self._pane_for_command(target, notices, env)
        self._report(notices, on_chunk)
        async with state.lock:
            job = await self._start_job(state, command, cwd, on_chunk, expect_cwd)
            return await self._finish_job(state, job, timeout, cancel, started, notices)

    async def dispatch(
        self,
        command: str,
        *,
        target: str | None = None,
        cwd: str | None = None,
        expect_cwd: str | None = None,
    ) -> tuple[str, list[str]]:
        """Type ``command`` and return at once: ``(pane id, notices)``. It runs on alone."""
        check_shared_shell(command)
        notices = self._take_notices()
        state = await self._pane_for_command(target, notices, None)
        async with state.lock:
            await self._start_job(state, command, cwd, None, expect_cwd)
        return state.pane_id, notices

    def running_command(self, pane_id: str) -> str | None:
        """The command we typed into ``pane_id`` that has not reached its prompt yet."""
        state = self._panes.get(pane_id)
        if state is None or state.job is None or state.job.done.done():
            return None
        return state.job.command

    def prompt_state(self, pane_id: str | None = None) -> str | None:
        """``prompt``, ``running`` or ``continuation`` (see ``prompt.PromptWatch``)."""
        state = self._panes.get(pane_id or self.default_pane or "")
        return state.prompt.state if state is not None and state.prompt is not None else None

    def shell_cwd(self, pane_id: str | None = None) -> str | None:
        """The directory the shell of ``pane_id`` (default: the shared pane) last reported.

        It is where its next command runs: a person's ``cd`` during a take-over moves it
        too. None before the pane was set up, or when the shell cannot report it (POSIX sh).
        """
        state = self._panes.get(pane_id or self.default_pane or "")
        return state.prompt.cwd if state is not None and state.prompt is not None else None

    async def wait_for_prompt(self, pane_id: str, timeout: float) -> int | None:
        """Wait until the command we typed into ``pane_id`` is back at its prompt.

        Returns its exit code (None when nothing was running). Raises TimeoutError.
        """
        state = self._panes.get(pane_id)
        if state is None:
            return None
        job = state.job or state.last_job
        if job is None:
            return None
        await asyncio.wait_for(asyncio.shield(job.done), timeout)
        return job.stream.exit_code

    async def _start_job(
        self,
        state: _Pane,
        command: str,
        cwd: str | None,
        on_chunk: ChunkSink | None,
        expect_cwd: str | None = None,
    ) -> _Job:
        client = await self._client(state.session)
        status = await self._status(client, state.pane_id)
        if status is None or status.dead:
            raise BackendError(f"pane {state.pane_id} is gone")
        lost = state.job
        if lost is not None and lost.stream.start is None and lost.stream.orphan_ends:
            # The shell came back to its prompt without ever starting it: the typed line was
            # discarded (a Ctrl-C flushes the terminal's input). Nothing runs: free the pane.
            self._fail_job(state, "the typed command was discarded before it started")
        if state.job is not None and not state.job.done.done():
            elapsed = time.monotonic() - state.job.started
            raise BackendError(
                f"pane {state.pane_id} is still running `{_short(state.job.command)}` "
                f"(started {elapsed:.0f} s ago). Watch it with tmux_capture_pane, stop it with "
                "tmux_send_keys C-c, or use another pane (tmux_create_pane)"
            )
        if status.in_mode:
            await client.command(f"copy-mode -q -t {state.pane_id}")
        running = detect_shell(status.command)
        if running is None:
            raise BackendError(
                f"pane {state.pane_id} is running `{status.command}`, not its shell: typing "
                "a command there would go to that program. Use tmux_send_keys to talk to it "
                "(e.g. C-c or q), or another pane"
            )
        if running is not state.kind and state.kind is not ShellKind.SH:
            raise BackendError(
                f"pane {state.pane_id} now runs a nested {status.command} inside its "
                f"{state.kind.value}; end it first (tmux_send_keys C-d) or use another pane"
            )
        held = None
        if state.prompt is not None:
            held = refusal(state.pane_id, state.prompt) or (
                None if cwd else moved(state.pane_id, state.prompt, expect_cwd)
            )
        if held is not None:
            raise BackendError(held)
        if state.prompt is not None and state.prompt.typed:
            await discard_input(state.pane_id, state.prompt, client.command, CANCEL_GRACE)
        if cwd and PurePosixPath(cwd) != PurePosixPath(status.path or "/"):
            await self._change_directory(client, state, cwd)
        self._mark_used(state.pane_id)
        job = _Job(
            pane_id=state.pane_id,
            command=command,
            stream=CommandStream(state.nonce, keep_limit=KEEP_LIMIT),
            done=asyncio.get_running_loop().create_future(),
            on_chunk=on_chunk,
        )
        job.baseline = await orphans.baseline(state.shell_pid)
        state.job = job
        text = command_text(ShellKind.SH if state.prefix_start else state.kind, command)
        try:
            await self._type(client, state.pane_id, text, clear=True)
        except BaseException:
            state.job = None
            raise
        return job

    async def _change_directory(self, client: ControlClient, state: _Pane, cwd: str) -> None:
        job = _Job(
            state.pane_id,
            f"cd {cwd}",
            CommandStream(state.nonce),
            asyncio.get_running_loop().create_future(),
        )
        state.job = job
        kind = ShellKind.SH if state.prefix_start else state.kind
        await self._type(
            client, state.pane_id, command_text(kind, f"cd -- {_sh_quote(cwd)}"), clear=True
        )
        try:
            await asyncio.wait_for(asyncio.shield(job.done), SETUP_TIMEOUT)
        except TimeoutError:
            raise BackendError(f"pane {state.pane_id} did not finish `cd {cwd}`") from None
        if job.stream.exit_code != 0:
            raise BackendError(f"cannot cd to {cwd!r} in pane {state.pane_id}")

    async def _finish_job(
        self,
        state: _Pane,
        job: _Job,
        timeout: float | None,
        cancel: asyncio.Event | None,
        started: float,
        notices: list[str],
    ) -> ExecResult:
        cancel_wait = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        waits: set[asyncio.Future[Any]] = {job.done}
        if cancel_wait is not None:
            waits.add(cancel_wait)
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            cancelled = not job.done.done() and cancel is not None and cancel.is_set()
            if cancelled:
                base = job.baseline
                seen = await orphans.started_since(base) if base is not None else []
                # A Ctrl-C that lands between two commands of a list can be swallowed by
                # the shell: press it again, as a person would.
                for _ in range(3):
                    await self._interrupt(state.pane_id)
                    await asyncio.wait({job.done}, timeout=CANCEL_GRACE / 3)
                    if job.done.done():
                        break
                if base is not None:  # Ctrl-C spares background jobs: stop them too
                    notices.append(await orphans.stop_started(base, seen))
                    await asyncio.wait({job.done}, timeout=CANCEL_GRACE / 3)
        except asyncio.CancelledError:
            if not job.done.done():
                task = asyncio.ensure_future(self._interrupt_quietly(state.pane_id))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
            raise
        finally:
            if cancel_wait is not None:
                cancel_wait.cancel()
        if job.done.done() and job.done.exception() is not None:
            raise BackendError(str(job.done.exception()))
        stream = job.stream
        result = ExecResult(
            exit_code=stream.exit_code if job.done.done() and not cancelled else None,
            cwd=state.prompt.cwd if state.prompt else None,
            stdout=stream.output(),
            duration_ms=(time.perf_counter() - started) * 1000.0,
            merged_output=True,
            cancelled=cancelled,
            timed_out=not job.done.done() and not cancelled,
            notices=notices,
        )
        if stream.capped:
            notices.append(
                f"output kept to its first {KEEP_LIMIT:,} bytes in this result "
                f"({stream.received:,} received); the live output carried all of it"
            )
        if not job.done.done():
            how = "after Ctrl-C" if cancelled else f"after {timeout:g} s"
            notices.append(
                f"still running in pane {state.pane_id} {how} (not killed). Watch it with "
                f"tmux_capture_pane target={state.pane_id}; stop it with tmux_send_keys "
                f"target={state.pane_id} keys=['C-c']"
            )
        return result

    async def _interrupt(self, pane_id: str) -> None:
        state = self._panes.get(pane_id)
        client = await self._client(state.session if state else self.default_session)
        await client.command(f"send-keys -t {pane_id} C-c")

    async def _interrupt_quietly(self, pane_id: str) -> None:
        try:
            await self._interrupt(pane_id)
        except BackendError:
            pass

    async def _type(
        self, client: ControlClient, pane_id: str, text: str, *, clear: bool = False
    ) -> None:
        """Paste ``text`` (bracketed if the program asked for it) and press Enter.

        ``clear`` first wipes what a person left unsent on the prompt line, so exactly
        ``text`` runs, never their leftover glued in front of it.
        """
        buffer = f"atui-{pane_id.lstrip('%')}"
        lines = [clear_input(pane_id)] if clear else []
        lines += [
            f"set-buffer {'-a ' if index else ''}-b {buffer} -- {quote(chunk)}"
            for index, chunk in enumerate(_chunks(text, TYPE_CHUNK))
        ]
        if text:
            lines.append(f"paste-buffer -p -r -d -b {buffer} -t {pane_id}")
        lines.append(f"send-keys -t {pane_id} Enter")
        for reply in await client.commands(lines):
            reply.check()

    # -- panes and their shells --------------------------------------------------------------

    async def _pane_for_command(
        self, target: str | None, notices: list[str], env: Mapping[str, str] | None
    ) -> _Pane:
        for attempt in range(2):
            try:
                await self.ensure_started(notices, env=env)
                if target is None:
                    return await self._default_state(notices)
                pane_id = await self.resolve_target(target)
                return await self._state_for(pane_id)
            except ControlClosed:
                # The session or server went away before its %exit reached us: once more,
                # now that the client is known to be gone (this recreates the shared pane).
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _default_state(self, notices: list[str]) -> _Pane:
        """The shared pane, recreated (with a notice) when it died or was killed."""
        async with self._start_lock:
            pane_id = self.default_pane
            client = await self._client(self.default_session)
            status = await self._status(client, pane_id) if pane_id else None
            moved = status is not None and status.session != self.default_session
            if pane_id is None or status is None or status.dead or moved:
                new = await self._new_default_pane(client)
                if pane_id is not None:
                    why = (
                        "moved out of the shared session"
                        if moved
                        else "gone (killed, or its shell exited)"
                    )
                    notices.append(
                        f"the shared pane {pane_id} was {why}; "
                        f"opened {new} and set it up again: its shell state (cwd, variables, "
                        "history) was lost"
                    )
                pane_id = new
            elif pane_id not in self._panes and detect_shell(status.command) is None:
                raise BackendError(
                    f"the shared pane {pane_id} is running `{status.command}`, not a shell"
                )
        return await self._state_for(pane_id)

    async def _new_default_pane(self, client: ControlClient) -> str:
        window = self._default_target
        (line,) = await client.command(
            new_pane_command("new-window", window, shell=self.shell, cwd=self.default_cwd)
        )
        pane_id = line.strip()
        await client.commands(
            [
                f"set-option -p -t {pane_id} {OWNER_OPTION} {quote(self.owner)}",
                f"set-option -t {self._default_target} {DEFAULT_PANE_OPTION} {pane_id}",
            ]
        )
        self.default_pane = pane_id
        await self._setup_pane(pane_id, self.default_session, created=True)
        return pane_id

    async def _state_for(self, pane_id: str) -> _Pane:
        state = self._panes.get(pane_id)
        if state is not None:
            return state
        client = await self._primary()
        (line,) = await client.command(
            f"display-message -p -t {pane_id} '#{{session_name}}\t#{{pane_current_command}}'"
        )
        session, _, command = line.partition("\t")
        if not session:
            raise NotOurs(f"pane {pane_id} is gone")
        if detect_shell(command) is None:
            raise BackendError(
                f"pane {pane_id} is running `{command}`, not a shell: commands cannot be "
                "typed into it (use tmux_send_keys)"
            )
        await self._setup_pane(pane_id, session, created=False)
        return self._panes[pane_id]

    async def _setup_pane(self, pane_id: str, session: str, *, created: bool) -> None:
        """Teach the pane's shell the marker protocol (idempotent) and learn its capabilities."""
        client = await self._client(session)
        status = await self._status(client, pane_id)
        if status is None:
            raise BackendError(f"pane {pane_id} is gone")
        kind = (shell_kind_of(self.shell) if created and self.shell else None) or detect_shell(
            status.command
        )
        if kind is None and created:
            kind = await self._default_shell_kind(client)
        if kind is None:
            raise BackendError(f"pane {pane_id} runs `{status.command}`, not a shell we know")
        (stored,) = await client.command(f"display-message -p -t {pane_id} '#{{{NONCE_OPTION}}}'")
        nonce = stored.strip() if re.fullmatch(r"[0-9a-f]{8}", stored.strip()) else new_nonce()
        await client.command(f"set-option -p -t {pane_id} {NONCE_OPTION} {nonce}")
        state = _Pane(pane_id, session, kind, nonce, prefix_start=kind is ShellKind.SH)
        state.prompt = PromptWatch(nonce)
        if isinstance(self.host, LocalBackend):
            state.shell_pid = await orphans.shell_pid(client, pane_id)
        watch = _MarkerWatch(nonce)
        state.watchers.append(watch.feed)
        self._panes[pane_id] = state
        deadline = time.monotonic() + SETUP_TIMEOUT
        try:
            line = await self._bootstrap(client, pane_id, kind, nonce, created=created)
            await self._type(client, pane_id, line, clear=True)
            _, status_code = await watch.wait_end(deadline)
            if kind is ShellKind.BASH:
                # PS0 needs bash 4.4; older ones get the sh-style start marker instead.
                state.prefix_start = status_code != 0
            if created:
                await client.command(f"clear-history -t {pane_id}")
            elif left := await orphans.leftovers(state.shell_pid):
                self._pending_notices.append(
                    f"still running in the agent's pane {pane_id} from before: {left}"
                )
        except TimeoutError:
            self._panes.pop(pane_id, None)
            raise BackendError(
                f"the shell in pane {pane_id} ({status.command}) did not answer the set-up "
                f"within {SETUP_TIMEOUT:g} s"
            ) from None
        except BaseException:
            self._panes.pop(pane_id, None)
            raise
        finally:
            state.watchers.remove(watch.feed)

    async def _bootstrap(
        self, client: ControlClient, pane_id: str, kind: ShellKind, nonce: str, *, created: bool
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

    async def _default_shell_kind(self, client: ControlClient) -> ShellKind | None:
        try:
            (line,) = await client.command("show-options -gv default-shell")
        except (TmuxCommandError, ValueError):
            return None
        return detect_shell(line)

    async def _status(self, client: ControlClient, pane_id: str | None) -> _PaneStatus | None:
        if pane_id is None:
            return None
        fields = "\t".join(
            f"#{{{name}}}"
            for name in (
                "pane_id",
                "pane_in_mode",
                "pane_dead",
                "pane_current_command",
                "session_name",
                "pane_current_path",
            )
        )
        try:
            lines = await client.command(f"display-message -p -t {pane_id} {quote(fields)}")
        except TmuxCommandError:
            return None
        # The directory comes last: its name may hold tabs and newlines (anyone can name a
        # folder), which then only lengthen the last field.
        parts = "\n".join(lines).split("\t", 5)
        # tmux 3.3 answers a display-message about a killed pane with empty fields, no error.
        if len(parts) != 6 or parts[0] != pane_id:
            return None
        return _PaneStatus(parts[1] == "1", parts[2] == "1", parts[3], parts[5], parts[4])

    # -- sessions and clients ----------------------------------------------------------------

    async def start(self) -> list[str]:
        """Connect (starting tmux and the shared pane if needed); the notices it produced."""
        notices = self._take_notices()
        await self.ensure_started(notices)
        await self._default_state(notices)
        return notices + self._take_notices()

    async def ensure_started(
        self, notices: list[str], *, env: Mapping[str, str] | None = None
    ) -> None:
        """A live control client on the shared session, recreating server or session."""
        client = self._clients.get(self.default_session)
        if client is not None and client.is_open and self.default_pane:
            return
        async with self._start_lock:
            client = self._clients.get(self.default_session)
            if client is not None and client.is_open and self.default_pane:
                return
            if self.env is None and env is not None:
                self.env = dict(env)
            client, created, why = await self._connect(self.default_session, create=True)
            if self.own_session:
                await lifecycle.tag_session(
                    client, self.default_session, workspace=self.workspace, kept=self.keep_session
                )
            if created:
                pane_id = await setup_new_session(
                    client,
                    self.default_session,
                    owner=self.owner,
                    history_limit=self.history_limit,
                    shell=self.shell,
                    cwd=self.default_cwd,
                )
                await client.command(
                    f"set-option -t {self._default_target} {DEFAULT_PANE_OPTION} {pane_id}"
                )
                self.default_pane = pane_id
                await self._setup_pane(pane_id, self.default_session, created=True)
                if self._started_once:
                    notices.append(
                        f"{why}; started a fresh shared pane {pane_id} and set it up again: "
                        "its shell state (cwd, variables, history) was lost"
                    )
            else:
                (line,) = await client.command(
                    f"display-message -p -t {self._default_target} '#{{{DEFAULT_PANE_OPTION}}}'"
                )
                self.default_pane = line.strip() or None
            self._started_once = True

    async def _connect(self, session: str, *, create: bool) -> tuple[ControlClient, bool, str]:
        """A control client attached to ``session``: (client, created, why it was created)."""
        existing = self._clients.get(session)
        if existing is not None and existing.is_open:
            return existing, False, ""
        lock = self._connect_locks.setdefault(session, asyncio.Lock())
        async with lock:
            existing = self._clients.get(session)
            if existing is not None and existing.is_open:
                return existing, False, ""
            why = ""
            created = False
            try:
                client = await self._spawn_client(session, "attach-session", "-t", f"={session}")
            except ControlClosed as error:
                if not create:
                    raise NotOurs(f"no tmux session {session} ({error.msg})") from None
                down = any(
                    text in error.msg
                    for text in (
                        "no server running",
                        "error connecting",
                        "no sessions",
                        # A server still shutting down when the attach met it.
                        "exited unexpectedly",
                        "lost server",
                    )
                )
                why = (
                    f"the tmux server (socket {self.socket_name}) had stopped"
                    if down
                    else f"the shared session {session} was gone"
                )
                args = ["new-session", "-s", session, "-x", str(self.width), "-y"]
                args += [str(self.height)]
                if self.default_cwd:
                    args += ["-c", self.default_cwd.replace("#", "##")]
                client = await self._spawn_new_session(session, args)
                created = True
            if not created and await session_owner(client, session) != self.owner:
                await client.close()
                raise NotOurs(
                    f"tmux session {session} on socket {self.socket_name} exists but is not "
                    f"agent-tui's (no {OWNER_OPTION} {self.owner}); pick another session name"
                )
            self._clients[session] = client
            return client, created, why

    async def _spawn_client(self, session: str, *args: str) -> ControlClient:
        return await ControlClient.connect(
            self.host,
            self.tmux_argv("-C", *args),
            env=self._spawn_env(),
            label=f"tmux {session}",
            on_output=lambda pane, data: self._on_output(session, pane, data),
            on_notification=lambda name, args: self._on_notification(session, name, args),
        )

    async def _spawn_new_session(self, session: str, args: list[str]) -> ControlClient:
        """``new-session``, again if it met the server a failed attach had just started.

        ``attach-session`` starts a server, finds no session and leaves; that server exits
        (``exit-empty``) and a client connecting at that moment hears "server exited
        unexpectedly". The next attempt starts a fresh server. Two agents starting at once on
        one socket can do this to each other repeatedly, so attempts back off with jitter.
        """
        attempts = 6
        for attempt in range(attempts):
            try:
                return await self._spawn_client(session, *args, PLACEHOLDER)
            except ControlClosed as error:
                if "exited unexpectedly" not in error.msg and "lost server" not in error.msg:
                    raise
                if attempt == attempts - 1:
                    raise
            await asyncio.sleep(0.02 * (attempt + 1) + random.uniform(0, 0.03))
        raise AssertionError("unreachable")

    def _spawn_env(self) -> dict[str, str] | None:
        if self.env is None:
            return None
        env = {k: v for k, v in self.env.items() if k not in ("TMUX", "TMUX_PANE")}
        env.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
        return env

    async def _client(self, session: str) -> ControlClient:
        client = self._clients.get(session)
        if client is not None and client.is_open:
            return client
        client, _, _ = await self._connect(session, create=False)
        return client

    async def _primary(self) -> ControlClient:
        """Any live client: every command reaches the same server."""
        client = self._clients.get(self.default_session)
        if client is not None and client.is_open:
            return client
        for other in self._clients.values():
            if other.is_open:
                return other
        await self.ensure_started(self._pending_notices)
        return self._clients[self.default_session]

    # -- events from control clients ----------------------------------------------------------

    def _on_output(self, session: str, pane_id: str, data: bytes) -> None:
        state = self._panes.get(pane_id)
        if state is not None and state.session != session:
            return  # a window linked into two sessions: take it from its own session only
        if state is not None:
            if state.prompt is not None:
                state.prompt.feed(data)
            for watcher in list(state.watchers):
                watcher(data)
            job = state.job
            if job is not None and not job.done.done():
                job.stream.feed(data)
                if job.on_chunk is not None:
                    text = job.stream.take_live()
                    if text:
                        try:
                            job.on_chunk("stdout", text)
                        except Exception:
                            log.exception("output sink failed; live output disabled")
                            job.on_chunk = None
                if job.stream.done:
                    job.done.set_result(None)
                    state.job = None
                    state.last_job = job
        for listener in list(self._output_listeners.get(pane_id, ())):
            try:
                listener(data)
            except Exception:
                log.exception("pane output listener failed")

    def _on_notification(self, session: str, name: str, args: str) -> None:
        if name == "exit":
            client = self._clients.get(session)
            if client is not None and client.is_open:
                return  # an older client of a session we have reconnected to
            self._clients.pop(session, None)
            for state in [s for s in self._panes.values() if s.session == session]:
                self._fail_job(state, f"tmux went away ({args or 'client exited'})")
                del self._panes[state.pane_id]
        elif (
            name in ("window-close", "unlinked-window-close", "layout-change")
            and any(s.job is not None for s in self._panes.values())
            and (self._check_task is None or self._check_task.done())
        ):
            self._check_task = asyncio.ensure_future(self._check_jobs())

    def _fail_job(self, state: _Pane, reason: str) -> None:
        job = state.job
        if job is not None and not job.done.done():
            job.done.set_exception(BackendError(f"pane {state.pane_id}: {reason}"))
            job.done.exception()  # retrieved: a dispatched job may have no waiter
        state.job = None

    async def _check_jobs(self) -> None:
        """After a window or layout closed: fail jobs whose pane is gone, forget the pane."""
        for state in list(self._panes.values()):
            client = self._clients.get(state.session)
            if client is None or not client.is_open:
                continue
            try:
                status = await self._status(client, state.pane_id)
            except BackendError:
                continue
            if status is None or status.dead:
                self._fail_job(state, "the pane was closed while the command ran")
                self._panes.pop(state.pane_id, None)

    # -- capture, keys ------------------------------------------------------------------------

    async def resolve_target(self, target: str) -> str:
        """A pane id of ours for ``%3``, ``build`` (a session), ``build:1.0``; else NotOurs."""
        target = target.strip()
        if not target:
            raise NotOurs("empty target")
        client = await self._primary()
        if is_pane_id(target):
            lookup = target
        else:
            session, _, rest = target.partition(":")
            try:
                name = canonical_session_name(session)
            except ValueError:
                raise NotOurs(f"{target!r} is not a pane or session name") from None
            lookup = f"={name}:{rest}"
        try:
            (line,) = await client.command(
                f"display-message -p -t {quote(lookup)} '#{{pane_id}}\t#{{session_name}}'"
            )
        except (TmuxCommandError, ValueError):
            raise NotOurs(f"no pane {target!r} in agent-tui's tmux sessions") from None
        pane_id, _, session_name = line.partition("\t")
        ours = {info.name for info in await list_sessions(client, self.owner)}
        if session_name not in ours or (is_pane_id(target) and pane_id != target):
            raise NotOurs(f"no pane {target!r} in agent-tui's tmux sessions")
        return pane_id

    async def capture(
        self,
        target: str | None = None,
        *,
        start: int | str | None = None,
        end: int | str | None = None,
        join_wrapped: bool = True,
        escape_sequences: bool = False,
        alternate: bool = False,
        preserve_trailing_spaces: bool = False,
        escape_non_printable: bool = False,
    ) -> CaptureResult:
        """The pane's text (visible screen by default; ``start=-200`` or ``"-"`` for history)."""
        notices = self._take_notices()
        await self.ensure_started(notices)
        pane_id = await self._capture_target(target, notices)
        client = await self._primary()
        args = ["capture-pane", "-p", "-t", pane_id]
        if join_wrapped:
            args.append("-J")
        args += capture_flags(
            escape_sequences=escape_sequences,
            preserve_trailing_spaces=preserve_trailing_spaces,
            escape_non_printable=escape_non_printable,
            start=start,
            end=end,
        )
        nonce_query = f"display-message -p -t {pane_id} '#{{{NONCE_OPTION}}}'"
        first = " ".join([*args, "-a"]) if alternate else " ".join(args)
        screen, nonce = await client.commands([first, nonce_query])
        if screen.error and alternate:
            notices.append(f"pane {pane_id} has no alternate screen; showing its normal one")
            screen = (await client.commands([" ".join(args)]))[0]
        self._mark_used(pane_id)
        text = _clean_capture(screen.check(), _first(nonce), keep_trailing=preserve_trailing_spaces)
        return CaptureResult(pane_id, text, notices)

    async def _capture_target(self, target: str | None, notices: list[str]) -> str:
        if target is not None:
            try:
                return await self.resolve_target(target)
            except NotOurs as error:
                state = await self._default_state(notices)
                notices.append(f"{error.msg}; showing the shared pane {state.pane_id} instead")
                return state.pane_id
        return (await self._default_state(notices)).pane_id

    async def send_keys(
        self,
        target: str,
        keys: str | Sequence[str] = (),
        *,
        literal: bool = False,
        enter: bool = False,
        guard: bool = True,
    ) -> str:
        """Send ``keys`` to ``target`` (never retargeted: a missing pane is an error).

        With ``literal`` the keys are text typed as is (``send-keys -l``, in modest
        chunks); otherwise each is a tmux key name (``C-c``, ``Enter``, ``Up``). ``enter``
        presses Enter last; typed text plus Enter into a shell passes the shared-shell guard
        unless ``guard`` is False (the person typing through the mirror). Returns the pane id.
        """
        items = [keys] if isinstance(keys, str) else list(keys)
        if not literal:
            for key in items:
                if not valid_key(key):
                    raise BackendError(
                        f"{key!r} is not a tmux key name (examples: C-c, C-d, Enter, Escape, "
                        "Up, M-x, F5, q); send text as literal text instead"
                    )
        await self.ensure_started(self._pending_notices)
        pane_id = await self.resolve_target(target)
        state = self._panes.get(pane_id)
        client = await self._client(state.session) if state else await self._primary()
        text = "".join(items) if literal else ""
        if text and enter and guard:
            status = await self._status(client, pane_id)
            if status is not None and detect_shell(status.command) is not None:
                check_shared_shell(text)
        if literal:
            lines = literal_lines(pane_id, text)
        else:
            lines = [f"send-keys -t {pane_id} -- {quote(key)}" for key in items]
        if enter:
            lines.append(f"send-keys -t {pane_id} Enter")
        if lines:
            for reply in await client.commands(lines):
                reply.check()
        self._mark_used(pane_id)
        return pane_id

    async def send_input(self, pane_id: str, data: bytes) -> None:
        """Raw bytes from a person's keyboard to a pane (``send-keys -H``): no guard, no policy."""
        state = self._panes.get(pane_id)
        client = await self._client(state.session) if state else await self._primary()
        for reply in await client.commands(hex_lines(pane_id, data)):
            reply.check()

    async def paste(self, pane_id: str, text: str) -> None:
        """A person's paste into a pane, as their terminal would paste it: no guard, no policy.

        Bracketed when the pane's program asked for bracketed paste, otherwise typed with
        each newline as Enter (``keyboard.paste_lines``).
        """
        state = self._panes.get(pane_id)
        client = await self._client(state.session) if state else await self._primary()
        lines = paste_lines(pane_id, text, f"atui-keys-{pane_id.lstrip('%')}")
        for reply in await client.commands(lines):
            reply.check()

    async def resize_pane(self, pane_id: str, columns: int, rows: int) -> None:
        """Give ``pane_id`` (and its window) ``columns`` x ``rows``: the size of the mirror box.

        ``resize-window`` makes the window's size manual, so no client's size overrides it;
        ``resize-pane`` matters only when the window holds other panes too.
        """
        if not re.fullmatch(r"%\d+", pane_id) or columns < 1 or rows < 1:
            raise BackendError(f"cannot resize {pane_id!r} to {columns}x{rows}")
        state = self._panes.get(pane_id)
        client = await self._client(state.session) if state else await self._primary()
        size = f"-x {int(columns)} -y {int(rows)}"
        window, _ = await client.commands(
            [f"resize-window -t {pane_id} {size}", f"resize-pane -t {pane_id} {size}"]
        )
        window.check()

    async def snapshot(self, pane_id: str) -> tuple[list[str], int, int, int, int]:
        """The visible screen with colours, cursor x/y and pane width/height (one round trip)."""
        state = self._panes.get(pane_id)
        client = await self._client(state.session) if state else await self._primary()
        screen, geometry = await client.commands(
            [
                f"capture-pane -p -e -N -t {pane_id}",
                f"display-message -p -t {pane_id} "
                "'#{cursor_x} #{cursor_y} #{pane_width} #{pane_height} "
                f"#{{{NONCE_OPTION}}}'",
            ]
        )
        fields = (geometry.check() or [""])[0].split()
        if len(fields) < 4 or not all(n.isdigit() for n in fields[:4]):
            raise NotOurs(f"pane {pane_id} is gone")
        numbers = [int(n) for n in fields[:4]]
        nonce = fields[4] if len(fields) > 4 else None
        lines = [strip_markers(line, nonce) for line in screen.check()]
        return lines, numbers[0], numbers[1], numbers[2], numbers[3]

    # -- sessions and panes for the tools ------------------------------------------------------

    async def list_sessions(self) -> list[SessionInfo]:
        await self.ensure_started(self._pending_notices)
        sessions = await list_sessions(await self._primary(), self.owner)
        return [
            SessionInfo(s.id, s.name, s.windows, s.attached, s.name == self.default_session)
            for s in sessions
        ]

    async def list_panes(self, session: str | None = None) -> list[PaneInfo]:
        await self.ensure_started(self._pending_notices)
        name = _session_name(session) if session else None
        panes = await list_panes(await self._primary(), self.owner, session=name)
        return [
            PaneInfo(**{**p.__dict__, "is_default": p.pane_id == self.default_pane}) for p in panes
        ]

    async def create_session(
        self, name: str, *, cwd: str | None = None, pane_name: str | None = None
    ) -> tuple[str, str]:
        """A new tagged session with one set-up pane: ``(session name, pane id)``.

        ``pane_name``: the first pane's name (canonical, see ``canonical_pane_name``).
        """
        await self.ensure_started(self._pending_notices)
        session = _session_name(name)
        primary = await self._primary()
        existing = await list_sessions(primary, self.owner)
        if any(info.name == session for info in existing):
            raise BackendError(f"session {session} already exists")
        if len(existing) >= self.max_sessions:
            raise LimitReached(
                f"already {len(existing)} agent-tui sessions (max_sessions={self.max_sessions});"
                " kill one with tmux_kill_session first"
            )
        await self._check_pane_limit(primary)
        try:
            await primary.command(f"has-session -t {quote(f'={session}:')}")
        except TmuxCommandError:
            pass
        else:
            raise BackendError(f"a session named {session} exists and is not agent-tui's")
        client, _, _ = await self._connect(session, create=True)
        pane_id = await setup_new_session(
            client,
            session,
            owner=self.owner,
            history_limit=self.history_limit,
            shell=self.shell,
            cwd=cwd or self.default_cwd,
        )
        if pane_name:
            await name_pane(client, pane_id, pane_name)
        await self._setup_pane(pane_id, session, created=True)
        self._mark_used(pane_id)
        self.created_sessions.add(session)
        return session, pane_id

    async def kill_session(self, name: str) -> str:
        await self.ensure_started(self._pending_notices)
        session = _session_name(name)
        if session == self.default_session:
            raise BackendError(
                f"{session} is the shared session and cannot be killed; kill its extra panes, "
                "or stop a program with tmux_send_keys C-c"
            )
        primary = await self._primary()
        if session not in {info.name for info in await list_sessions(primary, self.owner)}:
            raise NotOurs(f"no agent-tui session {session}")
        client = self._clients.pop(session, None)
        await primary.command(f"kill-session -t {quote(f'={session}:')}")
        if client is not None:
            await client.close()
        for state in [s for s in self._panes.values() if s.session == session]:
            self._fail_job(state, "its session was killed")
            self._panes.pop(state.pane_id, None)
        return session

    async def create_pane(
        self,
        *,
        session: str | None = None,
        target: str | None = None,
        direction: Direction = "below",
        cwd: str | None = None,
        name: str | None = None,
    ) -> str:
        """A new set-up pane: split ``target`` (or the session's active pane), or a window.

        ``name`` (canonical) must be new in that session: ``pane=NAME`` then finds it.
        """
        await self.ensure_started(self._pending_notices)
        primary = await self._primary()
        await self._check_pane_limit(primary)
        if target is not None:
            anchor = await self.resolve_target(target)
        else:
            anchor = await self.resolve_target(session or self.default_session)
        (owner_session,) = await primary.command(
            f"display-message -p -t {anchor} '#{{session_name}}'"
        )
        if name and any(
            p.name == name for p in await list_panes(primary, self.owner, session=owner_session)
        ):
            raise BackendError(f"session {owner_session} already has a pane named {name!r}")
        client = await self._client(owner_session)  # attached before the pane makes output
        if direction == "window":
            command = new_pane_command(
                "new-window", quote(f"={owner_session}:"), shell=self.shell, cwd=cwd
            )
        else:
            flag = "-h" if direction == "right" else "-v"
            command = new_pane_command(
                "split-window", anchor, shell=self.shell, cwd=cwd or self.default_cwd, flags=flag
            )
        (line,) = await client.command(command)
        pane_id = line.strip()
        await client.command(f"set-option -p -t {pane_id} {OWNER_OPTION} {quote(self.owner)}")
        if name:
            await name_pane(client, pane_id, name)
        await self._setup_pane(pane_id, owner_session, created=True)
        self._mark_used(pane_id)
        return pane_id

    async def kill_pane(self, target: str) -> str:
        await self.ensure_started(self._pending_notices)
        pane_id = await self.resolve_target(target)
        if pane_id == self.default_pane:
            raise BackendError(
                f"{pane_id} is the shared pane and cannot be killed; stop what runs there "
                "with tmux_send_keys C-c"
            )
        state = self._panes.pop(pane_id, None)
        if state is not None:
            self._fail_job(state, "the pane was killed")
        await (await self._primary()).command(f"kill-pane -t {pane_id}")
        return pane_id

    async def _check_pane_limit(self, client: ControlClient) -> None:
        count = len(await list_panes(client, self.owner))
        if count >= self.max_panes:
            raise LimitReached(
                f"already {count} agent-tui panes (max_panes={self.max_panes}); kill one with "
                "tmux_kill_pane first"
            )

    # -- for the mirror ------------------------------------------------------------------------

    def add_output_listener(
        self, pane_id: str, listener: Callable[[bytes], None]
    ) -> Callable[[], None]:
        """Call ``listener`` with every raw output chunk of ``pane_id``; returns the remover."""
        self._output_listeners.setdefault(pane_id, []).append(listener)

        def remove() -> None:
            listeners = self._output_listeners.get(pane_id, [])
            if listener in listeners:
                listeners.remove(listener)

        return remove

    def add_use_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(pane_id)`` whenever the agent acts on a pane."""
        self._use_listeners.append(listener)

        def remove() -> None:
            if listener in self._use_listeners:
                self._use_listeners.remove(listener)

        return remove

    def _mark_used(self, pane_id: str) -> None:
        changed = pane_id != self.last_pane
        self.last_pane = pane_id
        if changed:
            for listener in list(self._use_listeners):
                try:
                    listener(pane_id)
                except Exception:
                    log.exception("pane-use listener failed")

    def _take_notices(self) -> list[str]:
        notices, self._pending_notices = self._pending_notices, []
        return notices

    def _report(self, notices: list[str], on_chunk: ChunkSink | None) -> None:
        if on_chunk is None:
            return
        for notice in notices:
            try:
                on_chunk("info", notice + "\n")
            except Exception:
                log.exception("output sink failed")

    # -- shutdown -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close our own session unless kept (``own_session``); detach our control clients."""
        if self._check_task is not None:
            self._check_task.cancel()
        if self.own_session and self._started_once:
            try:
                await lifecycle.end_sessions(
                    self.place,
                    self.owner,
                    [self.default_session, *sorted(self.created_sessions)],
                    client=self._clients.get(self.default_session),
                )
            except (BackendError, OSError) as error:
                log.warning("could not close tmux session %s: %s", self.default_session, error)
        clients = list(self._clients.values())
        self._clients.clear()
        for client in clients:
            await client.close()
        for state in list(self._panes.values()):
            self._fail_job(state, "the backend was closed")
        self._panes.clear()


def _session_name(name: str) -> str:
    try:
        return canonical_session_name(name)
    except ValueError as error:
        raise BackendError(str(error)) from None


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _first(reply: Reply) -> str | None:
    if reply.error or not reply.lines:
        return None
    return reply.lines[0].strip() or None


def _clean_capture(lines: list[str], nonce: str | None, *, keep_trailing: bool = False) -> str:
    """Capture lines without our markers (marker-only lines dropped) or trailing blank lines.

    ``keep_trailing``: leave each line's trailing spaces (``capture-pane -N`` asked for them).
    """
    end = (lambda line: line) if keep_trailing else str.rstrip
    kept: list[str] = []
    for line in lines:
        if "__ATUI_" in line:
            stripped = strip_markers(line, nonce)
            if stripped == line:
                kept.append(end(line))
                continue
            if not _SGR.sub("", stripped).strip():
                continue  # a marker-only line (with -e, only its attributes are left)
            line = stripped
        kept.append(end(line))
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)

"""Run commands and move files on this machine: the default target, and the hot path.

Why it is built this way:

* Each command gets its own session and process group (``start_new_session``), so a
  timeout or a cancel can kill *everything* it started (``sleep 300 &`` included): the group
  with one ``killpg``, then whoever moved to another group of the session (``procs``).
* Each session is handed to the agent's watchdog (``watchdog``) as it starts, so when
  agent-tui dies, even by SIGKILL, nothing its commands started keeps running.
* Output is taken with a ``SubprocessProtocol`` instead of ``StreamReader`` tasks. Data
  arrives in callbacks as the event loop reads it (whatever is available, up to the
  transport's read size), so streaming costs no task per stream and no polling, and a
  run is not slower than a bare ``create_subprocess_exec(...).communicate()``.
* The protocol also tells us when the *shell* exits, independently of the pipes closing.
  ``Process.wait()`` waits for both, and so hangs for as long as a background child (``sleep
  30 & echo done``) holds stdout. We stop reading ``drain_timeout`` seconds after the shell
  exits instead, and say so in ``notices``; the background child is left alone, because the
  person started it on purpose.
* Decoding, capping, the live sink and the wait/kill/drain sequence are shared with the
  container and SSH backends (``tui.exec.streams``); only how to spawn and kill is here.
* File I/O runs in a worker thread so the UI never stalls on a slow disk, and writes are
  atomic (temp file + ``os.replace``) so a crash never leaves a half-written file.
"""

from __future__ import annotations

import asyncio
import errno
import os
import secrets
import signal
import stat
import subprocess
import time
from collections.abc import Mapping

from tui.exec import procs
from tui.exec.backend import (
    BackendError,
    ChunkSink,
    ExecResult,
    ExecutionBackend,
    InteractiveProcess,
    cancelled_early,
)
from tui.exec.sandbox.bwrap import setup_failed
from tui.exec.sandbox.explain import sandbox_notes
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.streams import KEEP_LIMIT as STREAM_KEEP_LIMIT
from tui.exec.streams import KILL_GRACE, CommandProtocol, wait_for_end
from tui.exec.streams import REAP_LIMIT as _REAP_LIMIT
from tui.exec.watchdog import shared as shared_watchdog
from tui.security.confinement import Confinement

KEEP_LIMIT = STREAM_KEEP_LIMIT
"""Characters of each stream kept in a local result (read at each run, so tests can lower it)."""


def default_shell() -> str:
    """bash where there is one, since that is what the model writes; POSIX sh otherwise."""
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    """Signal a whole process group; an already-empty group is not an error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalProcess(InteractiveProcess):
    """A local long-lived process (a tmux control client) with piped stdin and stdout.

    It runs in its own session and process group, like every command here, so ``close``
    can stop it and anything it started with one ``killpg``; stderr is merged into stdout
    so an error message is read in order with everything else.
    """

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._closed = False

    @property
    def pid(self) -> int:
        return self._process.pid

    async def write(self, data: bytes) -> None:
        stdin = self._process.stdin
        if stdin is None or stdin.is_closing() or self._process.returncode is not None:
            raise BackendError("the interactive process has ended")
        try:
            stdin.write(data)
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise BackendError(f"the interactive process has ended ({exc})") from None

    async def read(self, size: int = 65536) -> bytes:
        stdout = self._process.stdout
        if stdout is None:
            return b""
        return await stdout.read(size)

    async def wait(self) -> int:
        """Wait for the process to exit; its status."""
        return await self._process.wait()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        if self._process.returncode is None:
            try:
                await asyncio.wait_for(self._process.wait(), timeout=KILL_GRACE)
            except TimeoutError:
                _signal_group(self._process.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(self._process.wait(), timeout=KILL_GRACE)
                except TimeoutError:
                    _signal_group(self._process.pid, signal.SIGKILL)
                    await asyncio.wait_for(self._process.wait(), timeout=_REAP_LIMIT)

    @property
    def returncode(self) -> int | None:
        return self._process.returncode


class LocalBackend(ExecutionBackend):
    """Runs commands with the local shell and touches the local file system.

    Args:
        shell: Shell binary run as ``shell -c command``; default bash, else sh.
        default_cwd: Working directory when ``run`` gets none; default this process's.
        drain_timeout: Seconds to keep reading after the shell exited while a background
            process still holds the output pipe.
        sandbox: Where every command and spawned program is confined (None: nowhere; only
            for agent-tui's own probes and tests of the unconfined path).
    """

    def __init__(
        self,
        *,
        shell: str | None = None,
        default_cwd: str | None = None,
        drain_timeout: float = 2.0,
        sandbox: Sandbox | None = None,
    ) -> None:
        self._shell = shell or default_shell()
        self._default_cwd = default_cwd
        self._drain_timeout = drain_timeout
        self.sandbox = sandbox

    SUPPORTS_SPAWN = True

    @property
    def actor(self) -> str:
        return "local"

    @property
    def shell(self) -> str:
        return self._shell

    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
        confinement: Confinement | None = None,
    ) -> ExecResult:
        if (early := cancelled_early(cancel)) is not None:
            return early
        started = time.perf_counter()
        workdir = cwd if cwd is not None else self._default_cwd
        shell_argv = [self._shell, "-c", command]
        first_try = ""
        for attempt in range(2):
            status_read, status_write = os.pipe()
            try:
                argv, walls = shell_argv, None
                if self.sandbox is not None:
                    walls = confinement or self.sandbox.base()
                    argv = await self.sandbox.wrap(
                        shell_argv, walls, cwd=workdir, status_fd=status_write
                    )
                    if not self.sandbox.active:
                        walls = None
                wrapped = argv != shell_argv
                result = await self._run_once(
                    argv,
                    workdir,
                    env,
                    timeout=timeout,
                    on_chunk=on_chunk,
                    cancel=cancel,
                    walls=walls,
                    pass_fds=(status_write,) if wrapped else (),
                )
                status = _read_ready(status_read)
            finally:
                os.close(status_read)
                os.close(status_write)
            broken = wrapped and not (result.timed_out or result.cancelled)
            if not (broken and setup_failed(status, result.exit_code)):
                if attempt:
                    result.notices.insert(
                        0,
                        "the sandbox was built again: a place it hides changed while it was "
                        f"being built ({first_try})",
                    )
                break
            said = result.stderr.strip().splitlines()
            first_try = said[-1] if said else "bwrap failed"
            if attempt:
                result.notices.append(
                    f"the sandbox could not be built, so the command did not run: {first_try}"
                )
        result.duration_ms = (time.perf_counter() - started) * 1000.0
        return result

    async def _run_once(
        self,
        argv: list[str],
        workdir: str | None,
        env: Mapping[str, str] | None,
        *,
        timeout: float | None,
        on_chunk: ChunkSink | None,
        cancel: asyncio.Event | None,
        walls: Confinement | None,
        pass_fds: tuple[int, ...],
    ) -> ExecResult:
        """One spawn of ``argv`` to its end (or its timeout or cancel)."""
        loop = asyncio.get_running_loop()
        protocol = CommandProtocol(loop, on_chunk, KEEP_LIMIT)
        watchdog = await shared_watchdog()
        moment = time.monotonic()
        transport = await self._spawn(loop, protocol, argv, workdir, env, pass_fds=pass_fds)
        pgid = transport.get_pid()
        if watchdog is not None:
            watchdog.watch(pgid)
        try:
            timed_out, cancelled = await wait_for_end(
                protocol,
                protocol.exited,
                protocol.pipes_closed,
                timeout=timeout,
                cancel=cancel,
                kill=lambda: self._kill_group(pgid, protocol),
                drain_timeout=self._drain_timeout,
            )
            protocol.finish_streams()
            result = ExecResult(
                exit_code=None if protocol.killing else transport.get_returncode(),
                stdout=protocol.stdout.text,
                stderr=protocol.stderr.text,
                timed_out=timed_out,
                cancelled=cancelled,
                notices=protocol.notices,
            )
            if walls is not None and self.sandbox is not None:
                result.notices += sandbox_notes(
                    walls,
                    result.stdout + result.stderr,
                    self.sandbox.refusals_since(moment),
                    failed=result.exit_code != 0,
                )
            return result
        except BaseException:
            # The awaiting task was cancelled (or something broke) mid-run. We may not get
            # to await again (the loop may be shutting down), so no grace period: SIGKILL.
            if protocol.killing or not protocol.exited.done():
                _signal_group(pgid, signal.SIGKILL)
            raise
        finally:
            protocol.detach()
            transport.close()

    async def _spawn(
        self,
        loop: asyncio.AbstractEventLoop,
        protocol: CommandProtocol,
        argv: list[str],
        workdir: str | None,
        env: Mapping[str, str] | None,
        *,
        pass_fds: tuple[int, ...] = (),
    ) -> asyncio.SubprocessTransport:
        """Start the shell in its own session, turning OS errors into readable ones."""
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: protocol,
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=dict(env) if env is not None else None,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        except OSError as exc:
            raise self._spawn_error(exc, workdir) from exc
        return transport

    def _spawn_error(self, exc: OSError, workdir: str | None) -> BackendError:
        reason = exc.strerror or str(exc)
        if workdir is not None and not os.path.isdir(workdir):
            what = "does not exist" if not os.path.exists(workdir) else "is not a directory"
            return BackendError(f"Working directory {workdir!r} {what}.")
        if workdir is not None and exc.filename == workdir:
            return BackendError(f"Cannot enter working directory {workdir!r}: {reason}.")
        return BackendError(f"Cannot start the shell {self._shell!r}: {reason}.")

    async def _kill_group(self, pgid: int, protocol: CommandProtocol) -> None:
        """Stop the command's whole session: its group, then any member in other groups.

        SIGTERM first, ``KILL_GRACE`` seconds, then SIGKILL what is left. A shell with job
        control (``set -m``) moves ``sleep 300 &`` to a group of its own, but it stays in the
        session, so the session is what is swept; the notice names everything stopped.
        """
        protocol.killing = True
        command = await asyncio.to_thread(procs.read, pgid)
        sandboxed = await asyncio.to_thread(procs.namespaces_below, pgid)
        members = await asyncio.to_thread(procs.in_sessions, [pgid])
        _signal_group(pgid, signal.SIGTERM)
        others = [proc for proc in members if proc.pid != pgid]
        left = await procs.stop(others, grace=KILL_GRACE) if others else []
        await asyncio.wait({protocol.exited, protocol.pipes_closed}, timeout=KILL_GRACE)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
        late = await asyncio.to_thread(procs.in_sessions, [pgid])
        if late:  # started after the first sweep (a fork during the grace period)
            left = await procs.stop(late, grace=0.0)
            known = {proc.key for proc in others}
            others += [proc for proc in late if proc.key not in known and proc.pid != pgid]
        if not protocol.exited.done():
            await asyncio.wait({protocol.exited}, timeout=_REAP_LIMIT)
        await procs.until_namespaces_empty(sandboxed, _REAP_LIMIT)
        protocol.notice(procs.stopped_notice(command, others, left))

    async def spawn(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str] | None = None,
        confinement: Confinement | None = None,
        own_program: bool = False,
    ) -> InteractiveProcess:
        """Start ``argv`` (no shell) in its own process group; stderr goes to stdout.

        Confined like ``run`` unless ``own_program`` (a tmux control client: agent-tui's own).
        """
        if not argv:
            raise BackendError("nothing to start: empty argv")
        if self.sandbox is not None and not own_program:
            argv = await self.sandbox.wrap(argv, confinement, cwd=self._default_cwd)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=self._default_cwd,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )
        except OSError as exc:
            raise BackendError(f"Cannot start {argv[0]!r}: {exc.strerror or exc}.") from exc
        return LocalProcess(process)

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(_read_bytes, self._resolve(path))

    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        await asyncio.to_thread(_write_atomic, self._resolve(path), data, make_parents)

    def _resolve(self, path: str) -> str:
        """Relative paths mean the same place for files as for commands: the default cwd."""
        path = os.path.expanduser(path)
        if self._default_cwd is not None and not os.path.isabs(path):
            return os.path.join(self._default_cwd, path)
        return path


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _write_atomic(path: str, data: bytes, make_parents: bool) -> None:
    """Write next to the target and rename over it, so readers never see half a file.

    Writing through a symlink updates its target, an existing file keeps its mode, and a
    read-only file stays protected (a rename alone would bypass its permission bits).
    """
    if os.path.islink(path):
        path = os.path.realpath(path)
    directory = os.path.dirname(path) or "."
    if make_parents:
        os.makedirs(directory, exist_ok=True)
    elif not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), directory)
    mode = _existing_mode(path)
    temp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    # 0o666 through open() lets the umask decide a new file's mode, as a plain write would.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


def _existing_mode(path: str) -> int | None:
    """The permission bits to keep (None for a new file); refuses dirs and read-only files."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    return stat.S_IMODE(info.st_mode)


def _read_ready(fd: int) -> bytes:
    """What ``fd`` holds now, without waiting (a sandboxed program may still hold it open)."""
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)

"""Run commands and move files inside an existing, long-lived container (docker or podman).

Why it is built this way:

* Every call is one ``ENGINE exec``: nothing of ours is installed or left running in the
  container, and the engine already knows how to reach it (rootless podman, a remote
  ``DOCKER_HOST``). Locally the exec client is a subprocess like any other, so its output is
  taken with the protocol LocalBackend uses too (``tui.exec.streams``): streamed as it
  arrives, decoded incrementally, bounded.
* Killing the local ``ENGINE exec`` client does not stop what it started: the engine keeps
  the exec session running. So a tiny POSIX ``sh`` wrapper runs first inside the container,
  prints its pid on stderr as a marker line (which we strip), and ``exec``s the user's shell
  in its place. Engines ``setsid`` the process they exec (the wrapper calls ``setsid`` itself
  when they did not), so that pid is the process group of everything the command starts,
  and a timeout or cancel kills the group *inside* the container with a second exec
  (``kill -TERM -PGID``, a grace period, ``kill -KILL -PGID``). busybox, dash and bash all
  understand it.
* The marker also tells whose exit status we got. Without it the engine failed before
  anything ran, and one ``inspect`` turns that into an error that says what to do ("start
  it with ``podman start NAME``"). Nothing about the container's state is cached, so the
  next call works as soon as it runs again.
* Environment values never go on a command line (readable by every local user in ``ps``):
  the exec client gets them in its own environment and ``-e NAME`` makes the engine copy
  them. Host-specific variables (PATH, HOME, …) are not forwarded: the container's apply.
* The wrapper enters the working directory itself (not ``-w``), so a directory missing
  in the container is a clear error rather than an engine-specific exit status 126/127.
* ``read_file`` moves raw bytes over the pipe (no base64, a third less data, binary-safe);
  ``write_file`` sends the data on the command's stdin, never typed into a shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping

from tui.exec.backend import (
    BackendError,
    ChunkSink,
    CommandBackend,
    ExecResult,
    InteractiveProcess,
    raise_for_file_status,
    read_guard,
)
from tui.exec.streams import KILL_GRACE, REAP_LIMIT, CommandProtocol, wait_for_end

ENGINES = ("docker", "podman")
"""Probed in this order; the first whose ``container inspect NAME`` succeeds is used."""

HOST_ONLY_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "PWD",
        "OLDPWD",
        "TMPDIR",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "GOPATH",
        "CARGO_HOME",
        "RUSTUP_HOME",
    }
)
"""Variables describing the host, not the container: the container keeps its own values."""

START_LIMIT = 30.0
"""Seconds to wait for the wrapper's marker (the engine starting the exec) before giving up."""

PROBE_TIMEOUT = 15.0
"""Seconds for one engine probe or in-container ``kill``; a remote daemon may be slow."""

SPAWN_CLOSE_GRACE = 2.0
"""Seconds a spawned process gets to exit on its own after its stdin is closed."""

_MARKER = b"\x1eagent-tui:"
_NO_CWD = b"nocwd"
_NOT_FOUND = b"notfound"
_NO_PARENT = "echo 'no such directory' >&2; exit 2"
_DRAIN_STDIN = "trap 'cat >/dev/null 2>&1' EXIT\n"
"""Prepended to ``run_with_stdin`` commands; an EXIT trap keeps the command's exit status."""
_STOPPED_CODES = frozenset({137, 143, 255})
"""Exit statuses an exec gets when its container stops under it: worth one ``inspect``."""

# Runs as ``sh -c WRAPPER agent-tui CWD ARGS...``. It enters CWD, makes sure it leads its
# own process group (``setsid`` does not fork when the caller is not a group leader, so the
# pid stays), announces that pid, and execs the real program in its place.
_PRELUDE = r"""d=$1; shift
[ -z "$d" ] || cd -- "$d" 2>/dev/null || { printf '\036agent-tui:nocwd\n' >&2; exit 125; }
r=
if read -r s </proc/$$/stat; then
  s=${s##*) }; s=${s#* }; s=${s#* }; [ "${s%% *}" = "$$" ] || r=setsid
fi 2>/dev/null
"""
_ANNOUNCE = "printf '\\036agent-tui:%s\\n' \"$$\" >&2\n"
_RUN_WRAPPER = (
    _PRELUDE
    + _ANNOUNCE
    + r"""if command -v bash >/dev/null 2>&1; then exec $r bash -c "$1"; fi
exec $r sh -c "$1"
"""
)
_SPAWN_WRAPPER = (
    _PRELUDE
    + r"""command -v "$1" >/dev/null 2>&1 || { printf '\036agent-tui:notfound\n' >&2; exit 127; }
"""
    + _ANNOUNCE
    + 'exec $r "$@" 2>&1\n'  # stderr joins stdout, in order, as LocalProcess does
)


class _ExecProtocol(CommandProtocol):
    """The shared subprocess protocol, plus the wrapper's marker taken off the front of stderr.

    ``started`` resolves to the in-container process group id, or None when the exec ended
    without one (the engine failed, or the working directory was missing: ``no_cwd``).
    Whatever the engine printed before the marker (warnings, errors) stays on stderr.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, on_chunk: ChunkSink | None, *, raw: bool
    ) -> None:
        super().__init__(loop, on_chunk)
        self.started: asyncio.Future[int | None] = loop.create_future()
        self.no_cwd = False
        self.raw: bytearray | None = bytearray() if raw else None
        self._head = bytearray()

    @property
    def pgid(self) -> int | None:
        return self.started.result() if self.started.done() else None

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2 and not self.started.done():
            data = self._take_marker(data)
        if not data:
            return
        if fd == 1 and self.raw is not None:
            self.raw += data
            return
        super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 2 and not self.started.done():
            self._flush_head()
        super().pipe_connection_lost(fd, exc)

    def process_exited(self) -> None:
        if not self.started.done():
            self._flush_head()
        super().process_exited()

    def _take_marker(self, data: bytes) -> bytes:
        """Buffer stderr up to the marker line; return what follows it (the command's)."""
        self._head += data
        at = self._head.find(_MARKER)
        if at < 0:
            return b""
        end = self._head.find(b"\n", at)
        if end < 0:
            return b""
        before, value = bytes(self._head[:at]), bytes(self._head[at + len(_MARKER) : end])
        after = bytes(self._head[end + 1 :])
        self._head.clear()
        if before:
            super().pipe_data_received(2, before)
        self.no_cwd = value == _NO_CWD
        self.started.set_result(None if self.no_cwd else _pgid(value))
        return after

    def _flush_head(self) -> None:
        """The exec ended before any marker: what we held back is the engine's message."""
        self.started.set_result(None)
        head, self._head = bytes(self._head), bytearray()
        if head:
            super().pipe_data_received(2, head)


def _pgid(value: bytes) -> int | None:
    """A process group we may signal: a number above 1 (``kill -1`` would hit everything)."""
    try:
        pgid = int(value)
    except ValueError:
        return None
    return pgid if pgid > 1 else None


async def _capture(
    argv: list[str], *, env: Mapping[str, str] | None = None, timeout: float = PROBE_TIMEOUT
) -> tuple[int | None, str, str]:
    """Run a short engine command; (exit code or None when it hung or is missing, out, err)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        return None, "", exc.strerror or str(exc)
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        return None, "", f"no answer within {timeout:g} s"
    finally:
        if process.returncode is None:  # timed out, or our caller was cancelled
            process.kill()
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


async def container_status(
    engine: str, container: str, *, env: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """``running``, ``exited``, ``paused``… or None when ``engine`` has no such container.

    Returns the status and the engine's own words (its error when the status is None).
    """
    argv = [engine, "container", "inspect", "--format", "{{.State.Status}}", container]
    code, out, err = await _capture(argv, env=env)
    if code == 0 and out.strip():
        return out.strip().splitlines()[0], ""
    return None, _first_line(err) or f"exit status {code}"


async def detect_engine(
    container: str,
    *,
    candidates: Iterable[str] = ENGINES,
    env: Mapping[str, str] | None = None,
) -> str:
    """The first installed engine (by ``candidates`` order) that knows ``container``.

    Engines are asked concurrently, so a docker CLI without a daemon costs no extra time.

    Raises:
        BackendError: no engine is installed, or none of them has that container.
    """
    candidates = tuple(candidates)
    installed = [engine for engine in candidates if shutil.which(engine)]
    if not installed:
        raise BackendError(
            f"{' nor '.join(candidates)}: none is installed, so {container!r} is unreachable."
        )
    answers = await asyncio.gather(
        *(container_status(engine, container, env=env) for engine in installed)
    )
    for engine, (status, _) in zip(installed, answers, strict=True):
        if status is not None:
            return engine
    said = "; ".join(
        f"{engine}: {why}" for engine, (_, why) in zip(installed, answers, strict=True)
    )
    raise BackendError(f"No container named {container!r} ({said}).")


class ContainerBackend(CommandBackend):
    """Runs commands in an existing container through ``docker exec`` or ``podman exec``.

    The container is the user's: this backend never creates, starts or stops it.

    Args:
        container: Name or id of a container that is meant to keep running.
        engine: ``docker``, ``podman`` or a path to either; None probes both (see
            ``detect_engine``) on first use.
        user: ``--user`` for every exec; None uses the container's default user.
        default_cwd: Working directory (inside the container) when ``run`` gets none; None
            keeps the image's working directory. Relative file paths start here too.
        drain_timeout: Seconds to keep reading after the command exited while something else
            still holds the output pipe.
        keep_container_env: Variable names never forwarded from ``env``: for those the
            container's own values apply.
        engine_env: Extra variables for the engine client itself (``DOCKER_HOST``,
            ``CONTAINERS_CONF``), never seen by the command.
    """

    SUPPORTS_SPAWN = True

    def __init__(
        self,
        container: str,
        *,
        engine: str | None = None,
        user: str | None = None,
        default_cwd: str | None = None,
        drain_timeout: float = 2.0,
        keep_container_env: Iterable[str] = HOST_ONLY_ENV,
        engine_env: Mapping[str, str] | None = None,
    ) -> None:
        if not container:
            raise ValueError("container name must not be empty")
        self._container = container
        self._engine = engine
        self._user = user
        self._default_cwd = default_cwd
        self._drain_timeout = drain_timeout
        self._keep = frozenset(keep_container_env)
        self._engine_env = dict(engine_env or {})
        self._detecting = asyncio.Lock()
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def actor(self) -> str:
        return f"container:{self._container}"

    @property
    def container(self) -> str:
        return self._container

    async def engine(self) -> str:
        """The engine command in use, probing for it on first call.

        Raises:
            BackendError: no installed engine knows the container.
        """
        if self._engine is None:
            async with self._detecting:
                if self._engine is None:
                    self._engine = await detect_engine(self._container, env=self._client_env())
        return self._engine

    async def status(self) -> str | None:
        """The container's state as the engine reports it (``running`` …), None if missing."""
        status, _ = await container_status(
            await self.engine(), self._container, env=self._client_env()
        )
        return status

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
    ) -> ExecResult:
        if cancel is not None and cancel.is_set():
            return ExecResult(exit_code=None, cancelled=True)
        result, _ = await self._execute(
            command, cwd=cwd, env=env, timeout=timeout, on_chunk=on_chunk, cancel=cancel
        )
        return result

    async def run_with_stdin(self, command: str, data: bytes) -> ExecResult:
        """Run ``command`` with ``data`` on its stdin, output collected (not streamed).

        Whatever ``command`` leaves unread is drained before the shell exits: podman 4 drops
        the output of an exec that exits while its stdin is still being sent (measured here:
        4 runs in 10 lost everything, the exit status survived).
        """
        result, _ = await self._execute(_DRAIN_STDIN + command, stdin=data)
        return result

    async def _execute(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
        stdin: bytes | None = None,
        raw: bool = False,
    ) -> tuple[ExecResult, _ExecProtocol]:
        """One exec of the run wrapper, supervised; raises BackendError for engine failures."""
        engine = await self.engine()
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        protocol = _ExecProtocol(loop, on_chunk, raw=raw)
        workdir = cwd if cwd is not None else self._default_cwd
        argv, client_env = self._exec_argv(
            engine,
            ["sh", "-c", _RUN_WRAPPER, "agent-tui", workdir or "", command],
            env,
            interactive=stdin is not None,
        )
        transport = await self._start(loop, protocol, argv, client_env, stdin)
        close_transport = True
        try:
            timed_out, cancelled = await wait_for_end(
                protocol,
                protocol.exited,
                protocol.pipes_closed,
                timeout=timeout,
                cancel=cancel,
                kill=lambda: self._kill_group(engine, protocol, transport),
                drain_timeout=self._drain_timeout,
            )
            protocol.finish_streams()
            exit_code = None if protocol.killing else transport.get_returncode()
            await self._check_outcome(engine, protocol, exit_code, workdir)
            result = ExecResult(
                exit_code=exit_code,
                stdout=protocol.stdout.text,
                stderr=protocol.stderr.text,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                timed_out=timed_out,
                cancelled=cancelled,
                notices=protocol.notices,
            )
            return result, protocol
        except BaseException:
            # The awaiting task was cancelled (or something broke) mid-run: we may never get
            # to await again, so the in-container group is killed without a grace period.
            if protocol.killing or not protocol.exited.done():
                close_transport = self._kill_abandoned(engine, protocol, transport)
            raise
        finally:
            protocol.detach()
            if close_transport:
                transport.close()

    def _client_env(self, forwarded: Mapping[str, str] | None = None) -> dict[str, str] | None:
        """The engine client's environment; None (inherit ours) when nothing is added."""
        if not self._engine_env and not forwarded:
            return None
        return {**os.environ, **self._engine_env, **(forwarded or {})}

    def _exec_argv(
        self,
        engine: str,
        inner: list[str],
        env: Mapping[str, str] | None,
        *,
        interactive: bool,
    ) -> tuple[list[str], dict[str, str] | None]:
        """``ENGINE exec [-i] [-u USER] [-e NAME…] CONTAINER inner…`` and the client's env."""
        forwarded = {k: v for k, v in (env or {}).items() if k not in self._keep}
        argv = [engine, "exec"]
        if interactive:
            argv.append("-i")
        if self._user is not None:
            argv += ["-u", self._user]
        for name in forwarded:
            argv += ["-e", name]
        argv.append(self._container)
        argv += inner
        return argv, self._client_env(forwarded)

    async def _start(
        self,
        loop: asyncio.AbstractEventLoop,
        protocol: _ExecProtocol,
        argv: list[str],
        client_env: Mapping[str, str] | None,
        stdin: bytes | None,
    ) -> asyncio.SubprocessTransport:
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: protocol,
                *argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=client_env,
                start_new_session=True,
            )
        except OSError as exc:
            raise BackendError(f"Cannot start {argv[0]!r}: {exc.strerror or exc}.") from exc
        if stdin is not None:
            pipe = transport.get_pipe_transport(0)
            if isinstance(pipe, asyncio.WriteTransport):
                pipe.write(stdin)
                pipe.close()  # flushes what is buffered, then the command sees end of file
        return transport

    async def _kill_group(
        self, engine: str, protocol: _ExecProtocol, transport: asyncio.SubprocessTransport
    ) -> None:
        """SIGTERM the in-container group, a grace period, then SIGKILL; then the client.

        The group id is only known once the wrapper has announced it, so a kill right after
        the start waits for that (or for the exec to end without running anything).
        """
        protocol.killing = True
        await asyncio.wait({protocol.started}, timeout=START_LIMIT)
        pgid = protocol.pgid
        if pgid is not None:
            await self._signal_inside(engine, pgid, "TERM")
            await asyncio.wait({protocol.exited, protocol.pipes_closed}, timeout=KILL_GRACE)
            # Always: members that ignore SIGTERM may remain, and zombies (a container whose
            # pid 1 does not reap) make "is the group empty" unanswerable from outside.
            await self._signal_inside(engine, pgid, "KILL")
        if not protocol.exited.done():
            await asyncio.wait({protocol.exited}, timeout=REAP_LIMIT)
        if not protocol.exited.done():
            transport.kill()
            await asyncio.wait({protocol.exited}, timeout=REAP_LIMIT)

    async def _signal_inside(self, engine: str, pgid: int, signal_name: str) -> None:
        """``kill -SIG -PGID`` in the container; an already empty group is not an error."""
        await _capture(self._kill_argv(engine, pgid, signal_name), env=self._client_env())

    def _kill_argv(self, engine: str, pgid: int, signal_name: str) -> list[str]:
        script = f"kill -{signal_name} -{pgid} 2>/dev/null; exit 0"
        argv = [engine, "exec"]
        if self._user is not None:
            argv += ["-u", self._user]
        return [*argv, self._container, "sh", "-c", script]

    def _kill_abandoned(
        self, engine: str, protocol: _ExecProtocol, transport: asyncio.SubprocessTransport
    ) -> bool:
        """SIGKILL the group of a run whose caller went away, without awaiting anything.

        With the group known, a daemon thread runs the kill, so it happens even if the event
        loop is shutting down. Otherwise a task waits for the marker first, keeping the exec
        client alive until then (killing it would lose the marker, and with it the group).
        Returns whether the caller should close the transport now.
        """
        pgid = protocol.pgid
        if pgid is not None:
            argv = self._kill_argv(engine, pgid, "KILL")
            env = self._client_env()
            threading.Thread(
                target=_run_quietly, args=(argv, env), name="container-kill", daemon=True
            ).start()
            return True
        if protocol.started.done():
            return True  # ended without running anything: nothing inside to kill
        task = asyncio.get_running_loop().create_task(
            self._kill_when_started(engine, protocol, transport)
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return False

    async def _kill_when_started(
        self, engine: str, protocol: _ExecProtocol, transport: asyncio.SubprocessTransport
    ) -> None:
        try:
            await asyncio.wait({protocol.started}, timeout=START_LIMIT)
            pgid = protocol.pgid
            if pgid is not None:
                await self._signal_inside(engine, pgid, "KILL")
        finally:
            transport.close()

    async def _check_outcome(
        self, engine: str, protocol: _ExecProtocol, exit_code: int | None, workdir: str | None
    ) -> None:
        """Raise BackendError when the exit status is the engine's, not the command's."""
        if protocol.killing:
            return
        if protocol.no_cwd:
            raise self._no_cwd_error(workdir)
        if protocol.pgid is not None or exit_code == 0:
            if exit_code in _STOPPED_CODES:
                await self._raise_if_down(engine, during=True)
            return
        await self._raise_if_down(engine, during=False)
        said = _first_line(protocol.stderr.text) or f"exit status {exit_code}"
        hint = " (the container needs /bin/sh)" if exit_code in (126, 127) else ""
        raise BackendError(f"{engine} exec in {self._container} failed{hint}: {said}")

    def _no_cwd_error(self, workdir: str | None) -> BackendError:
        return BackendError(
            f"Working directory {workdir!r} does not exist in container "
            f"{self._container} (or cannot be entered). Mount it at the same path "
            f"(-v {workdir}:{workdir}) or pass a directory that exists there."
        )

    async def _raise_if_down(self, engine: str, *, during: bool) -> None:
        status, why = await container_status(engine, self._container, env=self._client_env())
        if status == "running":
            return
        name = self._container
        if status is None:
            raise BackendError(
                f"container {name} does not exist ({engine}: {why}): create it, "
                "or point the session at another container."
            )
        when = " while the command ran" if during else ""
        if status == "paused":
            raise BackendError(
                f"container {name} is paused{when}: resume it with `{engine} unpause {name}`"
            )
        stopped = "stopped" if during else "is not running"
        raise BackendError(
            f"container {name} {stopped}{when} (status: {status}): "
            f"start it with `{engine} start {name}`"
        )

    # -- files -------------------------------------------------------------------------------

    async def read_file(self, path: str) -> bytes:
        quoted = shlex.quote(path)
        result, protocol = await self._execute(
            read_guard(quoted) + f"exec cat -- {quoted}", raw=True
        )
        _raise_for_file(path, result, "cannot read")
        return bytes(protocol.raw or b"")

    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        quoted = shlex.quote(path)
        create = 'mkdir -p -- "$p" || exit 1' if make_parents else _NO_PARENT
        # Where the folder is missing, its first existing ancestor tells a missing folder
        # (FileNotFoundError, or created) from a file in the way (NotADirectoryError).
        script = (
            f'p=$(dirname -- {quoted}); if [ ! -d "$p" ]; then d=$p; '
            'while [ ! -e "$d" ]; do d=$(dirname -- "$d"); done; '
            f"[ -d \"$d\" ] || {{ echo 'not a directory' >&2; exit 20; }}; {create}; fi; "
            f"if [ -d {quoted} ]; then echo 'is a directory' >&2; exit 21; fi; "
            f"cat > {quoted}"
        )
        result = await self.run_with_stdin(script, data)
        _raise_for_file(path, result, "cannot write")

    # -- interactive processes ---------------------------------------------------------------

    async def spawn(
        self, argv: list[str], *, env: Mapping[str, str] | None = None
    ) -> InteractiveProcess:
        """Start ``argv`` in the container, piped; its stderr is merged into stdout.

        Returns once the process runs inside the container (the wrapper's marker seen). It
        starts in ``default_cwd`` when one was given.

        Raises:
            BackendError: the container is not running, the program or the working directory
                is missing there, or the exec failed to start.
        """
        if not argv:
            raise ValueError("spawn needs a program to run")
        engine = await self.engine()
        workdir = self._default_cwd or ""
        full, client_env = self._exec_argv(
            engine, ["sh", "-c", _SPAWN_WRAPPER, "agent-tui", workdir, *argv], env, interactive=True
        )
        try:
            process = await asyncio.create_subprocess_exec(
                *full,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=client_env,
                start_new_session=True,
            )
        except OSError as exc:
            raise BackendError(f"Cannot start {engine!r}: {exc.strerror or exc}.") from exc
        assert process.stderr is not None
        try:
            value, said = await asyncio.wait_for(_read_marker(process.stderr), START_LIMIT)
        except BaseException:
            process.kill()
            await process.wait()
            raise
        pgid = _pgid(value) if value is not None else None
        if pgid is None:
            code = await process.wait()
            if value == _NOT_FOUND:
                raise BackendError(f"{argv[0]!r} was not found in container {self._container}")
            if value == _NO_CWD:
                raise self._no_cwd_error(workdir)
            await self._raise_if_down(engine, during=False)
            raise BackendError(
                f"{engine} exec {shlex.join(argv)} in {self._container} failed: "
                f"{said or f'exit status {code}'}"
            )
        return ContainerProcess(self, engine, process, pgid)

    async def close(self) -> None:
        """Let kills of abandoned runs finish; the container itself is left running."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


async def _read_marker(stream: asyncio.StreamReader) -> tuple[bytes | None, str]:
    """Read stderr up to the wrapper's marker: (its value or None; the engine's text)."""
    said: list[str] = []
    while line := await stream.readline():
        at = line.find(_MARKER)
        if at >= 0:
            return line[at + len(_MARKER) :].strip(), ""
        said.append(line.decode(errors="replace"))
    return None, _first_line("".join(said))


def _run_quietly(argv: list[str], env: Mapping[str, str] | None) -> None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            timeout=PROBE_TIMEOUT,
            check=False,
        )


def _raise_for_file(path: str, result: ExecResult, what: str) -> None:
    """``raise_for_file_status``, plus 20: ``write_file`` found a file where a folder goes."""
    if result.exit_code == 20:
        raise NotADirectoryError(path)
    raise_for_file_status(path, result, what)


class ContainerProcess(InteractiveProcess):
    """A process started by ``ContainerBackend.spawn``: the exec client's pipes, plus the
    in-container process group so ``close`` can stop it even if the client is gone."""

    _TAIL = 4096
    close_grace: float = SPAWN_CLOSE_GRACE
    """Seconds after stdin is closed before the process is killed (set per instance)."""

    def __init__(
        self,
        backend: ContainerBackend,
        engine: str,
        process: asyncio.subprocess.Process,
        pgid: int,
    ) -> None:
        self._backend = backend
        self._engine = engine
        self._process = process
        self.pgid = pgid
        """The process's group id inside the container (its pid there)."""
        self._stderr_tail = bytearray()
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        self._closed = False

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def engine_messages(self) -> str:
        """The last few KB the engine client said on its stderr (its errors, not the process's)."""
        return self._stderr_tail.decode(errors="replace")

    async def write(self, data: bytes) -> None:
        stdin = self._process.stdin
        if self._closed or stdin is None or self._process.returncode is not None:
            raise BackendError(self._gone_message())
        try:
            stdin.write(data)
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise BackendError(self._gone_message()) from exc

    async def read(self, size: int = 65536) -> bytes:
        assert self._process.stdout is not None
        return await self._process.stdout.read(size)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        try:
            if not await self._exited_within(self.close_grace):
                backend = self._backend
                await backend._signal_inside(self._engine, self.pgid, "TERM")
                if not await self._exited_within(KILL_GRACE):
                    await backend._signal_inside(self._engine, self.pgid, "KILL")
                if not await self._exited_within(REAP_LIMIT):
                    self._process.kill()
                    await self._process.wait()
        finally:
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task

    async def _exited_within(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(asyncio.shield(self._process.wait()), seconds)
        except TimeoutError:
            return False
        return True

    async def _drain_stderr(self) -> None:
        """Keep reading the client's stderr so it never blocks on a full pipe."""
        stream = self._process.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self._stderr_tail += chunk
            del self._stderr_tail[: -self._TAIL]

    def _gone_message(self) -> str:
        tail = _first_line(self.engine_messages)
        code = self._process.returncode
        status = f"exit status {code}" if code is not None else "closed"
        return f"the process in container {self._backend.container} is gone ({status})" + (
            f": {tail}" if tail else ""
        )

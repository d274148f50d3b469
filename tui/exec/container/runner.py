"""One ``ENGINE exec`` of a command, supervised until it ends, times out or is cancelled.

Why it is built this way: locally the exec client is a subprocess like any other, so its
output is taken with the protocol the local backend uses too (``tui.exec.streams``):
streamed as it arrives, decoded incrementally, bounded; the wait, kill and drain sequence is
shared as well. What differs is the kill: the command's group is killed *inside* the
container (TERM, a grace period, KILL), and a run whose caller went away is killed without
awaiting anything, so it cannot outlive a cancelled task or a closing event loop.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Mapping

from tui.exec.backend import BackendError, ChunkSink, ExecResult
from tui.exec.container.client import EngineClient
from tui.exec.container.engine import first_line
from tui.exec.container.wrapper import RUN_WRAPPER, START_LIMIT, ExecProtocol
from tui.exec.streams import KILL_GRACE, REAP_LIMIT, wait_for_end

_STOPPED_CODES = frozenset({137, 143, 255})
"""Exit statuses an exec gets when its container stops under it: worth one ``inspect``."""


class ExecRunner:
    """Runs the run wrapper through ``ENGINE exec`` and turns engine failures into errors.

    Args:
        client: The engine client aimed at the container.
        default_cwd: Working directory when a command gets none; None keeps the image's.
        drain_timeout: Seconds to keep reading after the command exited while something
            else still holds the output pipe.
    """

    def __init__(
        self, client: EngineClient, *, default_cwd: str | None, drain_timeout: float
    ) -> None:
        self._client = client
        self._default_cwd = default_cwd
        self._drain_timeout = drain_timeout
        self._pending: set[asyncio.Task[None]] = set()

    async def execute(
        self,
        engine: str,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
        stdin: bytes | None = None,
        raw: bool = False,
    ) -> tuple[ExecResult, ExecProtocol]:
        """One exec of the run wrapper, supervised; raises BackendError for engine failures.

        With ``raw``, stdout is kept as bytes in the protocol's ``raw`` instead of decoded.
        """
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        protocol = ExecProtocol(loop, on_chunk, raw=raw)
        workdir = cwd if cwd is not None else self._default_cwd
        argv, client_env = self._client.exec_argv(
            engine,
            ["sh", "-c", RUN_WRAPPER, "agent-tui", workdir or "", command],
            env,
            interactive=stdin is not None,
        )
        transport = await _start(loop, protocol, argv, client_env, stdin)
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

    async def _kill_group(
        self, engine: str, protocol: ExecProtocol, transport: asyncio.SubprocessTransport
    ) -> None:
        """SIGTERM the in-container group, a grace period, then SIGKILL; then the client.

        The group id is only known once the wrapper has announced it, so a kill right after
        the start waits for that (or for the exec to end without running anything).
        """
        protocol.killing = True
        await asyncio.wait({protocol.started}, timeout=START_LIMIT)
        pgid = protocol.pgid
        if pgid is not None:
            await self._client.signal_inside(engine, pgid, "TERM")
            await asyncio.wait({protocol.exited, protocol.pipes_closed}, timeout=KILL_GRACE)
            # Always: members that ignore SIGTERM may remain, and zombies (a container whose
            # pid 1 does not reap) make "is the group empty" unanswerable from outside.
            await self._client.signal_inside(engine, pgid, "KILL")
        if not protocol.exited.done():
            await asyncio.wait({protocol.exited}, timeout=REAP_LIMIT)
        if not protocol.exited.done():
            transport.kill()
            await asyncio.wait({protocol.exited}, timeout=REAP_LIMIT)

    def _kill_abandoned(
        self, engine: str, protocol: ExecProtocol, transport: asyncio.SubprocessTransport
    ) -> bool:
        """SIGKILL the group of a run whose caller went away, without awaiting anything.

        With the group known, a daemon thread runs the kill, so it happens even if the event
        loop is shutting down. Otherwise a task waits for the marker first, keeping the exec
        client alive until then (killing it would lose the marker, and with it the group).
        Returns whether the caller should close the transport now.
        """
        pgid = protocol.pgid
        if pgid is not None:
            self._client.kill_from_thread(engine, pgid)
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
        self, engine: str, protocol: ExecProtocol, transport: asyncio.SubprocessTransport
    ) -> None:
        try:
            await asyncio.wait({protocol.started}, timeout=START_LIMIT)
            pgid = protocol.pgid
            if pgid is not None:
                await self._client.signal_inside(engine, pgid, "KILL")
        finally:
            transport.close()

    async def _check_outcome(
        self, engine: str, protocol: ExecProtocol, exit_code: int | None, workdir: str | None
    ) -> None:
        """Raise BackendError when the exit status is the engine's, not the command's."""
        if protocol.killing:
            return
        if protocol.no_cwd:
            raise self._client.no_cwd_error(workdir)
        if protocol.pgid is not None or exit_code == 0:
            if exit_code in _STOPPED_CODES:
                await self._client.raise_if_down(engine, during=True)
            return
        await self._client.raise_if_down(engine, during=False)
        said = first_line(protocol.stderr.text) or f"exit status {exit_code}"
        hint = " (the container needs /bin/sh)" if exit_code in (126, 127) else ""
        raise BackendError(f"{engine} exec in {self._client.container} failed{hint}: {said}")

    async def close(self) -> None:
        """Let kills of abandoned runs finish."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


async def _start(
    loop: asyncio.AbstractEventLoop,
    protocol: ExecProtocol,
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


__all__ = ["ExecRunner"]

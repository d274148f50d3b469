"""Long-lived processes in the container with byte pipes (a tmux control client, say).

Why it is built this way: the process starts behind the spawn wrapper, so its in-container
process group is known before it is handed over, and ``close`` can stop it even when the
local exec client is gone: stdin closed first, then TERM and KILL to the group inside the
container, and the client killed last. The client's own stderr is drained all along, so it
never blocks on a full pipe, and its last words explain a process that went away.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import subprocess
from collections.abc import Mapping

from tui.exec.backend import BackendError, InteractiveProcess
from tui.exec.container.client import EngineClient
from tui.exec.container.engine import first_line
from tui.exec.container.wrapper import (
    NO_CWD,
    NOT_FOUND,
    SPAWN_WRAPPER,
    START_LIMIT,
    pgid_from,
    read_marker,
)
from tui.exec.streams import KILL_GRACE, REAP_LIMIT

SPAWN_CLOSE_GRACE = 2.0
"""Seconds a spawned process gets to exit on its own after its stdin is closed."""


async def start_process(
    client: EngineClient,
    engine: str,
    argv: list[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | None,
) -> ContainerProcess:
    """Start ``argv`` (not empty) in the container, piped; its stderr is merged into stdout.

    Returns once the process runs inside the container (the wrapper's marker seen).

    Raises:
        BackendError: the container is not running, the program or the working directory
            is missing there, or the exec failed to start.
    """
    workdir = cwd or ""
    full, client_env = client.exec_argv(
        engine, ["sh", "-c", SPAWN_WRAPPER, "agent-tui", workdir, *argv], env, interactive=True
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
        value, said = await asyncio.wait_for(read_marker(process.stderr), START_LIMIT)
    except BaseException:
        process.kill()
        await process.wait()
        raise
    pgid = pgid_from(value) if value is not None else None
    if pgid is None:
        code = await process.wait()
        if value == NOT_FOUND:
            raise BackendError(f"{argv[0]!r} was not found in container {client.container}")
        if value == NO_CWD:
            raise client.no_cwd_error(workdir)
        await client.raise_if_down(engine, during=False)
        raise BackendError(
            f"{engine} exec {shlex.join(argv)} in {client.container} failed: "
            f"{said or f'exit status {code}'}"
        )
    return ContainerProcess(client, engine, process, pgid)


class ContainerProcess(InteractiveProcess):
    """A process started by ``ContainerBackend.spawn``: the exec client's pipes, plus the
    in-container process group so ``close`` can stop it even if the client is gone."""

    _TAIL = 4096
    close_grace: float = SPAWN_CLOSE_GRACE
    """Seconds after stdin is closed before the process is killed (set per instance)."""

    def __init__(
        self,
        client: EngineClient,
        engine: str,
        process: asyncio.subprocess.Process,
        pgid: int,
    ) -> None:
        self._client = client
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
                client = self._client
                await client.signal_inside(self._engine, self.pgid, "TERM")
                if not await self._exited_within(KILL_GRACE):
                    await client.signal_inside(self._engine, self.pgid, "KILL")
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
        tail = first_line(self.engine_messages)
        code = self._process.returncode
        status = f"exit status {code}" if code is not None else "closed"
        return f"the process in container {self._client.container} is gone ({status})" + (
            f": {tail}" if tail else ""
        )


__all__ = ["SPAWN_CLOSE_GRACE", "ContainerProcess", "start_process"]

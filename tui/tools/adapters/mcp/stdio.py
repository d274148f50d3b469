"""A stdio MCP server's process: spawned, framed as session messages, and stopped for good.

Stdio servers are spawned here rather than through the SDK's ``stdio_client``: the exit code
and the moment of death are what a call's race needs, and that transport does not expose its
process. The framing is the SDK's own (``jsonrpc_message_adapter``, ``SessionMessage``).
Each server runs in its own process group, its stderr goes (redacted) to its ``ServerLog``,
and stopping it takes the whole group down.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from tui.config import McpServerSettings
from tui.exec.sandbox.sandbox import Confine
from tui.tools.adapters.mcp.failures import StartupFailed
from tui.tools.adapters.mcp.server_log import ServerLog

TransportStreams = tuple[Any, Any]
"""A transport's (read stream, write stream), as ``ClientSession`` takes them."""

STDOUT_LINE_LIMIT = 32 * 1024 * 1024
"""One JSON-RPC message per line; images arrive base64-encoded, so allow big ones."""
STDIN_GRACE = 2.0
"""Seconds a server has to exit by itself once its stdin is closed (the spec's polite stop)."""
TERM_GRACE = 2.0
KILL_GRACE = 2.0


class _ServerProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol plus a callback the moment the process exits.

    ``Process.wait()`` also waits for the pipes to close, which a grandchild holding stdout
    can delay forever; the exit itself is what the call race needs.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_exit: Callable[[int | None], None],
        on_stderr: Callable[[bytes], None],
    ) -> None:
        super().__init__(limit=STDOUT_LINE_LIMIT, loop=loop)
        self._on_exit = on_exit
        self._on_stderr = on_stderr
        self._exit_transport: asyncio.BaseTransport | None = None

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 2:  # the server's stderr: to its log, through the redactor
            self._on_stderr(data if isinstance(data, bytes) else data.encode())
            return
        super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 2:
            self._on_stderr(b"")  # the end of stderr: the log holds all of it now
        super().pipe_connection_lost(fd, exc)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._exit_transport = transport

    def process_exited(self) -> None:
        super().process_exited()
        transport = self._exit_transport
        code = (
            transport.get_returncode()
            if isinstance(transport, asyncio.SubprocessTransport)
            else None
        )
        self._on_exit(code)


class StdioServer:
    """One run of a stdio server's process.

    Args:
        exited: Set the moment the process exits (``exit_code`` is then known).
        lost: Set when the server closes its stdout before we began to stop it.
    """

    def __init__(
        self,
        settings: McpServerSettings,
        *,
        env: Mapping[str, str],
        cwd: Path,
        log: ServerLog,
        exited: asyncio.Event,
        lost: asyncio.Event,
        confine: Confine | None = None,
    ) -> None:
        self.settings = settings
        self._confine = confine
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.exited_by_itself = False
        """The process ended on its own, not because we stopped it."""
        self._env = env
        self._cwd = cwd
        self._log = log
        self._exited = exited
        self._lost = lost
        self._shutting_down = False
        self._closed_by_server = False
        """stdout ended before we began to stop it: whatever exit follows is the server's own."""
        self._signalled = False

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[TransportStreams]:
        """Spawn the server and yield its streams; leaving stops it, process group and all.

        Raises:
            StartupFailed: The command or its working directory cannot be used.
        """
        settings = self.settings
        command = settings.command or ""
        cwd = await asyncio.to_thread(self._working_dir)
        env = {**self._env, **settings.env}
        loop = asyncio.get_running_loop()
        header = f"starting: {' '.join([command, *settings.args])} (in {cwd})"
        argv = [command, *settings.args]
        if self._confine is not None:
            # Found here, where the error can say so: inside, bwrap would only exit 1.
            found = shutil.which(command, path=env.get("PATH"))
            if found is None:
                raise StartupFailed(
                    f"command `{command}` was not found (not a file, and not on the PATH it was "
                    "given); check `command` in its settings"
                )
            argv = await self._confine([found, *settings.args], str(cwd))
        await asyncio.to_thread(self._log.start, header)
        started = False
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _ServerProtocol(loop, self._on_process_exit, self._log.stderr),
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
            started = True
        except FileNotFoundError:
            raise StartupFailed(
                f"command `{command}` was not found (not a file, and not on the PATH it was "
                "given); check `command` in its settings"
            ) from None
        except PermissionError:
            raise StartupFailed(f"command `{command}` is not executable") from None
        except (OSError, ValueError) as exc:
            raise StartupFailed(f"command `{command}` could not be started: {exc}") from None
        finally:
            if not started:
                self._log.close()  # nothing more will be written
        process = asyncio.subprocess.Process(transport, protocol, loop)
        self.pid = process.pid
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
        pumps = [
            asyncio.create_task(self._pump_stdout(process, read_send)),
            asyncio.create_task(self._pump_stdin(process, write_receive, read_send)),
        ]
        try:
            yield read_receive, write_send
        finally:
            shutdown = asyncio.ensure_future(self._shutdown(process, transport))
            with contextlib.suppress(asyncio.CancelledError):
                # Shielded: a cancelled caller must not leave the server running.
                await asyncio.shield(shutdown)
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for stream in (read_send, read_receive, write_send, write_receive):
                stream.close()

    def signal_group(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the server's process group (nothing once none was started)."""
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _working_dir(self) -> Path:
        """The server's ``cwd`` (relative ones under the workspace), checked to exist."""
        raw = self.settings.cwd
        cwd = self._cwd / Path(raw).expanduser() if raw else self._cwd
        if not cwd.is_dir():
            raise StartupFailed(f"its working directory {cwd} does not exist")
        return cwd

    def _on_process_exit(self, code: int | None) -> None:
        self.exit_code = code
        self.exited_by_itself = not self._shutting_down or (
            self._closed_by_server and not self._signalled
        )
        self._exited.set()

    async def _pump_stdout(
        self,
        process: asyncio.subprocess.Process,
        sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        """Server stdout lines to session messages; anything not JSON-RPC goes to the log."""
        assert process.stdout is not None
        try:
            while True:
                try:
                    line = await process.stdout.readline()
                except ValueError:
                    await self._log.note(
                        f"a stdout line exceeded {STDOUT_LINE_LIMIT} bytes; dropped"
                    )
                    continue
                if not line:
                    if not self._shutting_down:
                        self._closed_by_server = True
                        self._lost.set()
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError:
                    await self._log.note(f"not JSON-RPC on stdout: {line[:300]!r}")
                    continue
                await sink.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            sink.close()

    async def _pump_stdin(
        self,
        process: asyncio.subprocess.Process,
        source: MemoryObjectReceiveStream[SessionMessage],
        reader_sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdin is not None
        try:
            async for item in source:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                process.stdin.write(data.encode())
                await process.stdin.drain()
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The server stopped reading: end the session's view of the connection too, so
            # no request waits on an answer that cannot come.
            reader_sink.close()

    async def _shutdown(
        self, process: asyncio.subprocess.Process, transport: asyncio.SubprocessTransport
    ) -> None:
        """Close stdin, wait, SIGTERM the group, wait, SIGKILL it; leftovers go with it."""
        self._shutting_down = True
        if process.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                process.stdin.close()
        if not await self._wait_exit(STDIN_GRACE):
            self._signalled = True
            self.signal_group(signal.SIGTERM)
            if not await self._wait_exit(TERM_GRACE):
                self.signal_group(signal.SIGKILL)
                await self._wait_exit(KILL_GRACE)
        # Whatever the server left behind in its group (a child it spawned) is ours to end.
        self.signal_group(signal.SIGKILL)
        transport.close()
        self._log.close()

    async def _wait_exit(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._exited.wait(), timeout)
        except TimeoutError:
            return False
        return True

"""One connection to one MCP server, owned by one long-lived task.

The SDK's transports and ``ClientSession`` are async context managers that must be entered
and left in the same task, so each server gets a task that opens them, performs the
handshake, lists the tools and then waits until it is told to stop or the server dies. Tool
calls are made from the callers' own tasks through the session and raced against the server's
death, so a server that falls over mid-call fails that call at once with its exit code and
last stderr lines instead of leaving it to run out its timeout.

A server may change its tools at run time and say so with ``notifications/tools/list_changed``.
The list is then read again by a task of the connection's own, never inside the SDK's message
handler: a request awaited there could wait on the very receive loop that must deliver its
answer. Notifications that arrive while a re-list runs are folded into one more re-list.

Stdio servers are spawned here rather than through the SDK's ``stdio_client``: the exit code
and the moment of death are what the race needs, and that transport does not expose its
process. The framing is the SDK's own (``jsonrpc_message_adapter``, ``SessionMessage``).
Each server runs in its own process group, its stderr goes to ``log_dir/NAME.log`` (never to
our terminal, which the full-screen UI owns), and stopping it takes the whole group down.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import os
import re
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

import tui
from tui.config import McpServerSettings
from tui.errors import Cancelled, ExecutionFailed

ServerStateName = Literal[
    "starting", "connected", "failed", "crashed", "stopped", "untrusted", "disabled"
]
TransportStreams = tuple[Any, Any]
"""A transport's (read stream, write stream), as ``ClientSession`` takes them."""

CLIENT_INFO = mcp_types.Implementation(name="agent-tui", version=tui.__version__)
STDOUT_LINE_LIMIT = 32 * 1024 * 1024
"""One JSON-RPC message per line; images arrive base64-encoded, so allow big ones."""
STDIN_GRACE = 2.0
"""Seconds a server has to exit by itself once its stdin is closed (the spec's polite stop)."""
TERM_GRACE = 2.0
KILL_GRACE = 2.0
STOP_TIMEOUT = STDIN_GRACE + TERM_GRACE + KILL_GRACE + 2.0
DEATH_REPORT_WAIT = 3.0
"""After a call sees the connection close, how long to wait for the exit code to be known."""
CALL_TIMEOUT_SLACK = 2.0
"""The SDK times a call out itself (and tells the server); ours only backs it up."""
STDERR_TAIL_LINES = 8
STDERR_TAIL_BYTES = 16 * 1024
HTTP_CONNECT_TIMEOUT = 30.0
HTTP_READ_TIMEOUT = 300.0
MAX_TOOL_PAGES = 100
OUR_LOG_PREFIX = "agent-tui: "
"""Marks lines we add to a server's log, so the stderr tail shows only the server's own."""

StateListener = Callable[["McpConnection"], None]
ToolsListener = Callable[["McpConnection"], None]


class _StartupFailed(Exception):
    """Start-up failed for a reason already worded for the person."""


class _Stopped(Exception):
    """We were asked to stop while still starting."""


class _ServerExited(Exception):
    """The stdio process ended while we were starting; the exit code tells the rest."""


class _ServerProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol plus a callback the moment the process exits.

    ``Process.wait()`` also waits for the pipes to close, which a grandchild holding stdout
    can delay forever; the exit itself is what the call race needs.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, on_exit: Callable[[int | None], None]
    ) -> None:
        super().__init__(limit=STDOUT_LINE_LIMIT, loop=loop)
        self._on_exit = on_exit
        self._exit_transport: asyncio.BaseTransport | None = None

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


class McpConnection:
    """The life of one configured server: starting, connected, then stopped, crashed or failed.

    ``start``, ``call`` and ``stop`` never leave the server task half-open: every path ends
    with the task finished, the process group gone and ``state`` saying why.

    ``on_state`` hears every state change. ``on_tools_changed`` hears that ``tools`` was
    re-read after the server announced a change; a re-read that fails keeps the old list and
    says so in the server's log only.
    """

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        *,
        env: Mapping[str, str],
        cwd: Path,
        log_dir: Path,
        on_state: StateListener | None = None,
        on_tools_changed: ToolsListener | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.state: ServerStateName = "starting"
        self.error: str | None = None
        self.tools: list[mcp_types.Tool] = []
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.log_path = log_dir / f"{_safe_file_name(name)}.log"
        self._env = dict(env)
        self._cwd = cwd
        self._on_state = on_state
        self._on_tools_changed = on_tools_changed
        self._relisting: asyncio.Task[None] | None = None
        self._relist_wanted = False
        """A list-changed notice arrived that no re-list has started to answer yet."""
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._decided = asyncio.Event()
        """Set once the state leaves ``starting``: start() need not wait for the cleanup."""
        self._exited = asyncio.Event()
        self._ended = asyncio.Event()
        self._lost = asyncio.Event()
        """The connection ended under us (stdout closed, the session saw it close)."""
        self._shutting_down = False
        self._closed_by_server = False
        """stdout ended before we began to stop it: whatever exit follows is the server's own."""
        self._exited_by_itself = False
        self._signalled = False
        self._failure: BaseException | None = None
        self._problem: str | None = None
        self._phase = "start"
        self._log_offset = 0

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return self.settings.transport

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server task and wait until it is connected or has failed. Never raises."""
        if self._task is not None:
            return
        self._task = asyncio.create_task(self._serve(), name=f"mcp-server:{self.name}")
        decided = asyncio.ensure_future(self._decided.wait())
        try:
            # The task enforces startup_timeout itself; this only guards against it hanging.
            await asyncio.wait(
                {decided, self._task},
                timeout=self.settings.startup_timeout + STOP_TIMEOUT,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            decided.cancel()
        if not self._decided.is_set() and not self._task.done():
            self._problem = self._problem or (
                f"did not finish starting within {self.settings.startup_timeout:g} s "
                "(startup_timeout)"
            )
            await self.stop()

    async def stop(self) -> None:
        """Ask the server task to stop and wait until it has, process group included."""
        self._stop.set()
        task = self._task
        if task is None:
            if self.state == "starting":
                self._set_state("stopped")
            return
        if not task.done():
            await asyncio.wait({task}, timeout=STOP_TIMEOUT)
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=KILL_GRACE + 1)
        if not task.done():
            self._signal_group(signal.SIGKILL)

    async def _serve(self) -> None:
        deadline = asyncio.get_running_loop().time() + self.settings.startup_timeout
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.transport == "stdio":
                    streams = await stack.enter_async_context(self._stdio_transport())
                else:
                    streams = await stack.enter_async_context(self._http_transport())
                read_stream, write_stream = streams
                session = await stack.enter_async_context(
                    ClientSession(
                        read_stream,
                        write_stream,
                        logging_callback=self._on_server_log,
                        message_handler=self._on_message,
                        client_info=CLIENT_INFO,
                    )
                )
                # Runs before the session closes, so a re-list never outlives its session.
                stack.push_async_callback(self._stop_relisting)
                self.tools = await self._handshake(session, deadline)
                self._session = session
                self._set_state("connected")
                self._ready.set()
                await _first_of(self._stop, self._exited, self._lost)
        except Exception as exc:  # every failure of a server becomes its state, never ours
            # Our own signals may arrive wrapped in the SDK's task groups' exception groups.
            leaf = _leaf(exc)
            if isinstance(leaf, _StartupFailed):
                self._problem = str(leaf)
            elif not isinstance(leaf, _Stopped | _ServerExited):
                self._failure = exc
        finally:
            self._session = None
            await self._stop_relisting()
            await self._settle()
            self._ended.set()

    async def _handshake(self, session: ClientSession, deadline: float) -> list[mcp_types.Tool]:
        """Initialize and list tools, racing the work against stop, exit and the deadline."""
        work = asyncio.ensure_future(self._initialize_and_list(session))
        work.add_done_callback(_consume_outcome)
        stop = asyncio.ensure_future(self._stop.wait())
        exited = asyncio.ensure_future(self._exited.wait())
        try:
            remaining = max(deadline - asyncio.get_running_loop().time(), 0.0)
            done, _ = await asyncio.wait(
                {work, stop, exited}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stop.cancel()
            exited.cancel()
            if not work.done():
                work.cancel()
        if work in done:
            return work.result()
        if exited in done:
            raise _ServerExited
        if stop in done:
            raise _Stopped
        step = "the initialize request" if self._phase == "initialize" else "tools/list"
        self._problem = (
            f"did not answer {step} within {self.settings.startup_timeout:g} s (startup_timeout)"
        )
        # Say so now; stopping a server that ignores us can take a few more seconds.
        await self._settle()
        raise _StartupFailed(self._problem)

    async def _initialize_and_list(self, session: ClientSession) -> list[mcp_types.Tool]:
        self._phase = "initialize"
        await session.initialize()
        capabilities = session.server_capabilities
        if capabilities is not None and capabilities.tools is None:
            return []
        self._phase = "tools/list"
        return await _list_all_tools(session)

    async def _settle(self) -> None:
        """Decide the final state once the task's contexts are closed (the exit code is known)."""
        if self.state in ("failed", "crashed", "stopped"):
            return
        was_ready = self._ready.is_set()
        if self._problem is not None:
            self.error = self._problem + (await self._stderr_suffix() if self.pid else "")
            self._set_state("failed")
        elif self._stop.is_set():
            self._set_state("stopped")
        elif not was_ready:
            self.error = await self._describe_end(starting=True)
            self._set_state("failed")
        else:
            self.error = await self._describe_end(starting=False)
            self._set_state("crashed")

    async def _describe_end(self, *, starting: bool) -> str:
        if self._exited_by_itself:
            when = "during start-up" if starting else ""
            text = f"exited ({_exit_text(self.exit_code)}) {when}".rstrip()
            return text + await self._stderr_suffix()
        failure = self._failure
        if failure is None:
            text = "closed the connection" + (" during start-up" if starting else "")
            return text + await self._stderr_suffix()
        return _describe_failure(failure, self.settings)

    async def _stderr_suffix(self) -> str:
        if self.transport != "stdio":
            return ""
        lines = await self.stderr_tail()
        if not lines:
            return "; it wrote nothing to stderr"
        return "; its last stderr lines:\n" + "\n".join(f"  {line}" for line in lines)

    def _set_state(self, state: ServerStateName) -> None:
        self.state = state
        if state == "connected":
            self.error = None
        self._decided.set()
        if self._on_state is not None:
            self._on_state(self)

    # -- calls -------------------------------------------------------------------------------

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        cancel: asyncio.Event,
        on_progress: Callable[[float | None, str], None] | None = None,
    ) -> mcp_types.CallToolResult:
        """Call ``tool``; the server's death, ``cancel`` and the timeout all end it promptly.

        Raises:
            ExecutionFailed: the server is not connected, died, timed out or refused the call.
            Cancelled: ``cancel`` was set first.
        """
        session = self._session
        if self.state != "connected" or session is None:
            raise ExecutionFailed(self.unavailable_message())
        timeout = self.settings.call_timeout

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(progress / total if total else None, message or "")

        call = asyncio.ensure_future(
            session.call_tool(
                tool,
                arguments,
                read_timeout_seconds=timeout,
                progress_callback=progress if on_progress is not None else None,
            )
        )
        call.add_done_callback(_consume_outcome)
        ended = asyncio.ensure_future(self._ended.wait())
        exited = asyncio.ensure_future(self._exited.wait())
        cancelled = asyncio.ensure_future(cancel.wait())
        try:
            done, _ = await asyncio.wait(
                {call, ended, exited, cancelled},
                timeout=timeout + CALL_TIMEOUT_SLACK,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            await _abandon(call)
            raise
        finally:
            for waiter in (ended, exited, cancelled):
                waiter.cancel()
        if call in done:
            return await self._call_outcome(tool, call)
        if exited in done or ended in done:
            # Nobody is left to hear a cancellation: drop the request and report the death.
            call.cancel()
            raise ExecutionFailed(await self._death_message(tool))
        # Cancelling the SDK's request makes it send notifications/cancelled to the server.
        await _abandon(call)
        if cancelled in done:
            raise Cancelled(
                f"`{tool}` on MCP server `{self.name}` was cancelled; the server was told to stop"
            )
        raise ExecutionFailed(self._timeout_message(tool))

    async def _call_outcome(self, tool: str, call: asyncio.Future[Any]) -> mcp_types.CallToolResult:
        try:
            result = call.result()
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._lost.set()  # the server task winds down and records the crash
                raise ExecutionFailed(await self._death_message(tool)) from None
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise ExecutionFailed(self._timeout_message(tool)) from None
            raise ExecutionFailed(
                f"MCP server `{self.name}` refused the call to `{tool}`: {exc.message} "
                f"(JSON-RPC error {exc.code})"
            ) from None
        except ValidationError as exc:
            raise ExecutionFailed(
                f"MCP server `{self.name}` answered `{tool}` with a malformed result: "
                f"{exc.error_count()} problem(s), first: {exc.errors()[0]['msg']}"
            ) from None
        except Exception as exc:
            raise ExecutionFailed(
                f"calling `{tool}` on MCP server `{self.name}` failed: "
                f"{_describe_failure(exc, self.settings)}"
            ) from None
        if not isinstance(result, mcp_types.CallToolResult):
            raise ExecutionFailed(
                f"MCP server `{self.name}` answered `{tool}` with a {type(result).__name__}, "
                "which agent-tui cannot use"
            )
        return result

    def _timeout_message(self, tool: str) -> str:
        return (
            f"`{tool}` on MCP server `{self.name}` did not answer within "
            f"{self.settings.call_timeout:g} s (call_timeout); the server was told to cancel it"
        )

    async def _death_message(self, tool: str) -> str:
        """Why the connection ended under a call; waits briefly for the exit code."""
        if not self._ended.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ended.wait(), DEATH_REPORT_WAIT)
        restart = (
            " Its tools fail until it is restarted: ask the person to run "
            f"`/mcp restart {self.name}`."
        )
        if self._exited_by_itself:
            return (
                f"MCP server `{self.name}` exited ({_exit_text(self.exit_code)}) during the "
                f"call to `{tool}`" + await self._stderr_suffix() + "\n" + restart.strip()
            )
        if self._stop.is_set():
            return f"MCP server `{self.name}` was stopped during the call to `{tool}`"
        reason = f": {self.error}" if self.error else ""
        return f"MCP server `{self.name}` closed the connection during the call{reason}." + restart

    def unavailable_message(self) -> str:
        """Why this server's tools cannot be called now, and what the person can do."""
        name = self.name
        if self.state == "crashed":
            return (
                f"MCP server `{name}` has crashed ({_first_line(self.error)}); its tools are "
                f"unavailable until it is restarted: ask the person to run `/mcp restart {name}`"
            )
        if self.state == "failed":
            return (
                f"MCP server `{name}` failed to start ({_first_line(self.error)}); once its "
                f"settings are fixed, `/mcp restart {name}` starts it"
            )
        if self.state == "starting":
            return f"MCP server `{name}` is still starting; try again in a moment"
        return f"MCP server `{name}` is {self.state}; `/mcp restart {name}` starts it"

    # -- stdio -------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _stdio_transport(self) -> AsyncIterator[TransportStreams]:
        settings = self.settings
        command = settings.command or ""
        cwd = await asyncio.to_thread(self._working_dir)
        env = {**self._env, **settings.env}
        loop = asyncio.get_running_loop()
        header = f"starting: {' '.join([command, *settings.args])} (in {cwd})"
        log = await asyncio.to_thread(self._open_log, header)
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _ServerProtocol(loop, self._on_process_exit),
                command,
                *settings.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise _StartupFailed(
                f"command `{command}` was not found (not a file, and not on the PATH it was "
                "given); check `command` in its settings"
            ) from None
        except PermissionError:
            raise _StartupFailed(f"command `{command}` is not executable") from None
        except (OSError, ValueError) as exc:
            raise _StartupFailed(f"command `{command}` could not be started: {exc}") from None
        finally:
            log.close()  # the child holds its own descriptor
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
            shutdown = asyncio.ensure_future(self._shutdown_process(process, transport))
            with contextlib.suppress(asyncio.CancelledError):
                # Shielded: a cancelled caller must not leave the server running.
                await asyncio.shield(shutdown)
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for stream in (read_send, read_receive, write_send, write_receive):
                stream.close()

    def _working_dir(self) -> Path:
        """The server's ``cwd`` (relative ones under the workspace), checked to exist."""
        raw = self.settings.cwd
        cwd = self._cwd / Path(raw).expanduser() if raw else self._cwd
        if not cwd.is_dir():
            raise _StartupFailed(f"its working directory {cwd} does not exist")
        return cwd

    def _open_log(self, header: str) -> Any:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed after spawn
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        log.write(f"\n{OUR_LOG_PREFIX}=== {stamp} {header}\n".encode())
        log.flush()
        self._log_offset = log.tell()
        return log

    def _on_process_exit(self, code: int | None) -> None:
        self.exit_code = code
        self._exited_by_itself = not self._shutting_down or (
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
                    await self._log(f"a stdout line exceeded {STDOUT_LINE_LIMIT} bytes; dropped")
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
                    await self._log(f"not JSON-RPC on stdout: {line[:300]!r}")
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

    async def _shutdown_process(
        self, process: asyncio.subprocess.Process, transport: asyncio.SubprocessTransport
    ) -> None:
        """Close stdin, wait, SIGTERM the group, wait, SIGKILL it; leftovers go with it."""
        self._shutting_down = True
        if process.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                process.stdin.close()
        if not await self._wait_exit(STDIN_GRACE):
            self._signalled = True
            self._signal_group(signal.SIGTERM)
            if not await self._wait_exit(TERM_GRACE):
                self._signal_group(signal.SIGKILL)
                await self._wait_exit(KILL_GRACE)
        # Whatever the server left behind in its group (a child it spawned) is ours to end.
        self._signal_group(signal.SIGKILL)
        transport.close()

    async def _wait_exit(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._exited.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> list[str]:
        """The server's last stderr lines of this run (our own log lines left out)."""
        if self.transport != "stdio":
            return []
        return await asyncio.to_thread(_read_tail, self.log_path, self._log_offset, lines)

    # -- http --------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _http_transport(self) -> AsyncIterator[TransportStreams]:
        settings = self.settings
        url = settings.url or ""
        timeout = httpx2.Timeout(
            min(HTTP_CONNECT_TIMEOUT, settings.startup_timeout),
            read=max(HTTP_READ_TIMEOUT, settings.call_timeout + CALL_TIMEOUT_SLACK),
        )
        async with (
            httpx2.AsyncClient(headers=settings.headers, timeout=timeout) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    # -- server messages ---------------------------------------------------------------------

    async def _on_server_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        data = params.data if isinstance(params.data, str) else json.dumps(params.data)
        source = f" {params.logger}" if params.logger else ""
        await self._log(f"server log [{params.level}{source}] {data}")

    async def _on_message(self, message: Any) -> None:
        # mcp 2.3 hands over the notification model itself (ServerNotification is a plain
        # union, not a wrapper), or the transport's exception.
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._tools_changed_notice()
        elif isinstance(message, Exception):
            await self._log(f"transport error: {type(message).__name__}: {message}")

    # -- tools/list_changed ------------------------------------------------------------------

    def _tools_changed_notice(self) -> None:
        """Note that the list must be read again; start the re-list task unless it runs."""
        if self._stop.is_set() or self.state not in ("starting", "connected"):
            return
        self._relist_wanted = True
        if self._relisting is None or self._relisting.done():
            self._relisting = asyncio.create_task(
                self._relist(), name=f"mcp-tools-relist:{self.name}"
            )

    async def _relist(self) -> None:
        """Re-read the tool list until no notice is left unanswered.

        A notice during start-up waits for the first listing, which may have missed the change.
        """
        await self._ready.wait()
        while self._relist_wanted:
            self._relist_wanted = False
            session = self._session
            if session is None or self.state != "connected":
                return
            timeout = self.settings.startup_timeout
            try:
                tools = await asyncio.wait_for(_list_all_tools(session), timeout)
            except TimeoutError:
                await self._log(
                    f"tools/list after a tools/list_changed notice did not answer within "
                    f"{timeout:g} s (startup_timeout); keeping the {len(self.tools)} tool(s) "
                    "listed before"
                )
                continue
            except Exception as exc:  # a failed re-list keeps the old list, never crashes
                if isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED:
                    self._lost.set()  # the server task winds down and records the crash
                    return
                await self._log(
                    "tools/list after a tools/list_changed notice failed: "
                    f"{_describe_failure(exc, self.settings)}; keeping the "
                    f"{len(self.tools)} tool(s) listed before"
                )
                continue
            if self._session is not session or self.state != "connected":
                return
            self.tools = tools
            if self._on_tools_changed is not None:
                try:
                    self._on_tools_changed(self)
                except Exception as exc:  # the owner's bug must not end the re-listing
                    await self._log(f"tools-changed listener raised {type(exc).__name__}: {exc}")

    async def tools_settled(self, timeout: float) -> None:
        """Wait (at most ``timeout``) for a re-list that a call's own notice started.

        A tool that adds tools sends ``tools/list_changed`` before its result; waiting here
        lets the next model request already offer what it added. The SDK hands the notice to
        its handler in a task of its own, so give that task its turn first.
        """
        for _ in range(3):
            await asyncio.sleep(0)
        task = self._relisting
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=timeout)

    async def _stop_relisting(self) -> None:
        task = self._relisting
        self._relist_wanted = False
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait({task}, timeout=KILL_GRACE)

    async def _log(self, text: str) -> None:
        await asyncio.to_thread(_append_line, self.log_path, OUR_LOG_PREFIX + text)


# ------------------------------------------------------------------------------ helpers


async def _list_all_tools(session: ClientSession) -> list[mcp_types.Tool]:
    """Every page of ``tools/list`` (bounded, in case a server's cursors never end)."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def _first_of(*events: asyncio.Event) -> None:
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


async def _abandon(call: asyncio.Future[Any]) -> None:
    """Cancel an SDK request; it sends the protocol's cancellation on its way out."""
    if call.done():
        return
    call.cancel()
    await asyncio.wait({call}, timeout=KILL_GRACE)


def _consume_outcome(future: asyncio.Future[Any]) -> None:
    """Mark an abandoned future's exception as seen, so asyncio does not log it."""
    if not future.cancelled():
        future.exception()


def _exit_text(code: int | None) -> str:
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"code {code}"


def _first_line(text: str | None) -> str:
    return (text or "no reason recorded").split("\n", 1)[0]


def _describe_failure(error: BaseException, settings: McpServerSettings) -> str:
    """One line for the person from whatever a transport or the session raised."""
    leaf = _leaf(error)
    where = settings.url or settings.command or "the server"
    if isinstance(leaf, MCPError):
        if leaf.code == mcp_types.CONNECTION_CLOSED:
            return "closed the connection"
        return f"answered with an error: {leaf.message} (JSON-RPC error {leaf.code})"
    if isinstance(leaf, httpx2.ConnectError):
        return f"could not connect to {where}: {leaf or 'connection refused'}"
    if isinstance(leaf, httpx2.TimeoutException):
        return f"timed out talking to {where} ({type(leaf).__name__})"
    if isinstance(leaf, httpx2.HTTPStatusError):
        return f"{where} answered HTTP {leaf.response.status_code}"
    if isinstance(leaf, httpx2.HTTPError):
        return f"HTTP request to {where} failed: {type(leaf).__name__}: {leaf}"
    if isinstance(leaf, RuntimeError) and "protocol version" in str(leaf):
        return str(leaf)
    return f"{type(leaf).__name__}: {leaf}"


def _leaf(error: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(error, BaseExceptionGroup):
        inner = [e for e in error.exceptions if not isinstance(e, asyncio.CancelledError)]
        if not inner:
            break
        error = inner[0]
    return error


def _safe_file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "server"


def _append_line(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8", errors="replace") as log:
        log.write(text.rstrip("\n") + "\n")


def _read_tail(path: Path, offset: int, count: int) -> list[str]:
    try:
        with open(path, "rb") as log:
            size = log.seek(0, os.SEEK_END)
            start = max(offset, size - STDERR_TAIL_BYTES)
            log.seek(start)
            data = log.read()
    except OSError:
        return []
    lines = [
        line.rstrip()
        for line in data.decode("utf-8", errors="replace").splitlines()
        if line.strip() and not line.startswith(OUR_LOG_PREFIX)
    ]
    return [line if len(line) <= 300 else line[:297] + "..." for line in lines[-count:]]

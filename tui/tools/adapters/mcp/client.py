"""One connection to one MCP server, owned by one long-lived task.

The SDK's transports and ``ClientSession`` are async context managers that must be entered
and left in the same task, so each server gets a task that opens them, performs the
handshake, lists the tools and then waits until it is told to stop or the server dies. Tool
calls are made from the callers' own tasks through the session and raced against the server's
death, so a server that falls over mid-call fails that call at once with its exit code and
last stderr lines instead of leaving it to run out its timeout.

``McpConnection`` holds that life and the calls; its collaborators do the rest: ``stdio``
(the server's process), ``http_transport``, ``tool_list`` (the tools and their re-reading
after ``notifications/tools/list_changed``), ``server_log`` (stderr and our notes) and
``failures`` (how failures are worded).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import mcp_types
from mcp import ClientSession

import tui
from tui.config import McpServerSettings
from tui.errors import ExecutionFailed
from tui.exec.sandbox.sandbox import Confine
from tui.tools.adapters.mcp.calls import ToolCalls, consume_outcome
from tui.tools.adapters.mcp.failures import (
    ServerExited,
    StartupFailed,
    Stopped,
    describe_failure,
    exit_text,
    first_line,
    leaf_error,
)
from tui.tools.adapters.mcp.http_transport import http_transport
from tui.tools.adapters.mcp.server_log import STDERR_TAIL_LINES, ServerLog
from tui.tools.adapters.mcp.stdio import KILL_GRACE, STDIN_GRACE, TERM_GRACE, StdioServer
from tui.tools.adapters.mcp.tool_list import ServerTools, list_all_tools

ServerStateName = Literal[
    "starting", "connected", "failed", "crashed", "stopped", "untrusted", "disabled"
]

CLIENT_INFO = mcp_types.Implementation(name="agent-tui", version=tui.__version__)
STOP_TIMEOUT = STDIN_GRACE + TERM_GRACE + KILL_GRACE + 2.0
DEATH_REPORT_WAIT = 3.0
"""After a call sees the connection close, how long to wait for the exit code to be known."""

StateListener = Callable[["McpConnection"], None]
ToolsListener = Callable[["McpConnection"], None]


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
        confine: Confine | None = None,
    ) -> None:
        self.name = name
        self._confine = confine
        self.settings = settings
        self.state: ServerStateName = "starting"
        self.error: str | None = None
        self._log = ServerLog(name, log_dir)
        self._env = dict(env)
        self._cwd = cwd
        self._on_state = on_state
        self._process: StdioServer | None = None
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
        self._failure: BaseException | None = None
        self._problem: str | None = None
        self._phase = "start"
        self._calls = ToolCalls(
            name,
            settings,
            ended=self._ended,
            exited=self._exited,
            lost=self._lost,
            death_message=self._death_message,
        )
        self._tool_list = ServerTools(
            name,
            settings,
            log=self._log,
            connected_session=self._connected_session,
            ready=self._ready,
            lost=self._lost,
            on_changed=(lambda: on_tools_changed(self)) if on_tools_changed else None,
        )

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return self.settings.transport

    @property
    def tools(self) -> list[mcp_types.Tool]:
        """The server's tools as last listed."""
        return self._tool_list.tools

    @property
    def pid(self) -> int | None:
        """The stdio server's process id (its process group's too), once spawned."""
        return self._process.pid if self._process is not None else None

    @property
    def exit_code(self) -> int | None:
        return self._process.exit_code if self._process is not None else None

    @property
    def log_path(self) -> Path:
        return self._log.path

    def _exited_by_itself(self) -> bool:
        return self._process is not None and self._process.exited_by_itself

    def _connected_session(self) -> ClientSession | None:
        return self._session if self.state == "connected" else None

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
        if not task.done() and self._process is not None:
            self._process.signal_group(signal.SIGKILL)

    async def _serve(self) -> None:
        deadline = asyncio.get_running_loop().time() + self.settings.startup_timeout
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.transport == "stdio":
                    self._process = StdioServer(
                        self.settings,
                        env=self._env,
                        cwd=self._cwd,
                        log=self._log,
                        exited=self._exited,
                        lost=self._lost,
                        confine=self._confine,
                    )
                    streams = await stack.enter_async_context(self._process.open())
                else:
                    streams = await stack.enter_async_context(http_transport(self.settings))
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
                stack.push_async_callback(self._tool_list.stop)
                self._tool_list.tools = await self._handshake(session, deadline)
                self._session = session
                self._set_state("connected")
                self._ready.set()
                await _first_of(self._stop, self._exited, self._lost)
        except Exception as exc:  # every failure of a server becomes its state, never ours
            # Our own signals may arrive wrapped in the SDK's task groups' exception groups.
            leaf = leaf_error(exc)
            if isinstance(leaf, StartupFailed):
                self._problem = str(leaf)
            elif not isinstance(leaf, Stopped | ServerExited):
                self._failure = exc
        finally:
            self._session = None
            await self._tool_list.stop()
            await self._settle()
            self._ended.set()

    async def _handshake(self, session: ClientSession, deadline: float) -> list[mcp_types.Tool]:
        """Initialize and list tools, racing the work against stop, exit and the deadline."""
        work = asyncio.ensure_future(self._initialize_and_list(session))
        work.add_done_callback(consume_outcome)
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
            raise ServerExited
        if stop in done:
            raise Stopped
        step = "the initialize request" if self._phase == "initialize" else "tools/list"
        self._problem = (
            f"did not answer {step} within {self.settings.startup_timeout:g} s (startup_timeout)"
        )
        # Say so now; stopping a server that ignores us can take a few more seconds.
        await self._settle()
        raise StartupFailed(self._problem)

    async def _initialize_and_list(self, session: ClientSession) -> list[mcp_types.Tool]:
        self._phase = "initialize"
        await session.initialize()
        capabilities = session.server_capabilities
        if capabilities is not None and capabilities.tools is None:
            return []
        self._phase = "tools/list"
        return await list_all_tools(session)

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
        if self._exited_by_itself():
            when = "during start-up" if starting else ""
            text = f"exited ({exit_text(self.exit_code)}) {when}".rstrip()
            return text + await self._stderr_suffix()
        failure = self._failure
        if failure is None:
            text = "closed the connection" + (" during start-up" if starting else "")
            return text + await self._stderr_suffix()
        return describe_failure(failure, self.settings)

    async def _stderr_suffix(self) -> str:
        if self.transport != "stdio":
            return ""
        lines = await self._log.tail()
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
        return await self._calls.call(
            session, tool, arguments, cancel=cancel, on_progress=on_progress
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
        if self._exited_by_itself():
            return (
                f"MCP server `{self.name}` exited ({exit_text(self.exit_code)}) during the "
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
                f"MCP server `{name}` has crashed ({first_line(self.error)}); its tools are "
                f"unavailable until it is restarted: ask the person to run `/mcp restart {name}`"
            )
        if self.state == "failed":
            return (
                f"MCP server `{name}` failed to start ({first_line(self.error)}); once its "
                f"settings are fixed, `/mcp restart {name}` starts it"
            )
        if self.state == "starting":
            return f"MCP server `{name}` is still starting; try again in a moment"
        return f"MCP server `{name}` is {self.state}; `/mcp restart {name}` starts it"

    # -- server messages ---------------------------------------------------------------------

    async def _on_server_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        data = params.data if isinstance(params.data, str) else json.dumps(params.data)
        source = f" {params.logger}" if params.logger else ""
        await self._log.note(f"server log [{params.level}{source}] {data}")

    async def _on_message(self, message: Any) -> None:
        # mcp 2.3 hands over the notification model itself (ServerNotification is a plain
        # union, not a wrapper), or the transport's exception.
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._tools_changed_notice()
        elif isinstance(message, Exception):
            await self._log.note(f"transport error: {type(message).__name__}: {message}")

    def _tools_changed_notice(self) -> None:
        """Have the tool list read again, unless the server is on its way out."""
        if self._stop.is_set() or self.state not in ("starting", "connected"):
            return
        self._tool_list.changed_notice()

    async def tools_settled(self, timeout: float) -> None:
        """Wait (at most ``timeout``) for a re-list that a call's own notice started."""
        await self._tool_list.settled(timeout)

    async def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> list[str]:
        """The server's last stderr lines of this run (our own log lines left out)."""
        if self.transport != "stdio":
            return []
        return await self._log.tail(lines)


# ------------------------------------------------------------------------------ helpers


async def _first_of(*events: asyncio.Event) -> None:
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()

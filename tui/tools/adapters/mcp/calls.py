"""Tool calls on a connected server, raced against its death, the person's cancel and time.

A call runs in the caller's own task through the session. If the server exits or the
connection ends first, the call fails at once with the reason (the owner words it, since only
it knows how the server ended); if the person cancels or the call runs out of time, the SDK's
request is cancelled, which tells the server with ``notifications/cancelled``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from tui.config import McpServerSettings
from tui.errors import Cancelled, ExecutionFailed
from tui.tools.adapters.mcp.failures import describe_failure
from tui.tools.adapters.mcp.http_transport import CALL_TIMEOUT_SLACK
from tui.tools.adapters.mcp.stdio import KILL_GRACE


class ToolCalls:
    """The calls of one connection.

    Args:
        ended: Set once the connection's task has finished.
        exited: Set when the server's process exits.
        lost: Set here when a call finds the connection closed.
        death_message: Why the server went away during a call to the named tool.
    """

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        *,
        ended: asyncio.Event,
        exited: asyncio.Event,
        lost: asyncio.Event,
        death_message: Callable[[str], Awaitable[str]],
    ) -> None:
        self.name = name
        self.settings = settings
        self._ended = ended
        self._exited = exited
        self._lost = lost
        self._death_message = death_message

    async def call(
        self,
        session: ClientSession,
        tool: str,
        arguments: dict[str, Any],
        *,
        cancel: asyncio.Event,
        on_progress: Callable[[float | None, str], None] | None = None,
    ) -> mcp_types.CallToolResult:
        """Call ``tool``; the server's death, ``cancel`` and the timeout all end it promptly.

        Raises:
            ExecutionFailed: the server died, timed out or refused the call.
            Cancelled: ``cancel`` was set first.
        """
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
        call.add_done_callback(consume_outcome)
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
            return await self._outcome(tool, call)
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

    async def _outcome(self, tool: str, call: asyncio.Future[Any]) -> mcp_types.CallToolResult:
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
                f"{describe_failure(exc, self.settings)}"
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


async def _abandon(call: asyncio.Future[Any]) -> None:
    """Cancel an SDK request; it sends the protocol's cancellation on its way out."""
    if call.done():
        return
    call.cancel()
    await asyncio.wait({call}, timeout=KILL_GRACE)


def consume_outcome(future: asyncio.Future[Any]) -> None:
    """Mark an abandoned future's exception as seen, so asyncio does not log it."""
    if not future.cancelled():
        future.exception()

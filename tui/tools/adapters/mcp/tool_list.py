"""A server's tool list: read at start-up, and read again whenever the server says it changed.

A server may change its tools at run time and say so with ``notifications/tools/list_changed``.
The list is then read again by a task of its own, never inside the SDK's message handler: a
request awaited there could wait on the very receive loop that must deliver its answer.
Notifications that arrive while a re-list runs are folded into one more re-list.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import mcp_types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from tui.config import McpServerSettings
from tui.tools.adapters.mcp.failures import describe_failure
from tui.tools.adapters.mcp.server_log import ServerLog

MAX_TOOL_PAGES = 100
RELIST_STOP_WAIT = 2.0
"""Seconds a cancelled re-list has to wind down."""


async def list_all_tools(session: ClientSession) -> list[mcp_types.Tool]:
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


class ServerTools:
    """The current tool list of one server, kept current after list-changed notices.

    Args:
        connected_session: The session while the server is connected, else None.
        ready: Set once the server is connected (the first listing is done).
        lost: Set here when a re-list finds the connection closed.
        on_changed: Called after a re-list replaced ``tools``.
    """

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        *,
        log: ServerLog,
        connected_session: Callable[[], ClientSession | None],
        ready: asyncio.Event,
        lost: asyncio.Event,
        on_changed: Callable[[], None] | None,
    ) -> None:
        self.tools: list[mcp_types.Tool] = []
        self._name = name
        self._settings = settings
        self._log = log
        self._connected_session = connected_session
        self._ready = ready
        self._lost = lost
        self._on_changed = on_changed
        self._relisting: asyncio.Task[None] | None = None
        self._wanted = False
        """A list-changed notice arrived that no re-list has started to answer yet."""

    def changed_notice(self) -> None:
        """Note that the list must be read again; start the re-list task unless it runs."""
        self._wanted = True
        if self._relisting is None or self._relisting.done():
            self._relisting = asyncio.create_task(
                self._relist(), name=f"mcp-tools-relist:{self._name}"
            )

    async def settled(self, timeout: float) -> None:
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

    async def stop(self) -> None:
        """Cancel a re-list in progress and forget notices not yet answered."""
        task = self._relisting
        self._wanted = False
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait({task}, timeout=RELIST_STOP_WAIT)

    async def _relist(self) -> None:
        """Re-read the tool list until no notice is left unanswered.

        A notice during start-up waits for the first listing, which may have missed the change.
        """
        await self._ready.wait()
        while self._wanted:
            self._wanted = False
            session = self._connected_session()
            if session is None:
                return
            timeout = self._settings.startup_timeout
            try:
                tools = await asyncio.wait_for(list_all_tools(session), timeout)
            except TimeoutError:
                await self._log.note(
                    f"tools/list after a tools/list_changed notice did not answer within "
                    f"{timeout:g} s (startup_timeout); keeping the {len(self.tools)} tool(s) "
                    "listed before"
                )
                continue
            except Exception as exc:  # a failed re-list keeps the old list, never crashes
                if isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED:
                    self._lost.set()  # the server task winds down and records the crash
                    return
                await self._log.note(
                    "tools/list after a tools/list_changed notice failed: "
                    f"{describe_failure(exc, self._settings)}; keeping the "
                    f"{len(self.tools)} tool(s) listed before"
                )
                continue
            if self._connected_session() is not session:
                return
            self.tools = tools
            if self._on_changed is not None:
                try:
                    self._on_changed()
                except Exception as exc:  # the owner's bug must not end the re-listing
                    await self._log.note(
                        f"tools-changed listener raised {type(exc).__name__}: {exc}"
                    )

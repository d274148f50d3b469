"""How a server's failures are worded for the person, and the signals start-up uses.

Transports and the SDK's session raise many kinds of errors, often wrapped in the exception
groups of their task groups; everything here turns them into one line that says what
happened and where.
"""

from __future__ import annotations

import asyncio
import signal

import httpx2
import mcp_types
from mcp.shared.exceptions import MCPError

from tui.config import McpServerSettings


class StartupFailed(Exception):
    """Start-up failed for a reason already worded for the person."""


class Stopped(Exception):
    """We were asked to stop while still starting."""


class ServerExited(Exception):
    """The stdio process ended while we were starting; the exit code tells the rest."""


def exit_text(code: int | None) -> str:
    """``code 3``, ``killed by SIGKILL`` or ``exit code unknown``."""
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"code {code}"


def first_line(text: str | None) -> str:
    return (text or "no reason recorded").split("\n", 1)[0]


def describe_failure(error: BaseException, settings: McpServerSettings) -> str:
    """One line for the person from whatever a transport or the session raised."""
    leaf = leaf_error(error)
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


def leaf_error(error: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(error, BaseExceptionGroup):
        inner = [e for e in error.exceptions if not isinstance(e, asyncio.CancelledError)]
        if not inner:
            break
        error = inner[0]
    return error

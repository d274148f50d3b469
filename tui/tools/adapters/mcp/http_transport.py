"""The streamable-HTTP transport to a remote MCP server, with timeouts fitted to its settings.

Connecting is bounded by the server's ``startup_timeout``; reading waits at least as long as
a call may take (``call_timeout`` and a little), so the SDK's own call timeout, which tells
the server to cancel, is the one that fires first.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from tui.config import McpServerSettings

HTTP_CONNECT_TIMEOUT = 30.0
HTTP_READ_TIMEOUT = 300.0
CALL_TIMEOUT_SLACK = 2.0
"""The SDK times a call out itself (and tells the server); ours only backs it up."""


@contextlib.asynccontextmanager
async def http_transport(settings: McpServerSettings) -> AsyncIterator[tuple[Any, Any]]:
    """The (read stream, write stream) of a streamable-HTTP connection to ``settings.url``."""
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

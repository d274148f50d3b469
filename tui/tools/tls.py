"""One TLS context for every short-lived HTTP client the tools open.

``httpx.AsyncClient()`` builds an SSL context and loads the CA bundle each time it is made:
about 22 ms of blocking work on the event loop (the UI freezes for it) per ``fetch_url`` or
API call, even for plain http. The context is built once, in a worker thread, and shared;
``ssl.SSLContext`` is safe to share between connections.
"""

from __future__ import annotations

import asyncio
import ssl

import httpx

_context: ssl.SSLContext | None = None


async def tls_context() -> ssl.SSLContext:
    """The shared context (system CA bundle via certifi, no proxy or SSL_CERT env tweaks)."""
    global _context
    if _context is None:
        # Two first calls at once may both build one: harmless, and no lock tied to a loop.
        context = await asyncio.to_thread(httpx.create_ssl_context, trust_env=False)
        _context = _context or context
    return _context

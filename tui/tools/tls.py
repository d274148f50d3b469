"""One TLS context for every short-lived HTTP client the tools open, on the system's CAs.

``httpx.AsyncClient()`` builds an SSL context and loads the CA bundle each time it is made:
about 22 ms of blocking work on the event loop (the UI freezes for it) per ``fetch_url`` or
API call, even for plain http. The context is built once, in a worker thread, and shared;
``ssl.SSLContext`` is safe to share between connections.

The CAs are the system's, so a corporate TLS proxy whose root the machine trusts works: httpx2's
default context is ``truststore`` (the OS verifier) on macOS and Windows and OpenSSL's system
store on Linux (what truststore reads there too; its per-handshake reload grows memory under
OpenSSL < 3.4, sethmlarson/truststore#212). ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` name another
bundle, as for every OpenSSL program. The model providers' clients use the same default.
"""

from __future__ import annotations

import asyncio
import ssl

import httpx2 as httpx

_context: ssl.SSLContext | None = None


async def tls_context() -> ssl.SSLContext:
    """The shared context: the system's CAs, or the bundle ``SSL_CERT_FILE`` names."""
    global _context
    if _context is None:
        # Two first calls at once may both build one: harmless, and no lock tied to a loop.
        context = await asyncio.to_thread(httpx.create_ssl_context)
        _context = _context or context
    return _context

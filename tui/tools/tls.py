"""One TLS context for every HTTP client the tools and the model providers open, on the
system's CAs.

``httpx.AsyncClient()`` builds an SSL context and loads the CA bundle each time it is made:
about 22 ms of blocking work on the event loop (the UI freezes for it) per ``fetch_url`` or
API call, even for plain http, and about a third of what a bare ``httpx`` request costs from
start to finish. So the context is built once, in a thread (OpenSSL parses the bundle with the
interpreter lock released, so it runs beside start-up's own work), and shared; ``ssl.SSLContext``
is safe to share between connections. A model server spoken to in plain http (a local one)
gets a context that holds no CAs at all: nothing is loaded for it, and any TLS it were ever
asked for would fail verification, never pass unchecked.

The CAs are the system's, so a corporate TLS proxy whose root the machine trusts works: httpx2's
default context is ``truststore`` (the OS verifier) on macOS and Windows and OpenSSL's system
store on Linux (what truststore reads there too; its per-handshake reload grows memory under
OpenSSL < 3.4, sethmlarson/truststore#212). ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` name another
bundle, as for every OpenSSL program.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable
from concurrent.futures import Future
from urllib.request import getproxies

import httpx2 as httpx

_context: ssl.SSLContext | None = None
"""The shared context once built (set back to None to build it again)."""
_building: Future[ssl.SSLContext] | None = None
_plain: Future[ssl.SSLContext] | None = None
"""The context without CAs, made once for every plain-http client."""


def _in_thread(make: Callable[[], ssl.SSLContext], name: str) -> Future[ssl.SSLContext]:
    building: Future[ssl.SSLContext] = Future()

    def build() -> None:
        try:
            building.set_result(make())
        except BaseException as error:  # handed to whoever awaits it
            building.set_exception(error)

    threading.Thread(target=build, name=name, daemon=True).start()
    return building


def prepare() -> None:
    """Start building the shared context in a thread, if it is not built or being built:
    whoever awaits ``tls_context`` later finds it ready, or waits only for the rest."""
    global _building
    if _context is None and _building is None:
        _building = _in_thread(httpx.create_ssl_context, "tls-context")


def prepare_plain() -> None:
    """Start making the context without CAs in a thread: even an empty context costs OpenSSL
    5-10 ms to set itself up the first time, with the interpreter lock released, so beside
    the rest of start-up rather than before the first request."""
    global _plain
    if _plain is None:
        _plain = _in_thread(no_ca_context, "plain-context")


async def plain_context() -> ssl.SSLContext:
    """The one context for plain-http clients (``no_ca_context``)."""
    import asyncio  # not at the top: ``adopt_now`` runs before asyncio is imported

    prepare_plain()
    assert _plain is not None
    return await asyncio.wrap_future(_plain)


async def tls_context() -> ssl.SSLContext:
    """The shared context: the system's CAs, or the bundle ``SSL_CERT_FILE`` names."""
    import asyncio

    global _context, _building
    if _context is None:
        prepare()
        building = _building
        assert building is not None
        context = await asyncio.wrap_future(building)
        if _building is building:
            _building = None
        _context = _context or context
    return _context


def adopt_now(*, tls: bool) -> ssl.SSLContext:
    """The shared context (``tls``) or the one without CAs, made here and now, for the
    request ``tui.agent.providers.ahead`` sends before anything else runs; the clients made
    later find it ready."""
    global _context, _plain
    if not tls:
        if _plain is None:
            _plain = Future()
            _plain.set_result(no_ca_context())
        return _plain.result()
    if _context is None:
        _context = httpx.create_ssl_context()
    return _context


def needs_tls(url: str, proxies: dict[str, str] | None = None) -> bool:
    """Whether a client for ``url`` may ever open a TLS connection: an ``https`` URL, or a
    proxy in the environment that is itself spoken to over ``https``. Redirects are not
    followed by the clients this serves, so the URL's own scheme decides."""
    if not url.lower().startswith("http://"):
        return True
    found = getproxies() if proxies is None else proxies
    return any(str(proxy).lower().startswith("https:") for proxy in found.values())


def no_ca_context() -> ssl.SSLContext:
    """For a client that speaks plain http: verification stays on, with nothing to verify
    against, so no TLS connection can succeed through it."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

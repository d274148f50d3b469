"""HTTP clients whose every connection is judged by ``[security]`` hosts where it is opened.

A check on the URL followed by a connection made elsewhere can be passed twice over: another
spelling of the address, or a name that resolves to one place when checked and another when
dialled (DNS rebinding). So httpx gets an ``httpcore`` network backend that resolves the host
once, judges every address (``HostPolicy.permitted``) and opens the socket to exactly a judged
address. TLS still verifies, and SNI and the Host header still name, the host from the URL:
httpcore takes both from the request, not from the socket. Redirects are new requests on the
same client, so every hop passes through here too.

Behind a proxy (``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` in the person's environment, minus
what ``NO_PROXY`` names, read as curl reads them) the socket goes to the proxy, which the person
chose; the destination is still judged before the request leaves: its name and every address it
resolves to here. The proxy resolves the name again itself, so there the guard against DNS
rebinding is as good as the proxy's own resolver; without a proxy it is exact.
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any

import httpcore2 as httpcore
import httpx2 as httpx

from tui.security.hosts import HostPolicy
from tui.security.hosts import system_resolve as resolve
from tui.tools.tls import tls_context

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)

USER_AGENT = "agent-tui/0.1 (+https://github.com)"
"""What every HTTP request a tool sends (web tools, OpenAPI operations) says it is."""


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to addresses ``hosts`` permits, resolving each name exactly once."""

    def __init__(self, hosts: HostPolicy) -> None:
        self.hosts = hosts
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            # ``resolve`` is looked up on each call, so a test can stand in for DNS.
            addresses = await self.hosts.permitted(host, port, resolve)
        except OSError as exc:
            raise httpcore.ConnectError(f"could not resolve {host!r}: {exc}") from exc
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # permitted() never returns an empty list
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("web calls connect over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def proxy_for(url: httpx.URL, environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy the environment names for ``url`` (None: connect directly).

    ``https_proxy`` for https, ``http_proxy`` for http, ``all_proxy`` for either, upper or
    lower case; ``no_proxy`` (names with their subdomains, ``*``) sends a host directly.
    """
    proxies = (
        urllib.request.getproxies_environment()
        if environ is None
        else {
            key.lower().removesuffix("_proxy"): value
            for key, value in environ.items()
            if key.lower().endswith("_proxy") and value
        }
    )
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy:
        return None
    bypass = proxies.get("no", "")
    if bypass == "*" or _bypassed(url.host, bypass):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _bypassed(host: str, no_proxy: str) -> bool:
    host = host.lower().rstrip(".")
    for entry in no_proxy.split(","):
        entry = entry.strip().lower().lstrip("*").lstrip(".").rstrip(".")
        entry = entry.split(":", 1)[0] if entry.count(":") == 1 else entry
        if entry and (host == entry or host.endswith("." + entry)):
            return True
    return False


class GuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` over a ``GuardedBackend`` (no Unix socket); through the
    environment's proxy when one applies, the destination judged first."""

    def __init__(self, hosts: HostPolicy, context: ssl.SSLContext) -> None:
        # httpx takes no network backend, so the one attribute its __init__ sets (the pool it
        # sends through) is set here instead, with httpx's default limits plus our backend. The
        # tests through the real tools fail if this ever stops taking effect.
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(hosts),
        )
        self._hosts = hosts
        self._context = context
        self._proxied: dict[str, httpx.AsyncHTTPTransport] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        proxy = proxy_for(request.url)
        if proxy is None:
            return await super().handle_async_request(request)
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        try:
            await self._hosts.permitted(request.url.host, port, resolve)
        except OSError as exc:
            raise httpx.ConnectError(f"could not resolve {request.url.host!r}: {exc}") from exc
        transport = self._proxied.get(proxy)
        if transport is None:
            transport = httpx.AsyncHTTPTransport(proxy=proxy, verify=self._context)
            self._proxied[proxy] = transport
        return await transport.handle_async_request(request)

    async def aclose(self) -> None:
        for transport in self._proxied.values():
            await transport.aclose()
        await super().aclose()


async def guarded_client(hosts: HostPolicy, **options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` (the shared TLS context) that connects only where ``hosts``
    permits, through the environment's proxy when one applies (``GuardedTransport``).
    ``options`` go to the client (timeouts, redirects, hooks)."""
    context = await tls_context()
    return httpx.AsyncClient(
        transport=GuardedTransport(hosts, context), trust_env=False, verify=context, **options
    )

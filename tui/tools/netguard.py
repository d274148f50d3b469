"""HTTP clients whose every connection is judged by ``[security]`` hosts where it is opened.

A check on the URL followed by a connection made elsewhere can be passed twice over: another
spelling of the address, or a name that resolves to one place when checked and another when
dialled (DNS rebinding). So httpx gets an ``httpcore`` network backend that resolves the host
once, judges every address (``HostPolicy.permitted``) and opens the socket to exactly a judged
address. TLS still verifies, and SNI and the Host header still name, the host from the URL:
httpcore takes both from the request, not from the socket. Redirects are new requests on the
same client, so every hop passes through here too.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
from httpcore._backends.anyio import AnyIOBackend

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
        self._inner = AnyIOBackend()

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


class GuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` over a ``GuardedBackend`` (no proxy, no Unix socket)."""

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


async def guarded_client(hosts: HostPolicy, **options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` (shared TLS context, no environment proxies) that connects only
    where ``hosts`` permits. ``options`` go to the client (timeouts, redirects, hooks)."""
    context = await tls_context()
    return httpx.AsyncClient(
        transport=GuardedTransport(hosts, context), trust_env=False, verify=context, **options
    )

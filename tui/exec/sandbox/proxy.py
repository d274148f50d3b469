"""The only way out of a sandbox with network: a proxy outside it that applies the host policy.

A sandbox has no network of its own. Where its column allows network, a Unix socket of this
proxy is bound into it, and a relay inside (``relay.py``) carries the programs' connections
here. Each one is judged exactly as the web tools judge theirs (``HostPolicy.permitted``: the
name resolved once, every address judged in every spelling, link-local and metadata refused)
and dialled only to a judged address, so neither another spelling nor DNS rebinding passes.

It speaks what programs send to a proxy: HTTP ``CONNECT`` (HTTPS, git, pip), plain HTTP with an
absolute URI, and SOCKS5 (``ALL_PROXY=socks5h://``, names resolved here). A refusal is a plain
answer the program prints (``403`` with the reason, SOCKS "not allowed"), and it is kept in
``refusals`` so the command's result can say the sandbox refused it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tui.errors import PermissionDenied
from tui.scratch import private_folder, remove_private_folder
from tui.security.hosts import HostPolicy, Resolver, system_resolve

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 15.0
_DROPPED_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


@dataclass(frozen=True)
class Refusal:
    """One connection the proxy refused, for the command's result and the log."""

    at: float
    host: str
    port: int
    reason: str


@dataclass
class HostProxy:
    """The host-policy proxy on a private Unix socket.

    Args:
        hosts: The ``[security]`` host rules.
        on_refused: Told of each refusal (the session turns it into a notice).
        resolve: How names are resolved (tests stand in for DNS).
    """

    hosts: HostPolicy
    on_refused: Callable[[Refusal], None] | None = None
    resolve: Resolver = system_resolve
    refusals: list[Refusal] = field(default_factory=list)
    connections: int = 0
    _server: asyncio.AbstractServer | None = None
    _dir: str | None = None
    _path: str | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def socket_path(self) -> str:
        """The listening socket's path, started on first use (its folder is ours alone)."""
        if self._server is None or self._path is None:
            self._dir = private_folder("proxy")
            self._path = os.path.join(self._dir, "proxy.sock")
            self._server = await asyncio.start_unix_server(self._handle, path=self._path)
        return self._path

    def refused_since(self, moment: float) -> list[Refusal]:
        """Refusals at or after ``moment`` (``time.monotonic``): those of a command's run."""
        return [r for r in self.refusals if r.at >= moment]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._dir is not None:
            remove_private_folder(self._dir)
            self._dir = self._path = None

    # -- one connection ------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            first = await reader.readexactly(1)
            if first == b"\x05":
                await self._socks(reader, writer)
            else:
                await self._http(first, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        except Exception:  # one broken client must never take the proxy down
            log.exception("sandbox proxy connection failed")
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Judge ``host`` and connect to one of its judged addresses (PermissionDenied, OSError)."""
        try:
            addresses = await self.hosts.permitted(host, port, self.resolve)
        except PermissionDenied as refused:
            self._refuse(host, port, refused.msg)
            raise
        failure: OSError | None = None
        for address in addresses:
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    opened = await asyncio.open_connection(str(address), port)
            except (OSError, TimeoutError) as exc:
                failure = OSError(f"{host}:{port}: {exc}") if isinstance(exc, TimeoutError) else exc
                continue
            self.connections += 1
            return opened
        raise failure or OSError(f"{host}:{port}: no address")

    def _refuse(self, host: str, port: int, reason: str) -> None:
        refusal = Refusal(time.monotonic(), host, port, reason)
        self.refusals.append(refusal)
        del self.refusals[:-200]
        log.info("sandbox proxy refused %s:%s: %s", host, port, reason)
        if self.on_refused is not None:
            self.on_refused(refusal)

    async def _http(
        self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        head = first + await reader.readuntil(b"\r\n\r\n")
        if len(head) > HEAD_LIMIT:
            return
        line, _, rest = head.partition(b"\r\n")
        parts = line.split(b" ")
        if len(parts) != 3:
            await _answer(writer, 400, "not an HTTP proxy request")
            return
        method, target, version = parts
        if method == b"CONNECT":
            host, port = _split_host_port(target.decode("latin-1"), 443)
            upstream = await self._open_or_answer(writer, host, port)
            if upstream is None:
                return
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await _splice(reader, writer, *upstream)
            return
        url = urlsplit(target.decode("latin-1"))
        if url.scheme != "http" or not url.hostname:
            await _answer(writer, 400, "only CONNECT and absolute http:// requests are proxied")
            return
        upstream = await self._open_or_answer(writer, url.hostname, url.port or 80)
        if upstream is None:
            return
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        headers = [
            h
            for h in rest.split(b"\r\n")
            if h and h.split(b":", 1)[0].strip().lower() not in _DROPPED_HEADERS
        ]
        request = b"\r\n".join(
            [b" ".join([method, path.encode("latin-1"), version]), *headers, b"Connection: close"]
        )
        upstream[1].write(request + b"\r\n\r\n")
        await _splice(reader, writer, *upstream)

    async def _open_or_answer(
        self, writer: asyncio.StreamWriter, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            return await self._open(host, port)
        except PermissionDenied as refused:
            await _answer(writer, 403, f"agent-tui sandbox refused {host}:{port}: {refused.msg}")
        except OSError as exc:
            await _answer(writer, 502, f"agent-tui sandbox could not reach {host}:{port}: {exc}")
        return None

    async def _socks(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        (count,) = await reader.readexactly(1)
        await reader.readexactly(count)
        writer.write(b"\x05\x00")  # no authentication
        version, command, _, kind = await reader.readexactly(4)
        if version != 5 or command != 1:
            writer.write(b"\x05\x07\x00\x01" + bytes(6))  # command not supported
            return
        if kind == 1:
            host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
        elif kind == 3:
            (length,) = await reader.readexactly(1)
            host = (await reader.readexactly(length)).decode("idna", errors="replace")
        else:
            writer.write(b"\x05\x08\x00\x01" + bytes(6))
            return
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        try:
            upstream = await self._open(host, port)
        except PermissionDenied:
            writer.write(b"\x05\x02\x00\x01" + bytes(6))  # not allowed by ruleset
            return
        except OSError:
            writer.write(b"\x05\x05\x00\x01" + bytes(6))  # connection refused
            return
        writer.write(b"\x05\x00\x00\x01" + bytes(6))
        await writer.drain()
        await _splice(reader, writer, *upstream)


def _split_host_port(authority: str, default: int) -> tuple[str, int]:
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        port = tail.removeprefix(":")
    else:
        host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
    try:
        return host, int(port) if port else default
    except ValueError:
        return host, default


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (text + "\n").encode("utf-8", errors="replace")
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _splice(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                if sink.can_write_eof():
                    sink.write_eof()

    try:
        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
    finally:
        up_writer.close()

"""Server-sent events, parsed by hand rather than with a dependency.

Both model APIs stream SSE, but each bends it a little: OpenAI sends only ``data:`` lines,
Anthropic pairs every ``data:`` with an ``event:`` line, proxies add ``:`` keep-alive comments,
some servers use CRLF, and recorded Anthropic streams end without the final blank line. The
parser follows the WHATWG rules for fields, comments and line endings, with one deliberate
difference: an event still pending at end of stream is delivered, not dropped, because a
missing trailing blank line is not a reason to lose ``message_stop``.

Lines are split on bytes (``\\r``, ``\\n`` and ``\\r\\n`` never occur inside a UTF-8 multi-byte
sequence), so a chunk boundary may fall anywhere, even between ``\\r`` and ``\\n``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass, field

import httpx2 as httpx

__all__ = [
    "SSEDecoder",
    "SSEEvent",
    "aiter_sse_bytes",
    "aiter_sse_lines",
    "drain_rest",
    "split_lines",
]

_EOL = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event; ``event`` is ``"message"`` when the server named none."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None
    complete: bool = field(default=True, compare=False)
    """False for an event flushed at the end of a stream whose last line had no line end:
    the connection may have closed in the middle of it."""


@dataclass
class SSEDecoder:
    """Line-at-a-time SSE state machine, separate from I/O so it is trivially testable."""

    _data: list[str] = field(default_factory=list)
    _event: str = ""
    _last_id: str | None = None
    _retry: int | None = None

    def feed(self, line: str) -> SSEEvent | None:
        """Take one line without its terminator; return an event when a blank line ends one."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # comment / keep-alive
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        # Unknown fields are ignored, as the spec requires.
        return None

    def flush(self) -> SSEEvent | None:
        """End of stream: deliver a pending event that lacked its closing blank line."""
        return self._dispatch()

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            # An event with no data is not dispatched (spec); its event name is discarded.
            self._reset()
            return None
        event = SSEEvent(
            data="\n".join(self._data),
            event=self._event or "message",
            id=self._last_id,
            retry=self._retry,
        )
        self._reset()
        return event

    def _reset(self) -> None:
        self._data = []
        self._event = ""


def split_lines(buffer: bytearray, *, final: bool = False) -> list[bytes]:
    """Remove and return every complete line in ``buffer`` (terminators stripped).

    A trailing ``\\r`` is held back unless ``final``: the next chunk may start with ``\\n``.
    """
    data = bytes(buffer)
    limit = len(data) - 1 if not final and data.endswith(b"\r") else len(data)
    lines: list[bytes] = []
    start = 0
    for match in _EOL.finditer(data, 0, limit):
        lines.append(data[start : match.start()])
        start = match.end()
    if final and start < len(data):
        lines.append(data[start:])
        start = len(data)
    del buffer[:start]
    return lines


def _decode(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")


async def aiter_sse_lines(lines: AsyncIterable[str] | Iterable[str]) -> AsyncIterator[SSEEvent]:
    """Events from already-split lines (e.g. ``httpx.Response.aiter_lines()``).

    Each item is one line; a trailing ``\\r\\n``, ``\\n`` or ``\\r`` is tolerated. Items are not
    split further: ``str.splitlines`` would also break on U+2028 inside JSON strings.
    """
    decoder = SSEDecoder()
    first = True

    def take(raw: str) -> SSEEvent | None:
        nonlocal first
        line = _strip_bom(_strip_terminator(raw), first)
        first = False
        return decoder.feed(line)

    if isinstance(lines, AsyncIterable):
        async for raw in lines:
            if (event := take(raw)) is not None:
                yield event
    else:
        for raw in lines:
            if (event := take(raw)) is not None:
                yield event
    pending = decoder.flush()
    if pending is not None:
        yield pending


def _strip_terminator(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


async def aiter_sse_bytes(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Events from raw body bytes (e.g. ``httpx.Response.aiter_bytes()``), split anywhere."""
    decoder = SSEDecoder()
    buffer = bytearray()
    first = True
    async for chunk in chunks:
        buffer.extend(chunk)
        for raw in split_lines(buffer):
            line = _strip_bom(_decode(raw), first)
            first = False
            event = decoder.feed(line)
            if event is not None:
                yield event
    cut = bool(buffer) and not buffer.endswith(b"\r")  # a last line without its line end
    for raw in split_lines(buffer, final=True):
        line = _strip_bom(_decode(raw), first)
        first = False
        event = decoder.feed(line)
        if event is not None:
            yield event
    pending = decoder.flush()
    if pending is not None:
        yield dataclasses.replace(pending, complete=not cut) if cut else pending


def _strip_bom(line: str, first: bool) -> str:
    return line[1:] if first and line.startswith("\ufeff") else line


async def drain_rest(events: AsyncIterator[object], limit: float = 1.0) -> None:
    """Read whatever follows the end marker, so httpx can return the connection to its pool.

    Stopping at ``[DONE]`` / ``message_stop`` leaves the response unfinished and httpx then
    closes the socket: every model request would pay a new TCP and TLS handshake. Bounded, so
    a server that keeps the stream open after its end marker cannot hang the turn.
    """
    try:
        async with asyncio.timeout(limit):
            async for _ in events:
                pass
    except (TimeoutError, httpx.TransportError):
        pass

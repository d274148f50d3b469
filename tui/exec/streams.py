"""Output capture and run supervision shared by the command backends (local, container, SSH).

Why it is one module: every backend that runs a command has the same three jobs, whatever
carries the bytes (a local pipe, an ``ENGINE exec`` client, an SSH channel):

* **Capture each stream.** Output is decoded with an incremental UTF-8 decoder per stream, so
  a character split across two reads (or SSH packets) is not mangled, and binary garbage
  becomes U+FFFD instead of raising. Only the first ``KEEP_LIMIT`` characters are kept for
  the result; the live sink still sees everything, and a notice says what was cut.
* **Feed the live sink safely.** Data arrives in event-loop callbacks; an exception escaping
  one would make asyncio (or asyncssh) close the pipe, and the command's output would be lost
  for a bug in the UI. A broken sink is disabled instead, and the result says so.
* **Supervise the run.** Wait for the command to end, a timeout or a cancel; kill it if it
  has not ended; then keep reading for at most ``drain_timeout`` seconds, because a
  background child (``sleep 30 & echo done``) can hold the output open long after the shell
  exited. How to kill differs per backend and is passed in; the rest is ``wait_for_end``.

Keeping this in one place means a fix to decoding, capping or the drain applies to every
target at once, and tests of one backend exercise the code all of them run.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from tui.exec.backend import ChunkSink, StreamName

log = logging.getLogger(__name__)

KEEP_LIMIT = 16 * 1024 * 1024
"""Characters of each stream kept in the result; the chunk sink still sees everything."""

KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL: time for well-behaved programs to clean up."""

REAP_LIMIT = 5.0
"""Seconds to wait for a killed command to be reaped (its shell, exec client or channel)
after SIGKILL; only a process stuck in the kernel (D state) or a dead link lasts that long."""


class StreamCapture:
    """One output stream: decodes it incrementally and keeps a bounded copy.

    The decoder is per stream because stdout and stderr interleave arbitrarily, and a
    multibyte character split across reads must be joined with its own stream's bytes.
    """

    __slots__ = (
        "_decoder",
        "_finished",
        "_kept",
        "_parts",
        "_received",
        "capped",
        "limit",
        "name",
    )

    def __init__(self, name: StreamName, limit: int) -> None:
        self.name: StreamName = name
        self.limit = limit
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []
        self._kept = 0
        self._received = 0
        self._finished = False
        self.capped = False

    def feed(self, data: bytes) -> str:
        """Decode ``data`` and keep what fits; returns the text for the live sink."""
        self._received += len(data)
        return self._keep(self._decoder.decode(data))

    def finish(self) -> str:
        """Flush a trailing partial character (as U+FFFD); safe to call more than once."""
        if self._finished:
            return ""
        self._finished = True
        return self._keep(self._decoder.decode(b"", True))

    def _keep(self, text: str) -> str:
        room = self.limit - self._kept
        if len(text) > room:
            self.capped = True
        if text and room > 0:
            kept = text if len(text) <= room else text[:room]
            self._parts.append(kept)
            self._kept += len(kept)
        return text

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def cap_notice(self) -> str:
        return (
            f"{self.name} kept to its first {self.limit:,} characters in this result "
            f"({self._received:,} bytes received); the live output carried all of it"
        )


class OutputCollector:
    """One command's two captures, its notices and the caller's live sink.

    A mixin for the transport-specific protocol or session object, which feeds it from its
    callbacks; everything here must therefore never block. Once ``detach`` is called (the
    run has returned) nothing more reaches the caller's sink.
    """

    def __init__(self, on_chunk: ChunkSink | None, keep_limit: int = KEEP_LIMIT) -> None:
        super().__init__()
        self.stdout = StreamCapture("stdout", keep_limit)
        self.stderr = StreamCapture("stderr", keep_limit)
        self.notices: list[str] = []
        self.killing = False
        """Set once the command is being killed: its exit status is then not reported."""
        self._sink = on_chunk

    def notice(self, message: str) -> None:
        """Record a notice for the result and show it live on the ``info`` stream."""
        self.notices.append(message)
        self.emit("info", message + "\n")

    def finish_streams(self) -> None:
        """Flush decoders (a drain cut short never flushed them) and report capped streams.

        The cap notice goes out live too, so the block says what the result left out.
        """
        for capture in (self.stdout, self.stderr):
            self.emit(capture.name, capture.finish())
            if capture.capped:
                self.notice(capture.cap_notice())

    def detach(self) -> None:
        """Stop calling the sink: the run is over and its caller has moved on."""
        self._sink = None

    def emit(self, stream: StreamName, text: str) -> None:
        """Call the sink; a broken sink is disabled rather than allowed to kill the read.

        An exception escaping a transport callback would make it close the pipe, and the
        command's output would be lost for a bug in the UI; it keeps being collected instead.
        """
        if not text or self._sink is None:
            return
        try:
            self._sink(stream, text)
        except Exception:
            log.exception("output sink failed; live output disabled for this command")
            self._sink = None
            self.notices.append("live output stopped: the output display failed")


class CommandProtocol(OutputCollector, asyncio.SubprocessProtocol):
    """Collects and streams a local subprocess's output; reports exit and pipe closure apart.

    Used for a command run by the local shell and for an ``ENGINE exec`` client alike. The
    shell exiting (``exited``) and every holder of its pipes being gone (``pipes_closed``)
    are separate events, so a background child holding stdout cannot hang the run.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_chunk: ChunkSink | None,
        keep_limit: int = KEEP_LIMIT,
    ) -> None:
        super().__init__(on_chunk, keep_limit)
        self.exited: asyncio.Future[None] = loop.create_future()
        self.pipes_closed: asyncio.Future[None] = loop.create_future()
        self._open_pipes = 2

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        capture = self.stdout if fd == 1 else self.stderr
        self.emit(capture.name, capture.feed(data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd not in (1, 2):
            return
        capture = self.stdout if fd == 1 else self.stderr
        self.emit(capture.name, capture.finish())
        self._open_pipes -= 1
        if self._open_pipes <= 0:
            resolve(self.pipes_closed)

    def process_exited(self) -> None:
        resolve(self.exited)


def resolve(future: asyncio.Future[None]) -> None:
    """Complete ``future`` unless it already is (callbacks may report an event twice)."""
    if not future.done():
        future.set_result(None)


async def wait_for_end(
    collector: OutputCollector,
    ended: asyncio.Future[Any],
    closed: asyncio.Future[Any],
    *,
    timeout: float | None,
    cancel: asyncio.Event | None,
    kill: Callable[[], Awaitable[None]],
    drain_timeout: float,
) -> tuple[bool, bool]:
    """Wait for exit, timeout or cancel; kill if needed, then drain. (timed_out, cancelled).

    Args:
        collector: Where the drain notice goes.
        ended: Resolves when the command itself ended (its shell exited, or the channel
            reported an exit status).
        closed: Resolves when its output is closed: everything it would print has arrived.
        timeout: Seconds before ``kill`` is called; None waits for ever.
        cancel: When set before the command ends, ``kill`` is called and the run is
            reported cancelled rather than timed out.
        kill: Stops the command's whole process group (the backend's way).
        drain_timeout: Seconds to keep reading once the command ended while something else
            still holds the output; a notice says when that was cut short.

    The one extra task (``cancel.wait()``) exists only when a cancel event is given, and
    the common case (neither timeout nor cancel) awaits ``ended`` directly: this is the hot
    path of every tool call.
    """
    cancel_wait = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    try:
        if cancel_wait is None and timeout is None:
            await asyncio.shield(ended)
        else:
            waits: set[asyncio.Future[Any]] = {ended}
            if cancel_wait is not None:
                waits.add(cancel_wait)
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        killed = not ended.done()
        cancelled = killed and cancel is not None and cancel.is_set()
        if killed:
            await kill()
        await _drain(collector, closed, cancel_wait, drain_timeout)
        return killed and not cancelled, cancelled
    finally:
        if cancel_wait is not None:
            cancel_wait.cancel()


async def _drain(
    collector: OutputCollector,
    closed: asyncio.Future[Any],
    cancel_wait: asyncio.Future[Any] | None,
    drain_timeout: float,
) -> None:
    """Read what is left after the command ended, for at most ``drain_timeout`` seconds.

    A pipe (or an SSH channel: sshd reports the exit status when the shell exits but keeps
    the channel open) stays open while a background process holds it; the person started
    that process on purpose, so it is left alone and only the reading stops.
    """
    if closed.done():
        return
    waits: set[asyncio.Future[Any]] = {closed}
    if cancel_wait is not None and not cancel_wait.done():
        waits.add(cancel_wait)
    # The first of them: the output closing (the usual case, a moment after the exit status
    # over SSH) must end the wait at once, not after the cancel event too.
    await asyncio.wait(waits, timeout=drain_timeout, return_when=asyncio.FIRST_COMPLETED)
    if not closed.done():
        collector.notice(
            f"output drain stopped after {drain_timeout:.1f} s: "
            "a background process still holds the output pipe"
        )


__all__ = [
    "KEEP_LIMIT",
    "KILL_GRACE",
    "REAP_LIMIT",
    "CommandProtocol",
    "OutputCollector",
    "StreamCapture",
    "resolve",
    "wait_for_end",
]

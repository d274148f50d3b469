"""A server's log file: its stderr, our notes about it, and the tail shown when it fails.

A stdio server's stderr goes to ``log_dir/NAME.log``, never to our terminal (the full-screen
UI owns it). Lines we add start with ``OUR_LOG_PREFIX``, so the tail quoted in a failure shows
only what the server itself wrote during this run.

Nothing written there may hold a model provider's key: a trusted ``.mcp.json`` can pass
``${OPENAI_API_KEY}`` in a server's arguments (our header quotes them) and a server may print
its environment. So every line, ours and the server's, goes through ``redact`` on its way to
the file; the server's stderr reaches the log through a pipe we read, line by line, never as
a raw file handle.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import re
from pathlib import Path
from typing import BinaryIO

from tui.security.own_environ import provider_key_values

STDERR_TAIL_LINES = 8
STDERR_TAIL_BYTES = 16 * 1024
OUR_LOG_PREFIX = "agent-tui: "
"""Marks lines we add to a server's log, so the stderr tail shows only the server's own."""
REDACTED = "[provider key removed]"
TAIL_WAIT = 0.5
"""Seconds a failure's message waits for the rest of a dead server's stderr."""
MAX_PENDING = 64 * 1024
"""Bytes of an unfinished stderr line held back for redaction before it is written anyway."""


def redact(data: bytes) -> bytes:
    """``data`` with every provider key this process knows replaced by ``REDACTED``."""
    for key in provider_key_values():
        encoded = key.encode("utf-8", "surrogateescape")
        if encoded in data:
            data = data.replace(encoded, REDACTED.encode())
    return data


class ServerLog:
    """The log file of one server, and where its current run begins in it."""

    def __init__(self, name: str, log_dir: Path) -> None:
        self.path = log_dir / f"{_safe_file_name(name)}.log"
        self._offset = 0
        self._file: BinaryIO | None = None
        self._pending = b""
        self._ended: asyncio.Event | None = None
        """Set when the running server's stderr has ended (its tail is then complete)."""

    def start(self, header: str) -> None:
        """Open the file for this run, headed by ``header``; the run's tail starts after it.

        Blocking: call it from a thread.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.close()
        log = open(self.path, "ab")  # noqa: SIM115 - kept for the run's stderr, closed by close()
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        log.write(redact(f"\n{OUR_LOG_PREFIX}=== {stamp} {header}\n".encode()))
        log.flush()
        self._offset = log.tell()
        self._file = log
        self._pending = b""
        self._ended = None

    def stderr(self, data: bytes) -> None:
        """Bytes the server wrote to stderr: whole lines are redacted and written at once;
        ``b""`` is the end of the stream."""
        if self._file is None:
            return
        if not data:
            self._flush_pending()
            self._ending().set()
            return
        self._pending += data
        cut = self._pending.rfind(b"\n") + 1
        if not cut and len(self._pending) > MAX_PENDING:
            cut = len(self._pending)
        if cut:
            chunk, self._pending = self._pending[:cut], self._pending[cut:]
            self._file.write(redact(chunk))
            self._file.flush()

    def close(self) -> None:
        """The run ended: what is left of its last line is written, the file closed."""
        if self._file is None:
            return
        self._flush_pending()
        self._file.close()
        self._file = None
        self._ending().set()

    def _flush_pending(self) -> None:
        if self._file is not None and self._pending:
            self._file.write(redact(self._pending))
            self._file.flush()
            self._pending = b""

    def _ending(self) -> asyncio.Event:
        if self._ended is None:
            self._ended = asyncio.Event()
        return self._ended

    async def note(self, text: str) -> None:
        """Append one line of ours."""
        await asyncio.to_thread(_append_line, self.path, OUR_LOG_PREFIX + text)

    async def tail(self, lines: int = STDERR_TAIL_LINES) -> list[str]:
        """The server's last stderr lines of this run (our own log lines left out); when the
        server is gone but its stderr still drains, a moment is given for the rest."""
        if self._file is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ending().wait(), TAIL_WAIT)
        return await asyncio.to_thread(_read_tail, self.path, self._offset, lines)


def _safe_file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "server"


def _append_line(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as log:
        log.write(redact((text.rstrip("\n") + "\n").encode("utf-8", "replace")))


def _read_tail(path: Path, offset: int, count: int) -> list[str]:
    try:
        with open(path, "rb") as log:
            size = log.seek(0, os.SEEK_END)
            start = max(offset, size - STDERR_TAIL_BYTES)
            log.seek(start)
            data = log.read()
    except OSError:
        return []
    lines = [
        line.rstrip()
        for line in data.decode("utf-8", errors="replace").splitlines()
        if line.strip() and not line.startswith(OUR_LOG_PREFIX)
    ]
    return [line if len(line) <= 300 else line[:297] + "..." for line in lines[-count:]]

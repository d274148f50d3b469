"""A server's log file: its stderr, our notes about it, and the tail shown when it fails.

A stdio server's stderr goes to ``log_dir/NAME.log``, never to our terminal (the full-screen
UI owns it). Lines we add start with ``OUR_LOG_PREFIX``, so the tail quoted in a failure shows
only what the server itself wrote during this run.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import re
from pathlib import Path
from typing import Any

STDERR_TAIL_LINES = 8
STDERR_TAIL_BYTES = 16 * 1024
OUR_LOG_PREFIX = "agent-tui: "
"""Marks lines we add to a server's log, so the stderr tail shows only the server's own."""


class ServerLog:
    """The log file of one server, and where its current run begins in it."""

    def __init__(self, name: str, log_dir: Path) -> None:
        self.path = log_dir / f"{_safe_file_name(name)}.log"
        self._offset = 0

    def open_for_child(self, header: str) -> Any:
        """The file opened for appending, headed by ``header``; the run's tail starts after it.

        The caller hands it to the child as stderr and closes its own descriptor after spawn.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.path, "ab")  # noqa: SIM115 - handed to the child, closed after spawn
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        log.write(f"\n{OUR_LOG_PREFIX}=== {stamp} {header}\n".encode())
        log.flush()
        self._offset = log.tell()
        return log

    async def note(self, text: str) -> None:
        """Append one line of ours."""
        await asyncio.to_thread(_append_line, self.path, OUR_LOG_PREFIX + text)

    async def tail(self, lines: int = STDERR_TAIL_LINES) -> list[str]:
        """The server's last stderr lines of this run (our own log lines left out)."""
        return await asyncio.to_thread(_read_tail, self.path, self._offset, lines)


def _safe_file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "server"


def _append_line(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8", errors="replace") as log:
        log.write(text.rstrip("\n") + "\n")


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

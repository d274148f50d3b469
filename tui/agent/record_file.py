"""An append-only file of one-line records that never holds half a record, and its lock.

Why not a buffered file object: when the disk fills, a buffered write keeps part of a record
in its buffer, writes another part, and the next record is glued onto the broken one; the
error surfaces later, at a flush nobody expected. Here every record is one ``os.write`` on an
``O_APPEND`` descriptor. A record the disk refuses (``ENOSPC``, a quota) is cut off again with
``ftruncate`` back to the last whole record, and it waits in a backlog, in order, with every
record after it: the next append tries the backlog first, so a disk that was full for a moment
loses nothing and the file stays a prefix of what happened. Records the reader can do without
(events shown on screen) leave the backlog first when it grows past ``BACKLOG_LIMIT``; the
conversation's records never do.

One writer per session: the descriptor holds an exclusive ``flock`` for as long as it is
open, so a second agent-tui resuming the same session is refused with a clear message
instead of interleaving its records with the first one's. The kernel drops the lock when the
process dies, SIGKILL included, so a crash never leaves a session locked.
"""

from __future__ import annotations

import collections
import errno
import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tui.errors import AgentTuiError

BACKLOG_LIMIT = 64 * 1024 * 1024
"""Bytes of unwritten records kept in memory; past it droppable ones are let go (counted)."""


class SessionBusy(AgentTuiError):
    """Another process holds the session: two writers would interleave one file."""

    title = "Session in use"


@dataclass
class _Pending:
    data: bytes
    droppable: bool


Trouble = Callable[[str], None]
"""Told once when records start waiting (the reason) and once when they are all written
(an empty string)."""


class RecordFile:
    """One open, locked, append-only record file; see the module docstring."""

    def __init__(self, path: Path, fd: int, *, on_trouble: Trouble | None = None) -> None:
        self.path = path
        self._fd = fd
        self._size = os.fstat(fd).st_size
        self._backlog: collections.deque[_Pending] = collections.deque()
        self._backlog_bytes = 0
        self.on_trouble = on_trouble
        self.problem: str | None = None
        """Why records are waiting (``No space left on device``), None while none are."""
        self.dropped = 0
        """Droppable records let go because the backlog was full."""
        self.closed = False

    @classmethod
    def open(cls, path: Path, *, create: bool, what: str = "session") -> RecordFile:
        """Open (or exclusively create) ``path`` for appending and take its lock.

        Raises:
            SessionBusy: another process holds it.
            FileExistsError: ``create`` and the file exists.
            OSError: it cannot be opened.
        """
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
        if create:
            flags |= os.O_CREAT | os.O_EXCL
        fd = os.open(path, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(fd)
            os.close(fd)
            who = f"another agent-tui (pid {holder})" if holder else "another agent-tui"
            raise SessionBusy(
                f"{what} {path.stem} is open in {who}; one process writes a session at a "
                "time. Quit that one, resume another session, or start a new one"
            ) from None
        except OSError:
            os.close(fd)
            raise
        return cls(path, fd)

    @property
    def unsaved(self) -> int:
        """Records not on disk yet."""
        return len(self._backlog)

    def append(self, data: bytes, *, droppable: bool = False) -> bool:
        """Write one record (one line, newline included); False when it had to wait."""
        if self.closed:
            raise OSError(errno.EBADF, f"{self.path} is closed")
        self._backlog.append(_Pending(data, droppable))
        self._backlog_bytes += len(data)
        if self.flush():
            return True
        self._bound()
        return False

    def flush(self) -> bool:
        """Write the backlog, in order; True when nothing waits any more."""
        while self._backlog:
            pending = self._backlog[0]
            try:
                _write_all(self._fd, pending.data)
            except OSError as error:
                self._roll_back()
                self._trouble(error.strerror or str(error))
                return False
            self._size += len(pending.data)
            self._backlog.popleft()
            self._backlog_bytes -= len(pending.data)
        if self.problem is not None:
            self.problem = None
            if self.on_trouble is not None:
                self.on_trouble("")
        return True

    def _roll_back(self) -> None:
        """Cut a record the disk took only part of: the file ends with a whole record."""
        try:
            if os.fstat(self._fd).st_size != self._size:
                os.ftruncate(self._fd, self._size)
        except OSError:
            pass  # readers skip a half line; the next append starts after it anyway

    def _trouble(self, reason: str) -> None:
        first = self.problem is None
        self.problem = reason
        if first and self.on_trouble is not None:
            self.on_trouble(reason)

    def _bound(self) -> None:
        if self._backlog_bytes <= BACKLOG_LIMIT:
            return
        kept: collections.deque[_Pending] = collections.deque()
        for pending in self._backlog:
            if pending.droppable and self._backlog_bytes > BACKLOG_LIMIT // 2:
                self._backlog_bytes -= len(pending.data)
                self.dropped += 1
            else:
                kept.append(pending)
        self._backlog = kept

    def close(self) -> bool:
        """One last try at the backlog, then close (and unlock); True when all was saved."""
        if self.closed:
            return not self._backlog
        saved = self.flush()
        self.closed = True
        os.close(self._fd)
        return saved


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # pragma: no cover - a regular file never returns 0
            raise OSError(errno.EIO, "write returned 0")
        view = view[written:]


def lock_holder(fd: int) -> int | None:
    """The pid holding a ``flock`` on ``fd``'s file, from ``/proc/locks`` (Linux)."""
    try:
        stat = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return None
    wanted = f":{stat.st_ino}"
    found: int | None = None
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK" or not parts[5].endswith(wanted):
            continue
        if not parts[4].isdigit():
            continue
        major, _, minor = parts[5][: -len(wanted)].partition(":")
        try:
            if os.makedev(int(major, 16), int(minor, 16)) == stat.st_dev:
                return int(parts[4])
        except ValueError:
            pass
        found = int(parts[4])  # overlay file systems report another device: the inode will do
    return found


__all__ = ["BACKLOG_LIMIT", "RecordFile", "SessionBusy", "lock_holder"]

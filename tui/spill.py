"""Output saved to disk while it streams, bounded by a disk cap, and saying where it stopped.

Two places keep a command's whole output on disk: the tool (the "full output" file whose path
the model and the block are given) and the UI (the stream a block's pager shows). Both write
through one daemon thread (``SPILL``), so the event loop never waits on a disk; both stop at a
disk cap (``[agent] output_disk_cap``, 1 GiB by default), so a runaway command cannot fill the
disk; and both end a file that hit the cap with a line saying so and how much was not saved,
so a reader of the file (a person in the pager, the model with ``read_file``) never mistakes a
cut file for the whole output.

It sits on the ground floor, needing only the standard library, because both the tools and
the UI write through it and neither may reach into the other.
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

DEFAULT_DISK_CAP = 1024**3
"""Bytes of one output saved to disk (``[agent] output_disk_cap``)."""
CAP_SETTING = "[agent] output_disk_cap"


def text_size(text: str) -> int:
    """UTF-8 bytes of ``text`` (a lone surrogate counts as the replacement it becomes)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"  # pragma: no cover


class SpillWriter:
    """One daemon thread appending text to files; ``write``/``close`` never block.

    A write the disk refuses (full, quota, read-only) is not retried: the file keeps what it
    had, nothing more is appended to it (a later write would leave a hole in the middle), and
    ``failure(path)`` says what happened, so whoever reports the file can say it is cut short.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[str, Path, str] | threading.Event] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failed: dict[Path, str] = {}

    def _ensure(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="spill", daemon=True)
                self._thread.start()

    def start(self, path: Path) -> None:
        """Begin ``path`` afresh: whatever an earlier writer left there is replaced, never
        appended to (two calls with one id must not share a file)."""
        with self._lock:
            self._failed.pop(path, None)
        self._queue.put(("start", path, ""))
        self._ensure()

    def write(self, path: Path, text: str) -> None:
        self._queue.put(("write", path, text))
        self._ensure()

    def close(self, path: Path) -> None:
        self._queue.put(("close", path, ""))
        self._ensure()

    def failure(self, path: Path) -> str | None:
        """Why ``path`` stopped being written (``No space left on device``), or None.

        Exact only for writes already done: ``flush`` first."""
        with self._lock:
            return self._failed.get(path)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far is on disk (tests, the pager, exit).

        The marker travels in the queue itself: it is set only once every write queued
        before it is done, whoever else flushes meanwhile (parallel calls each flush)."""
        if self._thread is None:
            return True
        marker = threading.Event()
        self._queue.put(marker)
        self._ensure()
        return marker.wait(timeout)

    def _run(self) -> None:
        files: dict[Path, IO[str]] = {}
        while True:
            item = self._queue.get()
            if isinstance(item, threading.Event):
                for path, open_file in list(files.items()):
                    try:
                        open_file.flush()
                    except OSError as error:
                        self._fail(files, path, error)
                item.set()
                continue
            op, path, text = item
            try:
                if op == "close":
                    self._close(files, path)
                    continue
                if path in self._failed:
                    continue
                handle = files.get(path)
                if handle is None or op == "start":
                    if handle is not None:
                        files.pop(path).close()
                    if len(files) >= 64:  # bound open handles: close the oldest
                        self._evict(files, next(iter(files)))
                    path.parent.mkdir(parents=True, exist_ok=True)
                    mode = "w" if op == "start" else "a"
                    handle = path.open(mode, encoding="utf-8", errors="replace")
                    files[path] = handle
                handle.write(text)
            except OSError as error:
                self._fail(files, path, error)
            except Exception as error:  # never let the one writer thread die with its queue
                self._fail(files, path, OSError(0, f"{type(error).__name__}: {error}"))

    def _evict(self, files: dict[Path, IO[str]], path: Path) -> None:
        try:
            files.pop(path).close()
        except OSError as error:
            self._fail(files, path, error)

    def _fail(self, files: dict[Path, IO[str]], path: Path, error: OSError) -> None:
        with self._lock:
            self._failed.setdefault(path, error.strerror or str(error))
        handle = files.pop(path, None)
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()

    def _close(self, files: dict[Path, IO[str]], path: Path) -> None:
        """Close ``path``; a file whose writing failed gets a last line saying so, if the
        disk takes it (a full disk often has room again by then)."""
        closing = files.pop(path, None)
        if closing is not None:
            try:
                closing.close()
            except OSError as error:
                self._fail(files, path, error)
        reason = self._failed.get(path)
        if reason is None:
            return
        with contextlib.suppress(OSError), path.open("a", encoding="utf-8") as handle:
            handle.write(f"\n{failed_line(reason)}\n")


def failed_line(reason: str) -> str:
    """The last line of a file whose writing failed: a reader must not take it for whole."""
    return f"[agent-tui: the saved output stops here: writing it failed ({reason})]"


SPILL = SpillWriter()
atexit.register(SPILL.flush, 2.0)


@dataclass
class CappedSpill:
    """Appends to one file through ``SPILL`` up to ``cap`` bytes, cut at a line's end.

    Past the cap nothing more is written, only counted; ``close`` then ends the file with
    ``stop_line()``, so the file itself says it is not the whole output.
    """

    path: Path
    cap: int = DEFAULT_DISK_CAP
    written: int = 0
    """Bytes queued for the file (the stop line not counted)."""
    dropped: int = 0
    """Bytes received past the cap, never written."""
    closed: bool = False
    _ends_line: bool = field(default=True, repr=False)

    @property
    def capped(self) -> bool:
        return self.dropped > 0

    @property
    def failed(self) -> str | None:
        """Why the disk refused this file (``No space left on device``), or None: exact once
        ``SPILL.flush`` has returned."""
        return SPILL.failure(self.path) if self.written else None

    @property
    def incomplete(self) -> bool:
        """The file is not the whole output: the disk cap, or a disk that refused a write."""
        return self.capped or self.failed is not None

    def write(self, text: str) -> None:
        if not text or self.closed:
            return
        size = text_size(text)
        if self.dropped or self.written + size <= self.cap:
            if self.dropped:
                self.dropped += size
                return
            self._put(text, size)
            return
        room = self.cap - self.written
        piece = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
        end = piece.rfind("\n")
        if end >= 0:
            piece = piece[: end + 1]  # whole lines only: the file never ends mid-line
        kept = text_size(piece)
        self._put(piece, kept)
        self.dropped = size - kept

    def _put(self, text: str, size: int) -> None:
        if text:
            if not self.written:
                SPILL.start(self.path)
            SPILL.write(self.path, text)
            self.written += size
            self._ends_line = text.endswith("\n")

    def stop_line(self) -> str:
        return (
            f"[agent-tui: the saved output stops here, at the disk cap of "
            f"{human_bytes(self.cap)} ({CAP_SETTING}); {self.dropped:,} more bytes of output "
            "were not saved]"
        )

    def cut_note(self, what: str = "the saved output") -> str:
        """One sentence for the block and the model, or "" when nothing was dropped."""
        failed = self.failed
        if failed is not None:
            return (
                f"{what} is incomplete: writing it failed ({failed}) after "
                f"{self.saved_bytes():,} of {self.written + self.dropped:,} bytes"
            )
        if not self.capped:
            return ""
        return (
            f"{what} stops at the disk cap of {human_bytes(self.cap)} ({CAP_SETTING}): "
            f"the last {self.dropped:,} bytes were not saved"
        )

    def saved_bytes(self) -> int:
        """What the file holds now (blocking: a ``stat``)."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.capped:
            SPILL.write(self.path, ("" if self._ends_line else "\n") + self.stop_line() + "\n")
        SPILL.close(self.path)


__all__ = [
    "CAP_SETTING",
    "DEFAULT_DISK_CAP",
    "SPILL",
    "CappedSpill",
    "SpillWriter",
    "human_bytes",
    "text_size",
]

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
    """One daemon thread appending text to files; ``write``/``close`` never block."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Path, str | None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._markers: list[threading.Event] = []

    def _ensure(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="spill", daemon=True)
                self._thread.start()

    def write(self, path: Path, text: str) -> None:
        self._queue.put((path, text))
        self._ensure()

    def close(self, path: Path) -> None:
        self._queue.put((path, None))
        self._ensure()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far is on disk (tests, the pager, exit)."""
        if self._thread is None:
            return True
        marker = threading.Event()
        with self._lock:
            self._markers.append(marker)
        self._queue.put(None)
        return marker.wait(timeout)

    def _run(self) -> None:
        files: dict[Path, IO[str]] = {}
        while True:
            item = self._queue.get()
            if item is None:
                for open_file in files.values():
                    with contextlib.suppress(OSError):
                        open_file.flush()
                with self._lock:
                    markers, self._markers = self._markers, []
                for marker in markers:
                    marker.set()
                continue
            path, text = item
            try:
                if text is None:
                    closing = files.pop(path, None)
                    if closing is not None:
                        closing.close()
                    continue
                handle = files.get(path)
                if handle is None:
                    if len(files) >= 64:  # bound open handles: close the oldest
                        oldest = next(iter(files))
                        files.pop(oldest).close()
                    path.parent.mkdir(parents=True, exist_ok=True)
                    handle = path.open("a", encoding="utf-8", errors="replace")
                    files[path] = handle
                handle.write(text)
            except OSError:
                continue


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
        if not self.capped:
            return ""
        return (
            f"{what} stops at the disk cap of {human_bytes(self.cap)} ({CAP_SETTING}): "
            f"the last {self.dropped:,} bytes were not saved"
        )

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

"""A tool call's output as the UI keeps it: a bounded tail in memory, everything in a file.

Each block keeps at most ``max_lines`` lines and ``max_bytes`` bytes of the newest output, and
says so. The moment it first has to drop something, it starts a spill file with everything it
had and appends every later chunk, so the pager can always show the whole stream even though
the widget holds only its tail. Spill writes go through one background thread, never the
event loop.
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

MAX_LINES = 1000
MAX_BYTES = 128 * 1024
MAX_LINE_CHARS = 4096
"""A line longer than this is split, so a flood with no newline stays bounded too."""


def _size(text: str) -> int:
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
                self._thread = threading.Thread(target=self._run, name="ui-spill", daemon=True)
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
                for handle in files.values():
                    with contextlib.suppress(OSError):
                        handle.flush()
                with self._lock:
                    markers, self._markers = self._markers, []
                for marker in markers:
                    marker.set()
                continue
            path, text = item
            try:
                if text is None:
                    handle = files.pop(path, None)
                    if handle is not None:
                        handle.close()
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
class OutputBuffer:
    """The newest output lines of one call, bounded in lines and bytes."""

    spill_path: Path | None = None
    """Where everything goes once something had to be dropped (None: never spill)."""
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES
    lines: deque[tuple[str, str]] = field(default_factory=deque)
    """``(stream, text)`` of complete lines, oldest first."""
    partial: dict[str, str] = field(default_factory=dict)
    """The unfinished last line of each stream."""
    kept_bytes: int = 0
    total_bytes: int = 0
    total_lines: int = 0
    dropped_lines: int = 0
    spilling: bool = False
    version: int = 0
    """Bumped on every change, so a widget can tell whether to repaint."""

    def append(self, stream: str, text: str) -> None:
        if not text:
            return
        self.version += 1
        newlines = text.count("\n")
        size = _size(text)
        self.total_bytes += size
        self.total_lines += newlines
        if not self.spilling and (
            len(self.lines) + newlines > self.max_lines or self.kept_bytes + size > self.max_bytes
        ):
            self._start_spill()  # something is about to be dropped: keep it all on disk
        if self.spilling:
            SPILL.write(self.spill_path, text)  # type: ignore[arg-type]
        full = self.partial.pop(stream, "") + text
        if newlines > self.max_lines:
            # A flood: only the newest lines can survive, so do not build the others at all.
            pieces = full.rsplit("\n", self.max_lines + 1)
            self.dropped_lines += pieces[0].count("\n") + 1 + len(self.lines)
            self.lines.clear()
            self.kept_bytes = 0
            pieces = pieces[1:]
        else:
            pieces = full.split("\n")
        *complete, last = pieces
        for line in complete:
            self._push(stream, line)
        while len(last) > MAX_LINE_CHARS:
            self._push(stream, last[:MAX_LINE_CHARS])
            last = last[MAX_LINE_CHARS:]
        if last:
            self.partial[stream] = last
        self._bound()

    def _push(self, stream: str, line: str) -> None:
        if line.endswith("\r"):
            line = line[:-1]
        if "\r" in line:  # progress bars redraw with CR: keep what the terminal would show
            line = line.rsplit("\r", 1)[-1]
        self.lines.append((stream, line))
        self.kept_bytes += _size(line) + 1

    def _bound(self) -> None:
        while self.lines and (len(self.lines) > self.max_lines or self.kept_bytes > self.max_bytes):
            _, line = self.lines.popleft()
            self.kept_bytes -= _size(line) + 1
            self.dropped_lines += 1

    def _start_spill(self) -> None:
        if self.spilling or self.spill_path is None:
            return
        self.spilling = True
        # Before the first drop the buffer still holds everything seen so far.
        everything = "".join(line + "\n" for _, line in self.lines)
        everything += "".join(self.partial.values())
        SPILL.write(self.spill_path, everything)

    @property
    def truncated(self) -> bool:
        return self.dropped_lines > 0

    def visible(self) -> list[tuple[str, str]]:
        """Complete lines plus any unfinished ones, oldest first."""
        shown = list(self.lines)
        shown.extend((stream, text) for stream, text in self.partial.items() if text)
        return shown

    def line_count(self) -> int:
        return len(self.lines) + sum(1 for text in self.partial.values() if text)

    def tail(self, count: int) -> list[tuple[str, str]]:
        """The newest ``count`` lines (partial ones included)."""
        partial = [(stream, text) for stream, text in self.partial.items() if text]
        need = count - len(partial)
        if need <= 0:
            return partial[-count:] if count > 0 else []
        start = max(0, len(self.lines) - need)
        complete = [self.lines[i] for i in range(start, len(self.lines))]
        return complete + partial

    def text(self) -> str:
        """Everything kept, as one string (the pager's source when nothing was dropped)."""
        return "\n".join(line for _, line in self.visible())

    def close(self) -> None:
        if self.spilling and self.spill_path is not None:
            SPILL.close(self.spill_path)

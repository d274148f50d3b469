"""Line access to a saved output of any size, from a sparse index of line starts.

A saved output can be a gibibyte. Indexing every line start would cost eight bytes a line
(160 MB for twenty million short lines), so the index keeps one checkpoint, a pair of line number
and byte offset, about every ``STEP`` bytes: 16,384 checkpoints for 1 GiB, whatever the line
count. A line is found by bisecting the checkpoints and splitting the few kilobytes after the
nearest one; the regions last read stay in a small cache, so scrolling reads each region once.
"""

from __future__ import annotations

import array
import bisect
import io
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

STEP = 64 * 1024
"""Bytes between checkpoints: the most a line lookup reads beyond the line itself."""
CHUNK = 4 * 1024 * 1024
"""Bytes per read while indexing."""
MAX_LINE_BYTES = 16 * 1024
"""A line is shown to this many bytes: a one-line gibibyte must not be read to draw it."""
WIDTH_SAMPLE = 5000
REGIONS_KEPT = 8


class IndexCancelled(Exception):
    """The pager closed while the index was still being built."""


class LineSource:
    """Lines of a file (or of an in-memory string), indexed sparsely, read on demand.

    ``index`` runs in a worker thread and may be read from while it grows: ``len`` is the
    number of lines indexed so far, and every one of them can be read.
    """

    def __init__(self, text: str = "", path: Path | None = None) -> None:
        self.path = path
        self._data = text.encode() if path is None else None
        self.size = len(self._data) if self._data is not None else 0
        self.width = 0
        self.done = False
        self._lines_at = array.array("q", [0])  # checkpoint i starts line _lines_at[i]
        self._offsets = array.array("q", [0])  # ... at byte _offsets[i]
        self._count = 0
        self._end = 0  # bytes indexed so far
        self._lock = threading.Lock()
        self._regions: OrderedDict[int, list[bytes]] = OrderedDict()
        self._reader: BinaryIO | None = None

    def open(self) -> BinaryIO:
        """A new binary reader over the whole source (each thread gets its own)."""
        if self._data is not None:
            return io.BytesIO(self._data)
        assert self.path is not None
        return self.path.open("rb")

    def index(
        self,
        progress: Callable[[], None] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        """Scan once, keeping a checkpoint about every ``STEP`` bytes (in a worker thread)."""
        lines = 0
        position = 0
        next_mark = STEP
        widest = 0
        tail_open = False  # the last byte read was not a newline
        with self.open() as reader:
            while block := reader.read(CHUNK):
                if cancelled():
                    raise IndexCancelled
                if lines < WIDTH_SAMPLE:
                    for part in block.split(b"\n", WIDTH_SAMPLE)[:WIDTH_SAMPLE]:
                        widest = max(widest, len(part))
                marks: list[tuple[int, int]] = []
                counted = 0  # offset in block up to which newlines are counted into ``lines``
                while next_mark <= position + len(block):
                    found = block.find(b"\n", max(next_mark - 1 - position, 0))
                    if found == -1:
                        break
                    lines += block.count(b"\n", counted, found + 1)
                    counted = found + 1
                    start = position + found + 1
                    marks.append((lines, start))
                    next_mark = start + STEP
                lines += block.count(b"\n", counted)
                position += len(block)
                tail_open = not block.endswith(b"\n")
                with self._lock:
                    for line, offset in marks:
                        self._lines_at.append(line)
                        self._offsets.append(offset)
                    self._count = lines
                    self._end = position
                    self.width = widest
                if progress is not None:
                    progress()
        with self._lock:
            if tail_open or position == 0:
                self._count = lines + 1  # a last line with no newline (or one empty line)
            if self._offsets[-1] >= position and len(self._offsets) > 1:
                self._lines_at.pop()  # a trailing newline does not start another line
                self._offsets.pop()
            self.size = position
            self.done = True
        if progress is not None:
            progress()

    def __len__(self) -> int:
        return self._count

    @property
    def indexed_bytes(self) -> int:
        return self._end

    def checkpoints(self) -> int:
        return len(self._offsets)

    def line(self, number: int) -> str:
        """Line ``number`` (from 0), decoded, cut at ``MAX_LINE_BYTES``."""
        return self.raw_line(number).decode("utf-8", "replace").rstrip("\r")

    def raw_line(self, number: int) -> bytes:
        if not 0 <= number < self._count:
            raise IndexError(number)
        with self._lock:
            region = bisect.bisect_right(self._lines_at, number) - 1
            lines = self._region(region)
            return lines[number - self._lines_at[region]]

    def _region(self, region: int) -> list[bytes]:
        """The lines from checkpoint ``region`` to the next, read once and kept a while."""
        cached = self._regions.get(region)
        last = region + 1 >= len(self._offsets)
        if cached is not None and not (last and not self.done):
            self._regions.move_to_end(region)
            return cached
        start = self._offsets[region]
        stop = self._end if last else self._offsets[region + 1]
        count = (self._count if last else self._lines_at[region + 1]) - self._lines_at[region]
        if self._reader is None:
            self._reader = self.open()
        self._reader.seek(start)
        data = self._reader.read(min(stop - start, STEP + MAX_LINE_BYTES))
        parts = data.split(b"\n")
        if len(parts) < count and stop - start > len(data):
            # The region ends in a long line: its other lines lie past what was read.
            parts = self._long_lines(start, stop, count)
        lines = [part[:MAX_LINE_BYTES] for part in parts[:count]]
        lines.extend(b"" for _ in range(count - len(lines)))
        if last and not self.done:
            return lines  # the index is still growing this region
        self._regions[region] = lines
        if len(self._regions) > REGIONS_KEPT:
            self._regions.popitem(last=False)
        return lines

    def _long_lines(self, start: int, stop: int, count: int) -> list[bytes]:
        """Each line's first ``MAX_LINE_BYTES``, walking a region that holds a very long line."""
        assert self._reader is not None
        lines: list[bytes] = []
        position = start
        while len(lines) < count and position < stop:
            self._reader.seek(position)
            head = self._reader.read(MAX_LINE_BYTES)
            lines.append(head.split(b"\n", 1)[0])
            newline = head.find(b"\n")
            if newline != -1:
                position += newline + 1
                continue
            position = self._find_newline(position + len(head), stop)
        return lines

    def _find_newline(self, position: int, stop: int) -> int:
        assert self._reader is not None
        while position < stop:
            self._reader.seek(position)
            block = self._reader.read(min(CHUNK, stop - position))
            if not block:
                break
            found = block.find(b"\n")
            if found != -1:
                return position + found + 1
            position += len(block)
        return stop

    def close(self) -> None:
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            self._regions.clear()

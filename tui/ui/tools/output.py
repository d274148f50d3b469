"""A tool call's output as the UI keeps it: a bounded tail in memory, everything in a file.

Each block keeps at most ``max_lines`` lines and ``max_bytes`` bytes of the newest output, and
says so. The moment it first has to drop something, it starts a spill file with everything it
had and appends every later chunk, so the pager can always show the whole stream even though
the widget holds only its tail. Spill writes go through one background thread, never the
event loop, and stop at the disk cap (``spill_cap``); a file cut there ends with a line saying
so (``tui.spill.CappedSpill``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from tui.spill import DEFAULT_DISK_CAP, SPILL, CappedSpill, human_bytes
from tui.spill import text_size as _size

MAX_LINES = 1000
MAX_BYTES = 128 * 1024
MAX_LINE_CHARS = 4096
"""A line longer than this is split, so a flood with no newline stays bounded too."""


@dataclass
class OutputBuffer:
    """The newest output lines of one call, bounded in lines and bytes."""

    spill_path: Path | None = None
    """Where everything goes once something had to be dropped (None: never spill)."""
    spill_cap: int = DEFAULT_DISK_CAP
    """Bytes the spill file may hold; past them it only counts what it did not save."""
    spill: CappedSpill | None = None
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
        if self.spill is not None:
            self.spill.write(text)
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
        self.spill = CappedSpill(self.spill_path, self.spill_cap)
        # Before the first drop the buffer still holds everything seen so far.
        everything = "".join(line + "\n" for _, line in self.lines)
        everything += "".join(self.partial.values())
        self.spill.write(everything)

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
        if self.spill is not None:
            self.spill.close()


__all__ = ["MAX_BYTES", "MAX_LINES", "SPILL", "OutputBuffer", "human_bytes"]

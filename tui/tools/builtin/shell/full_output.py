"""A command's full output, saved while it streams, and the model's honest view of it.

A backend keeps only the head of a stream in memory (``tui.exec.streams.KEEP_LIMIT``), so a
"full output" file written from the result would stop there and the model's "tail" would be
the tail of that head. Instead each stream is teed from the live sink: ``StreamSpool`` counts
every character, keeps the true last ``keep_tail`` characters, and once the stream is longer
than the model may read, writes everything to a file bounded by the disk cap
(``tui.spill.CappedSpill``). ``spooled_view`` then builds the model's head + tail with
the real number of characters left out, the file's path, and what the disk cap cut.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from tui.locations import tool_output_dir
from tui.spill import CAP_SETTING, DEFAULT_DISK_CAP, CappedSpill, human_bytes
from tui.tools.truncation import Truncated, TruncationRule, safe_cut, spill_file_name


@dataclass
class StreamSpool:
    """One stream of one call. ``feed`` never blocks: the file is written by ``SPILL``."""

    name: str
    """The file's name without extension (``call_1-stdout``)."""
    start_after: int
    """Characters held in memory before the file is started (what the model may read)."""
    keep_tail: int
    cap: int = DEFAULT_DISK_CAP
    total: int = 0
    """Characters received."""
    tail: str = ""
    file: CappedSpill | None = None
    _pending: list[str] = field(default_factory=list)
    _pending_chars: int = 0
    _token: str = field(default_factory=lambda: secrets.token_hex(4))

    @property
    def path(self) -> Path:
        """Named by the call and a token of its own: servers that reuse call ids (local ones
        do) must never make two outputs share, or grow, one file."""
        return Path(tool_output_dir(), f"{spill_file_name(self.name)}-{self._token}.txt")

    @property
    def started(self) -> bool:
        return self.file is not None

    def feed(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        if self.keep_tail:
            self.tail = (self.tail + text)[-self.keep_tail :]
        if self.file is not None:
            self.file.write(text)
            return
        self._pending.append(text)
        self._pending_chars += len(text)
        if self._pending_chars > self.start_after:
            self.file = CappedSpill(self.path, self.cap)
            self.file.write("".join(self._pending))
            self._pending = []

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def spooled_view(head: str, spool: StreamSpool, rule: TruncationRule) -> Truncated:
    """The model's view of a stream the spool saved: head, the cut, the true tail.

    ``head`` is the backend's kept text (its start is the stream's start); the tail and the
    total come from the spool, which saw everything.
    """
    head_end = safe_cut(head, min(rule.limit, len(head)))
    tail = spool.tail[len(spool.tail) - rule.keep_tail :] if rule.keep_tail else ""
    cut = max(0, spool.total - head_end - len(tail))
    assert spool.file is not None
    where = f"; full output ({spool.total} chars) saved to {spool.path}"
    if spool.file.failed is not None:
        where += f"; that file is incomplete: {spool.file.cut_note('it')}"
    elif spool.file.capped:
        where += (
            f"; that file stops at the disk cap of {human_bytes(spool.cap)} ({CAP_SETTING}): "
            f"the last {spool.file.dropped} bytes were not saved"
        )
    place = "from the middle" if tail else "from end"
    marker = f"\n[truncated {cut} chars {place}{where}]\n"
    return Truncated(head[:head_end] + marker + tail, cut, str(spool.path))


__all__ = ["StreamSpool", "spooled_view"]

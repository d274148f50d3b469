"""Literal search through a saved output, streamed in chunks so a gibibyte never sits in memory.

The needle is a plain string, never a pattern: what is searched is attacker-written output, and
a literal search cannot be made to backtrack. Lower-case needles match any case (as ``less -i``
does); a needle with a capital matches exactly. Each match is kept as its line and its rank
within that line, so the view can mark the current one and ``n`` / ``N`` can step through them.
"""

from __future__ import annotations

import array
import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

from tui.ui.tools.pager_index import CHUNK, LineSource

MAX_MATCHES = 1_000_000
"""Matches kept (16 bytes each); past it they are counted, not kept."""


def folds_case(needle: str) -> bool:
    """Smart case: a needle with no capital letter matches any case."""
    return needle == needle.lower()


def find_all(text: str, needle: str) -> list[int]:
    """Where ``needle`` starts in one line of text, not overlapping (for highlighting)."""
    if not needle:
        return []
    haystack, wanted = (text.lower(), needle.lower()) if folds_case(needle) else (text, needle)
    found: list[int] = []
    start = 0
    while (at := haystack.find(wanted, start)) != -1:
        found.append(at)
        start = at + len(wanted)
    return found


@dataclass
class SearchResult:
    """The matches found so far; grows while the search streams."""

    needle: str
    lines: array.array[int] = field(default_factory=lambda: array.array("q"))
    ranks: array.array[int] = field(default_factory=lambda: array.array("q"))
    total: int = 0
    scanned: int = 0
    done: bool = False

    def __len__(self) -> int:
        return len(self.lines)

    def first_at_or_after(self, line: int) -> int | None:
        """The first match on ``line`` or below it, or None."""
        at = bisect.bisect_left(self.lines, line)
        return at if at < len(self.lines) else None

    def last_before(self, line: int) -> int | None:
        at = bisect.bisect_left(self.lines, line) - 1
        return at if at >= 0 else None


def search(
    source: LineSource,
    needle: str,
    result: SearchResult,
    progress: Callable[[], None] = lambda: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> None:
    """Stream ``source`` and record every match of ``needle`` into ``result`` (in a thread).

    Chunks overlap by the needle's length less one, so a match across a chunk boundary is found
    once. Matches are counted per line the way the view finds them: split at newlines.
    """
    fold = folds_case(needle)
    wanted = (needle.lower() if fold else needle).encode()
    if not wanted:
        result.done = True
        return
    keep = len(wanted) - 1
    line = 0
    last_line = -1
    rank = 0
    carry = b""
    with source.open() as reader:
        while block := reader.read(CHUNK):
            if cancelled():
                return
            data = carry + block
            haystack = data.lower() if fold else data
            # Matches must start in this block's new bytes or in the carried tail.
            limit = len(data) - keep if len(block) == CHUNK else len(data)
            counted = 0
            start = 0
            while (at := haystack.find(wanted, start)) != -1 and at < limit:
                line += data.count(b"\n", counted, at)
                counted = at
                rank = rank + 1 if line == last_line else 0
                last_line = line
                result.total += 1
                if len(result.lines) < MAX_MATCHES:
                    result.lines.append(line)
                    result.ranks.append(rank)
                start = at + len(wanted)
            cut = max(limit, start) if start > limit else limit
            line += data.count(b"\n", counted, cut)
            carry = data[cut:]
            result.scanned += len(block)
            progress()
    result.done = True
    progress()

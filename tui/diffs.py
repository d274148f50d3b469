"""Unified diffs of file changes, for the approval, the result block and headless output alike.

One pure module (no Textual, no I/O), so what a person approves in the modal, what the block
shows after the edit and what ``--output text`` prints are the same lines. A diff is kept as
unified-diff text (it serialises into events unchanged) and parsed into numbered lines only
where it is shown.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

MAX_DIFF_CHARS = 200_000
"""The most diff text an event carries; a rewrite of a huge file should not bloat the bus."""
FOLD_LINES = 60
"""Diff lines shown before the rest is folded behind a count (the pager shows all of them)."""

DIFF_REPLACES = frozenset({"old_string", "new_string", "content"})
"""A file tool's arguments whose meaning its diff shows in full: an approval shows the diff
in their place (the path and every other argument stay)."""

LineKind = Literal["hunk", "add", "remove", "context", "header", "note"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_CUT = "[diff cut: "


@dataclass(frozen=True)
class DiffLine:
    """One line of a diff as shown: its kind, its text without the sign, its numbers."""

    kind: LineKind
    text: str
    old: int | None = None
    """Line number in the file before the change (None for added lines and headers)."""
    new: int | None = None
    """Line number in the file after the change (None for removed lines and headers)."""


@dataclass(frozen=True)
class Folded:
    """The lines to show and how many were left out of view."""

    lines: list[DiffLine]
    hidden: int


def _diff_lines(text: str) -> list[str]:
    """Lines with their endings, split on ``\\n`` only (a lone ``\\r`` stays in its line)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def unified_diff(old: str, new: str, name: str, context: int = 3) -> tuple[str, int, int]:
    """A unified diff plus added/removed line counts.

    Only the changed middle is handed to difflib (common head and tail lines are trimmed and
    the hunk numbers shifted back), so a one-line edit in a 10 MB file stays fast.
    """
    a, b = _diff_lines(old), _diff_lines(new)
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    skip_head = max(0, head - context)
    skip_tail = max(0, tail - context)
    body = difflib.unified_diff(
        a[skip_head : len(a) - skip_tail],
        b[skip_head : len(b) - skip_tail],
        f"a/{name}",
        f"b/{name}",
        n=context,
    )
    out: list[str] = []
    added = removed = 0
    for index, line in enumerate(body):
        if index >= 2:
            if line.startswith("@@"):
                line = _shift_hunk(line, skip_head)
            elif line.startswith("+"):
                added += 1
            elif line.startswith("-"):
                removed += 1
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out), added, removed


def creation_diff(new: str, name: str) -> tuple[str, int]:
    """A new file as a diff: every line added (what ``git diff`` shows for a new file)."""
    diff, added, _ = unified_diff("", new, name)
    return diff.replace(f"--- a/{name}", "--- /dev/null", 1), added


def _shift_hunk(line: str, by: int) -> str:
    match = _HUNK.match(line)
    if not match or not by:
        return line
    old_start, old_len, new_start, new_len = match.groups()
    return (
        f"@@ -{int(old_start) + by}{',' + old_len if old_len is not None else ''} "
        f"+{int(new_start) + by}{',' + new_len if new_len is not None else ''} @@"
        + line[match.end() :]
    )


def bounded_diff(diff: str, limit: int = MAX_DIFF_CHARS) -> str:
    """At most ``limit`` characters, cut at a line end, saying how much was cut."""
    if len(diff) <= limit:
        return diff
    cut = diff.rfind("\n", 0, limit) + 1 or limit
    return diff[:cut] + f"{_CUT}{len(diff) - cut:,} more chars]\n"


def parse(diff: str) -> list[DiffLine]:
    """The lines of a unified diff, each numbered in the old and the new file."""
    lines: list[DiffLine] = []
    old = new = 0
    in_hunk = False  # a "--- x" line inside a hunk is a removed "-- x", not a file header
    for raw in diff.splitlines():
        match = _HUNK.match(raw)
        if match:
            old, new = int(match.group(1)), int(match.group(3))
            in_hunk = True
            lines.append(DiffLine("hunk", raw))
        elif raw.startswith(("--- ", "+++ ")) and not in_hunk:
            lines.append(DiffLine("header", raw))
        elif raw.startswith("+"):
            lines.append(DiffLine("add", raw[1:], new=new))
            new += 1
        elif raw.startswith("-"):
            lines.append(DiffLine("remove", raw[1:], old=old))
            old += 1
        elif raw.startswith(" "):
            lines.append(DiffLine("context", raw[1:], old=old, new=new))
            old += 1
            new += 1
        else:  # "\ No newline at end of file", a cut notice
            lines.append(DiffLine("note", raw))
    return lines


def fold(lines: list[DiffLine], limit: int = FOLD_LINES) -> Folded:
    """The first ``limit`` lines and the count of the rest (file headers never count)."""
    body = [line for line in lines if line.kind != "header"]
    if len(body) <= limit:
        return Folded(body, 0)
    return Folded(body[:limit], len(body) - limit)


def counts(diff: str) -> tuple[int, int]:
    """Added and removed lines of a diff."""
    added = removed = 0
    for line in parse(diff):
        added += line.kind == "add"
        removed += line.kind == "remove"
    return added, removed


def fold_notice(hidden: int, key: str | None = "o") -> str:
    """What a folded diff says about the rest."""
    more = f"… {hidden:,} more line{'' if hidden == 1 else 's'}"
    return f"{more} — {key} opens the whole diff" if key else more


def number_width(lines: list[DiffLine]) -> int:
    """Digits needed for the widest line number shown."""
    widest = max((max(line.old or 0, line.new or 0) for line in lines), default=0)
    return max(2, len(str(widest)))


def plain_line(line: DiffLine, width: int) -> str:
    """One line as text: old and new numbers, the sign, the content."""
    if line.kind in ("hunk", "header", "note"):
        return line.text
    old = str(line.old) if line.old is not None else ""
    new = str(line.new) if line.new is not None else ""
    sign = {"add": "+", "remove": "-"}.get(line.kind, " ")
    return f"{old:>{width}} {new:>{width}} {sign}{line.text}"


def plain(diff: str, limit: int | None = FOLD_LINES, key: str | None = None) -> str:
    """The diff as numbered plain text (headless output, the pager), folded after ``limit``."""
    lines = parse(diff)
    folded = fold(lines, limit) if limit is not None else Folded(fold(lines, 1 << 62).lines, 0)
    width = number_width(folded.lines)
    out = [plain_line(line, width) for line in folded.lines]
    if folded.hidden:
        out.append(fold_notice(folded.hidden, key))
    return "\n".join(out)

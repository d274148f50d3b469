"""What ``list_files`` shows: a folder walked breadth first, then chosen shallowest first.

Locally the walk is ``os.scandir`` in a worker thread; other targets give the same entries
from GNU ``find``. Either way one renderer bounds the listing itself, so a capped answer still
shows the whole top of the tree.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tui.tools.builtin.files.access import SKIP_DIRS, human_size, plural

MAX_LIST_ENTRIES = 1000
MAX_LIST_SCAN = 50_000
"""Entries looked at before a listing gives up counting (a depth-10 walk of ``/``)."""


EntryKind = Literal["dir", "file", "link", "skipped", "other"]


@dataclass(frozen=True)
class Entry:
    rel: str
    """Path relative to the listed folder, with ``/`` separators."""
    kind: EntryKind
    size: int | None = None
    target: str | None = None

    @property
    def level(self) -> int:
        return self.rel.count("/")

    def render(self) -> str:
        if self.kind == "dir":
            return f"{self.rel}/"
        if self.kind == "skipped":
            return f"{self.rel}/  (not listed)"
        if self.kind == "link":
            return f"{self.rel} -> {self.target}"
        if self.kind == "file" and self.size is not None:
            return f"{self.rel}  ({human_size(self.size)})"
        return self.rel


@dataclass
class Scan:
    entries: list[Entry]
    complete: bool
    """False when the scan stopped at ``MAX_LIST_SCAN`` entries."""


def scan_local(root: Path, depth: int, hides: Callable[[str, bool], bool] | None = None) -> Scan:
    """Breadth-first, so a capped listing shows the shallow levels whole.

    ``hides(path, is_link)`` leaves an entry out and keeps the walk out of it (a secret).
    """
    entries: list[Entry] = []
    queue: list[tuple[Path, str, int]] = [(root, "", 1)]
    while queue:
        folder, prefix, level = queue.pop(0)
        try:
            with os.scandir(folder) as listing:
                items = sorted(listing, key=lambda item: item.name)
        except OSError:
            continue
        for item in items:
            if len(entries) >= MAX_LIST_SCAN:
                return Scan(entries, False)
            entry = _local_entry(item, prefix + item.name)
            if hides is not None and hides(item.path, entry.kind == "link"):
                continue
            entries.append(entry)
            if entry.kind == "dir" and level < depth:
                queue.append((Path(item.path), entry.rel + "/", level + 1))
    return Scan(entries, True)


def _local_entry(item: os.DirEntry[str], rel: str) -> Entry:
    try:
        if item.is_symlink():
            return Entry(rel, "link", target=os.readlink(item.path))
        if item.is_dir(follow_symlinks=False):
            return Entry(rel, "skipped" if item.name in SKIP_DIRS else "dir")
        if item.is_file(follow_symlinks=False):
            return Entry(rel, "file", size=item.stat(follow_symlinks=False).st_size)
    except OSError:
        pass
    return Entry(rel, "other")


def find_command(root: Path, depth: int) -> str:
    """The same listing from GNU ``find`` on targets Python cannot look at directly."""
    names = " -o ".join(f"-name {shlex.quote(name)}" for name in sorted(SKIP_DIRS))
    return (
        f"find {shlex.quote(str(root))} -mindepth 1 -maxdepth {depth} "
        f"\\( -type d \\( {names} \\) -printf 'S\\t0\\t%P\\t\\0' -prune \\) "
        "-o -printf '%y\\t%s\\t%P\\t%l\\0'"
    )


def parse_find(output: str) -> Scan:
    kinds: dict[str, EntryKind] = {
        "d": "dir",
        "f": "file",
        "l": "link",
        "S": "skipped",
    }
    entries: list[Entry] = []
    for record in output.split("\0"):
        if not record:
            continue
        kind, _, rest = record.partition("\t")
        size, _, rest = rest.partition("\t")
        rel, _, target = rest.rpartition("\t")
        mapped: EntryKind = kinds.get(kind, "other")
        entries.append(
            Entry(
                rel,
                mapped,
                size=int(size) if mapped == "file" and size.isdigit() else None,
                target=target if mapped == "link" else None,
            )
        )
    return Scan(entries, True)


def render_listing(
    scan: Scan, name: str, depth: int, cap: int, budget: int
) -> tuple[str, dict[str, Any]]:
    """Header first, then entries in path order, chosen shallowest first.

    The listing bounds itself (``cap`` entries, ``budget`` characters) rather than leaving it
    to the registry's head cut, which would keep alphabetically-first deep entries and drop
    later top-level ones: a capped listing still shows the whole top of the tree.
    """
    chosen: list[Entry] = []
    used = 0
    for entry in sorted(scan.entries, key=lambda entry: (entry.level, entry.rel)):
        size = len(entry.render()) + 1
        if len(chosen) >= cap or (chosen and used + size > budget):
            break
        chosen.append(entry)
        used += size
    chosen.sort(key=lambda entry: entry.rel.split("/"))
    total = len(scan.entries)
    more = total - len(chosen)
    if scan.complete:
        header = f"{name}/ (depth {depth}): {_tally(scan.entries)}"
    else:
        header = f"{name}/ (depth {depth}): more than {total} entries; stopped counting"
    if more > 0 or not scan.complete:
        header += (
            f". Showing {len(chosen)}, shallowest first; "
            f"{'at least ' if not scan.complete else ''}{more} more not shown: list a "
            "subfolder or use a smaller depth"
        )
    body = "\n".join(entry.render() for entry in chosen) if chosen else "(empty folder)"
    details = {
        "entries": total,
        "shown": len(chosen),
        "complete": scan.complete,
        "truncated_chars": 0,
    }
    return f"{header}\n{body}", details


def _tally(entries: list[Entry]) -> str:
    dirs = sum(1 for entry in entries if entry.kind in ("dir", "skipped"))
    files = sum(1 for entry in entries if entry.kind == "file")
    links = sum(1 for entry in entries if entry.kind == "link")
    others = len(entries) - dirs - files - links
    parts = [plural(dirs, "folder"), plural(files, "file")]
    if links:
        parts.append(plural(links, "symlink"))
    if others:
        parts.append(f"{others} other")
    return ", ".join(parts)

"""The two ``grep_search`` engines, feeding one collector of matches.

ripgrep (arguments built here, its ``--null`` output parsed here) and the Python walk both feed
``Collector``, so both stop at the same cap and say "more" the same way, and the tool renders
one kind of record whichever engine ran.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tui.tools.builtin.files.access import (
    looks_binary,
    split_lines,
)
from tui.tools.builtin.search.grep_query import FileFilter, GrepSearchParams, OutputMode
from tui.tools.builtin.search.ripgrep import first_error, skip_globs
from tui.tools.builtin.search.walk import Hides, walk_files

MAX_COLUMNS = 500
"""Characters of a matching line shown; minified files should not flood the answer."""
_LONG_LINE = " [... omitted end of long line]"


@dataclass
class FileHits:
    """What one file contributed: its matching lines (and context), or just a count."""

    path: Path
    count: int = 0
    lines: list[tuple[int, str, bool]] = field(default_factory=list)
    """(line number, text, is a match)."""


@dataclass
class GrepOutcome:
    files: list[FileHits]
    more: bool
    note: str | None = None


class Collector:
    """Turns a stream of match/context lines into ``FileHits``, stopping past the cap.

    Both engines feed it, so both stop at the same place and say "more" the same way.
    """

    def __init__(self, mode: OutputMode, limit: int, context: int) -> None:
        self.mode = mode
        self.limit = limit
        self.context = context
        self.files: list[FileHits] = []
        self.matches = 0
        self.more = False

    def _current(self, path: Path) -> FileHits:
        if not self.files or self.files[-1].path != path:
            self.files.append(FileHits(path))
        return self.files[-1]

    def line(self, path: Path, number: int, text: str, is_match: bool) -> None:
        if self.more:
            return
        if is_match:
            if self.matches >= self.limit:
                self.more = True
                return
            self.matches += 1
        hits = self._current(path)
        hits.lines.append((number, _cut_line(text), is_match))
        hits.count += is_match

    def file(self, path: Path, count: int) -> None:
        if self.more:
            return
        if len(self.files) >= self.limit:
            self.more = True
            return
        self.files.append(FileHits(path, count))

    def outcome(self, note: str | None = None) -> GrepOutcome:
        files = [hits for hits in self.files if hits.count]
        if self.mode == "content":
            for hits in files:
                last = max(number for number, _, is_match in hits.lines if is_match)
                hits.lines = [entry for entry in hits.lines if entry[0] <= last + self.context]
        return GrepOutcome(files, self.more, note)


def _cut_line(text: str) -> str:
    text = text.removesuffix("\r")
    if text.endswith(_LONG_LINE) or len(text) <= MAX_COLUMNS:
        return text
    return text[:MAX_COLUMNS] + _LONG_LINE


_RG_LINE = re.compile(r"(\d+)([:-])")


def rg_grep_args(params: GrepSearchParams, root: Path) -> list[str]:
    args = ["--no-config", "--hidden", "--no-require-git", "--sort", "path", "--color", "never"]
    if params.case_insensitive:
        args.append("-i")
    if params.fixed_strings:
        args.append("-F")
    if params.output_mode == "files_with_matches":
        args.append("-l")
    elif params.output_mode == "count":
        args += ["-c", "-H", "--null"]
    else:
        args += [
            "-n",
            "-H",
            "--no-heading",
            "--null",
            "--max-columns",
            str(MAX_COLUMNS),
            "--max-columns-preview",
        ]
        if params.context:
            args += ["-C", str(params.context)]
    args += FileFilter(params.glob).rg_args()
    return [*args, *skip_globs(), "-e", params.pattern, "--", str(root)]


def parse_rg(
    stdout: str, params: GrepSearchParams, collector: Collector, hides: Hides | None = None
) -> None:
    """``hides`` screens every path ripgrep returns (asked once per path)."""
    verdicts: dict[str, bool] = {}

    def hidden(path: str) -> bool:
        if hides is None:
            return False
        if path not in verdicts:
            verdicts[path] = hides(path)
        return verdicts[path]

    for raw in stdout.split("\n"):
        if not raw or collector.more:
            continue
        if params.output_mode == "files_with_matches":
            if not hidden(raw):
                collector.file(Path(raw), 1)
            continue
        path, sep, rest = raw.partition("\0")
        if not sep or hidden(path):
            continue
        if params.output_mode == "count":
            if rest.isdigit():
                collector.file(Path(path), int(rest))
            continue
        match = _RG_LINE.match(rest)
        if match:
            text = rest[match.end() :]
            collector.line(Path(path), int(match.group(1)), text, match.group(2) == ":")


def python_grep(
    root: Path,
    is_file: bool,
    regex: re.Pattern[str],
    params: GrepSearchParams,
    stop: Callable[[], bool],
    hides: Hides | None = None,
) -> GrepOutcome:
    """The fallback engine: walk, skip binaries, match line by line (runs in a thread)."""
    collector = Collector(params.output_mode, params.max_results, params.context)
    filt = FileFilter(params.glob)
    if is_file:
        paths: Iterator[Path] = iter([root])
    else:
        paths = (
            root / rel
            for rel in walk_files(root, override=filt.override, stop=stop, hides=hides)
            if filt.wants(rel)
        )
    unreadable: list[str] = []
    for path in paths:
        if collector.more or stop():
            break
        try:
            data = path.read_bytes()
        except OSError as error:
            unreadable.append(f"{path}: {error.strerror or error}")
            continue
        if looks_binary(data):
            continue
        _grep_text(path, data.decode("utf-8", "replace"), regex, params, collector)
    note = first_error("\n".join(unreadable))
    return collector.outcome(note)


def _grep_text(
    path: Path, text: str, regex: re.Pattern[str], params: GrepSearchParams, collector: Collector
) -> None:
    lines = [line.removesuffix("\r") for line in split_lines(text)]
    hits = [index for index, line in enumerate(lines) if regex.search(line)]
    if not hits:
        return
    if params.output_mode != "content":
        collector.file(path, len(hits))
        return
    wanted: dict[int, bool] = {}
    for index in hits:
        for near in range(
            max(0, index - params.context), min(len(lines), index + params.context + 1)
        ):
            wanted.setdefault(near, False)
        wanted[index] = True
    for index in sorted(wanted):
        collector.line(path, index + 1, lines[index], wanted[index])

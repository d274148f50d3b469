"""Search tools: ``glob_search`` (files by name) and ``grep_search`` (text in files).

Why they are built this way:

* ripgrep does the work when it is there: it is fast, respects ``.gitignore`` the way git
  does, and skips binary files. It runs through ``ctx.backend.run`` with every argument
  quoted, so the same code searches a remote target that has ``rg`` installed.
* Without ripgrep on the local machine, a pure-Python walk (in a worker thread) gives the
  same answers for the common cases: the same traversal order, hidden files included, the
  same folders skipped, and a ".gitignore-lite" that honours the usual pattern forms.
* Both engines produce the same records, and one renderer turns them into text. The model
  sees identical output whichever engine ran, and tests run every case on both.
* Results are sorted by path (ripgrep's ``--sort path``), so a capped answer is the same
  answer every time, and a summary line comes first so no later cut can hide the totals.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from tui.errors import Cancelled, ExecutionFailed, InvalidArguments
from tui.exec.backend import BackendError
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.file_io import (
    SKIP_DIRS,
    display_path,
    is_local,
    looks_binary,
    not_found,
    path_kind,
    plural,
    split_lines,
)
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.secret_screen import SecretScreen

SearchEngine = Literal["auto", "rg", "python"]

MAX_GLOB_RESULTS = 1000
MAX_COLUMNS = 500
"""Characters of a matching line shown; minified files should not flood the answer."""
SEARCH_TIMEOUT = 120.0
_EXIT_MARK = "__agent_tui_rg_exit="
_LONG_LINE = " [... omitted end of long line]"
_RG_TYPE = "agentglob"


# -- globs ----------------------------------------------------------------------------------


def _split_components(pattern: str) -> list[str]:
    """Split on ``/`` outside ``{...}``, so ``{src,lib/x}/*.py`` keeps its alternatives."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in pattern:
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        if char == "/" and not depth:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def glob_regex(pattern: str, *, braces: bool = True, strict: bool = False) -> str:
    """A regex (for ``fullmatch``) equivalent to a gitignore-style glob on a relative path.

    ``*`` and ``?`` stay within one path component, ``**`` spans any number of them, and
    ``{a,b}`` alternates (as in ripgrep; git's own ignore files have no braces). In strict
    mode an unclosed ``[`` or ``{`` is an error, as ripgrep makes it; otherwise literal.
    """
    components = _split_components(pattern)
    out: list[str] = []
    for index, component in enumerate(components):
        last = index == len(components) - 1
        if component == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        out.append(_component_regex(component, braces=braces, strict=strict))
        if not last:
            out.append("/")
    return "".join(out)


def _component_regex(text: str, *, braces: bool, strict: bool) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        index += 1
        if char == "\\" and index < len(text):
            out.append(re.escape(text[index]))
            index += 1
        elif char == "*":
            while index < len(text) and text[index] == "*":
                index += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            cls, index = _char_class(text, index, strict)
            out.append(cls)
        elif char == "{" and braces:
            group, index = _alternates(text, index, strict)
            out.append(group)
        else:
            out.append(re.escape(char))
    return "".join(out)


def _char_class(text: str, index: int, strict: bool) -> tuple[str, int]:
    end = index
    if end < len(text) and text[end] in "!^":
        end += 1
    if end < len(text) and text[end] == "]":
        end += 1
    end = text.find("]", end)
    if end == -1:
        if strict:
            raise InvalidArguments("invalid glob: unclosed character class; missing ']'")
        return re.escape("["), index
    body = text[index:end].replace("\\", "\\\\")
    if body[:1] in ("!", "^"):
        body = "^" + body[1:]
    return f"[{body}]", end + 1


def _alternates(text: str, index: int, strict: bool) -> tuple[str, int]:
    depth = 1
    cursor = index
    pieces: list[str] = []
    start = index
    while cursor < len(text):
        char = text[cursor]
        if char == "\\":
            cursor += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                pieces.append(text[start:cursor])
                alternatives = "|".join(
                    glob_regex(piece, braces=True, strict=strict) for piece in pieces
                )
                return f"(?:{alternatives})", cursor + 1
        elif char == "," and depth == 1:
            pieces.append(text[start:cursor])
            start = cursor + 1
        cursor += 1
    if strict:
        raise InvalidArguments("invalid glob: unclosed alternate group; missing '}'")
    return re.escape("{"), index


_MAGIC = re.compile(r"[*?\[{\\]")


@dataclass(frozen=True)
class GlobRule:
    """One gitignore-style line: a glob, maybe negated, maybe only for folders."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool
    """Matched against the whole relative path (it had a ``/``), not only the last name."""

    @classmethod
    def parse(cls, line: str, *, braces: bool, strict: bool = False) -> GlobRule | None:
        text = line.rstrip("\n\r")
        if not text.endswith("\\ "):
            text = text.rstrip(" ")
        if not text or text.startswith("#"):
            return None
        negate = text.startswith("!")
        if negate:
            text = text[1:]
        dir_only = text.endswith("/")
        text = text.rstrip("/")
        if not text:
            return None
        anchored = "/" in text
        text = text.lstrip("/")
        regex = re.compile(glob_regex(text, braces=braces, strict=strict), re.DOTALL)
        return cls(regex, negate, dir_only, anchored)

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        target = rel if self.anchored else rel.rsplit("/", 1)[-1]
        return self.regex.fullmatch(target) is not None


@dataclass
class IgnoreFile:
    """The rules of one ``.gitignore``, which apply to paths below its own folder."""

    base: Path
    rules: list[GlobRule]

    def verdict(self, path: Path, is_dir: bool) -> bool | None:
        """True ignored, False re-included by a ``!`` rule, None no rule matched."""
        if not path.is_relative_to(self.base):
            return None
        rel = path.relative_to(self.base).as_posix()
        result: bool | None = None
        for rule in self.rules:
            if rule.matches(rel, is_dir):
                result = not rule.negate
        return result


def load_ignore_file(folder: Path) -> IgnoreFile | None:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    rules = [rule for line in text.split("\n") if (rule := GlobRule.parse(line, braces=False))]
    return IgnoreFile(folder, rules) if rules else None


def enclosing_ignore_files(root: Path) -> list[IgnoreFile]:
    """``.gitignore`` files of ``root`` and its parents up to the repository root, outermost
    first (a deeper file overrides a shallower one, as in git)."""
    found: list[IgnoreFile] = []
    folder = root
    while True:
        ignore = load_ignore_file(folder)
        if ignore is not None:
            found.append(ignore)
        if (folder / ".git").exists() or folder.parent == folder:
            break
        folder = folder.parent
    found.reverse()
    return found


def is_ignored(ignores: list[IgnoreFile], path: Path, is_dir: bool) -> bool:
    verdict: bool | None = None
    for ignore in ignores:
        answer = ignore.verdict(path, is_dir)
        if answer is not None:
            verdict = answer
    return bool(verdict)


Override = Callable[[str, bool], bool | None]
"""ripgrep's ``-g`` semantics for a path relative to the search root: True includes it
whatever ``.gitignore`` says, False excludes it, None leaves it to ``.gitignore``."""


Hides = Callable[[str], bool]
"""True for an absolute path (no symlink) a walk must neither return nor enter: a secret."""


def walk_files(
    root: Path,
    *,
    override: Override | None = None,
    stop: Callable[[], bool] | None = None,
    hides: Hides | None = None,
) -> Iterator[str]:
    """Files under ``root`` (relative, ``/``-separated) in ripgrep's ``--sort path`` order.

    Hidden files are included; symlinks are not followed (as ripgrep without ``-L``);
    ``SKIP_DIRS``, whatever the ``.gitignore`` files say and what ``hides`` says are skipped.
    """
    yield from _walk(root, "", enclosing_ignore_files(root), override, stop, hides)


def _walk(
    folder: Path,
    rel: str,
    ignores: list[IgnoreFile],
    override: Override | None,
    stop: Callable[[], bool] | None,
    hides: Hides | None = None,
) -> Iterator[str]:
    if stop is not None and stop():
        return
    try:
        with os.scandir(folder) as listing:
            items = sorted(listing, key=lambda item: item.name)
    except OSError:
        return
    if rel and (own := load_ignore_file(folder)) is not None:
        ignores = [*ignores, own]
    for item in items:
        if item.name in SKIP_DIRS or item.is_symlink():
            continue
        try:
            is_dir = item.is_dir(follow_symlinks=False)
        except OSError:
            continue
        child = rel + item.name
        verdict = override(child, is_dir) if override is not None else None
        if verdict is False or (verdict is None and is_ignored(ignores, Path(item.path), is_dir)):
            continue
        if hides is not None and hides(item.path):
            continue
        if is_dir:
            yield from _walk(Path(item.path), child + "/", ignores, override, stop, hides)
        elif item.is_file(follow_symlinks=False):
            yield child


# -- running ripgrep ------------------------------------------------------------------------


@dataclass
class RgOutput:
    stdout: str
    stderr: str
    exit_code: int | None
    notices: list[str] = field(default_factory=list)
    """From the backend, e.g. output kept only up to its limit: the answer is incomplete."""


async def ripgrep_binary(ctx: ToolContext, engine: SearchEngine) -> str | None:
    """The ``rg`` to run, or None for the pure-Python engine."""
    if engine == "python":
        if not is_local(ctx.backend):
            raise ExecutionFailed(
                f"the Python search engine only reads local files, and the target is "
                f"{ctx.backend.actor}"
            )
        return None
    if not is_local(ctx.backend):
        return "rg"
    found = await asyncio.to_thread(shutil.which, "rg")
    if found is None and engine == "rg":
        raise ExecutionFailed("ripgrep (rg) is not installed on this machine")
    return found


def type_filter(glob: str, *, exclude: bool = False) -> list[str]:
    """A file-name filter that, unlike ``-g``, leaves ``.gitignore`` in charge."""
    return ["--type-add", f"{_RG_TYPE}:{glob}", "-T" if exclude else "-t", _RG_TYPE]


def skip_globs() -> list[str]:
    """Given last, so they override a broad user glob such as ``**/*``."""
    args: list[str] = []
    for name in sorted(SKIP_DIRS):
        args += ["-g", f"!{name}"]
    return args


async def run_ripgrep(
    ctx: ToolContext, rg: str, args: list[str], cwd: Path, *, head: int | None = None
) -> RgOutput:
    """Run ``rg`` on the target; ``head`` stops it after that many output lines.

    Through ``head`` the pipeline's exit status would be head's, so rg's own status comes
    back as a marker line on stderr.
    """
    command = " ".join(shlex.quote(part) for part in [rg, *args])
    if head is not None:
        command = f'{{ {command}; echo "{_EXIT_MARK}$?" >&2; }} | head -n {head}'
    try:
        result = await ctx.backend.run(
            command,
            cwd=str(cwd),
            env=ctx.policy.command_env(),
            timeout=SEARCH_TIMEOUT,
            cancel=ctx.cancel,
        )
    except BackendError as error:
        raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
    if result.cancelled:
        raise Cancelled("the search was cancelled")
    if result.timed_out:
        raise ExecutionFailed(
            f"the search timed out after {SEARCH_TIMEOUT:g} s; narrow the path or the glob"
        )
    exit_code = result.exit_code
    stderr_lines = []
    for line in result.stderr.splitlines():
        if line.startswith(_EXIT_MARK):
            value = line[len(_EXIT_MARK) :]
            exit_code = int(value) if value.isdigit() else exit_code
        else:
            stderr_lines.append(line)
    stderr = "\n".join(stderr_lines).strip()
    if exit_code == 127 or (exit_code and "rg: command not found" in stderr):
        raise ExecutionFailed(
            f"ripgrep (rg) is not installed on {ctx.backend.actor}; install it, or use "
            "run_shell with grep -rn / find"
        )
    if exit_code == 2 and ("regex parse error" in stderr or "error parsing glob" in stderr):
        raise InvalidArguments(f"ripgrep refused the pattern: {stderr}")
    if exit_code not in (0, 1, 141) and not result.stdout:
        raise ExecutionFailed(f"ripgrep failed (exit {exit_code}): {stderr[:1000]}")
    return RgOutput(result.stdout, stderr, exit_code, list(result.notices))


class Deadline:
    """The Python engine's stop signal: cancelled, or out of time (ripgrep has the backend's
    timeout; a thread cannot be killed, so the walk checks this between files)."""

    def __init__(self, ctx: ToolContext, seconds: float = SEARCH_TIMEOUT) -> None:
        self._cancel = ctx.cancel
        self._end = time.monotonic() + seconds
        self.expired = False

    def __call__(self) -> bool:
        if self._cancel.is_set():
            return True
        if time.monotonic() > self._end:
            self.expired = True
        return self.expired

    def note(self) -> str:
        if self.expired:
            return (
                f"note: the search stopped after {SEARCH_TIMEOUT:g} s and is incomplete; "
                "narrow the path or the glob\n"
            )
        return ""


def first_error(stderr: str) -> str | None:
    """rg's non-fatal complaints (an unreadable file) become one note, not a failure."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if not lines:
        return None
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return f"note: some paths could not be searched: {lines[0][:300]}{more}"


# -- glob_search ----------------------------------------------------------------------------


class GlobSearchParams(ToolParams):
    pattern: str = Field(
        min_length=1,
        description="Glob relative to path: `*` and `?` stay within one folder, `**` spans "
        "folders, `{a,b}` alternates. E.g. `**/*.py`, `src/**/test_*.ts`, `*.{yml,yaml}`.",
    )
    path: str | None = Field(
        default=None, description="Folder to search in (default: the workspace)."
    )
    sort: Literal["path", "mtime"] = Field(
        default="path", description="`path` (default) or `mtime`: most recently modified first."
    )


def glob_root(params: GlobSearchParams) -> tuple[str, str]:
    """Split the pattern's literal leading folders into the search root.

    ``src/**/*.py`` searches ``src`` for ``**/*.py``, so the walk is smaller, and a pattern
    like ``../other/*.py`` or ``/etc/*.conf`` names its real root, which the policy checks.
    """
    pattern = params.pattern.rstrip("/") or params.pattern
    parts = _split_components(pattern)
    literal: list[str] = []
    for part in parts[:-1]:
        if _MAGIC.search(part):
            break
        literal.append(part)
    rest = "/".join(parts[len(literal) :])
    prefix = "/".join(literal)
    if pattern.startswith("/"):
        return prefix or "/", rest
    if prefix.startswith("~"):
        return prefix, rest
    base = params.path or "."
    return (os.path.join(base, prefix) if prefix else base), rest


class GlobSearchTool(Tool[GlobSearchParams]):
    name = "glob_search"
    label = "Glob"
    Params = GlobSearchParams
    permission = PermissionMode.READ_ONLY
    aliases: ClassVar[dict[str, str]] = {"glob": "pattern", "dir": "path", "directory": "path"}
    description = """Find files whose path matches a glob pattern, e.g. `**/*.py`.

When to use: finding files by name or extension anywhere in a tree ("all test files", "every
Dockerfile", "where is settings.py").
When NOT to use: finding text inside files (use grep_search); seeing a folder's layout (use
list_files); reading a file (use read_file).
Disambiguation: the pattern is matched against paths relative to `path`: `*.py` matches only
that folder's own files, `**/*.py` matches at any depth. Only files are returned, not folders.
Files ignored by .gitignore, and .git, node_modules, __pycache__ and .venv, are skipped (use
run_shell with find for those). Hidden files are included. At most 1000 paths are returned;
the first line gives the total.
Examples: {"pattern": "**/*.py"}; {"pattern": "src/**/test_*.ts"};
{"pattern": "*.{yml,yaml}", "path": "deploy"}; {"pattern": "**/*.md", "sort": "mtime"}"""

    def __init__(self, engine: SearchEngine = "auto") -> None:
        self.engine = engine

    def access(self, params: GlobSearchParams) -> ToolAccess:
        root, _ = glob_root(params)
        return ToolAccess(permission=PermissionMode.READ_ONLY, read_paths=[root], subject=root)

    async def execute(self, params: GlobSearchParams, ctx: ToolContext) -> ToolResult:
        root_raw, pattern = glob_root(params)
        root = ctx.resolve_path(root_raw)
        regex = re.compile(glob_regex(pattern, strict=True), re.DOTALL)
        kind = await path_kind(ctx, root)
        if kind == "missing":
            raise await not_found(ctx, root, root_raw)
        if kind == "file":
            raise InvalidArguments(f"{root_raw} is a file; path must be a folder to search in")
        rg = await ripgrep_binary(ctx, self.engine)
        screen = SecretScreen.of(ctx)
        if rg is None:
            deadline = Deadline(ctx)
            hides = screen.unlinked
            files = await asyncio.to_thread(
                lambda: list(walk_files(root, stop=deadline, hides=hides))
            )
            note = deadline.note()
        else:
            files, note = await self._rg_files(ctx, rg, root, pattern, screen)
        note = screen.note() + note
        matched = [rel for rel in files if regex.fullmatch(rel)]
        if params.sort == "mtime" and not is_local(ctx.backend):
            note = "note: mtime sorting needs a local target; sorted by path instead\n"
        if params.sort == "mtime" and is_local(ctx.backend):
            matched = await asyncio.to_thread(_newest_first, root, matched)
        else:
            matched.sort(key=lambda rel: rel.split("/"))
        if not matched:
            note += _deeper_hint(files, pattern)
        text = render_glob(matched, params, root, ctx.workspace, note)
        details = {
            "root": str(root),
            "matches": len(matched),
            "shown": min(len(matched), MAX_GLOB_RESULTS),
            "engine": "ripgrep" if rg else "python",
        }
        return ToolResult(text, details)

    async def _rg_files(
        self, ctx: ToolContext, rg: str, root: Path, pattern: str, screen: SecretScreen
    ) -> tuple[list[str], str]:
        args = ["--files", "--no-config", "--hidden", "--no-require-git"]
        last = _split_components(pattern)[-1]
        if last and "**" not in last and "/" not in last and not last.startswith("!"):
            # A file-name pre-filter (a superset of the real matches). A type, not -g: a -g
            # glob would override .gitignore for the files it matches.
            args += type_filter(last)
        args += [*skip_globs(), *screen.exclusions(root), str(root)]
        out = await run_ripgrep(ctx, rg, args, root)
        prefix = str(root).rstrip("/") + "/"
        lines = [line for line in out.stdout.split("\n") if line]
        # rg without -L neither lists nor enters symlinks, and root is canonical: each line
        # is its own real path, so the screen skips a realpath per file (4x faster).
        kept = await asyncio.to_thread(
            lambda: [line for line in lines if not screen.unlinked(str(root / line))]
        )
        files = [line[len(prefix) :] if line.startswith(prefix) else line for line in kept]
        return files, "".join(f"note: {notice}\n" for notice in out.notices)


def _newest_first(root: Path, rels: list[str]) -> list[str]:
    def mtime(rel: str) -> float:
        try:
            return (root / rel).stat().st_mtime
        except OSError:
            return 0.0

    return sorted(rels, key=lambda rel: (-mtime(rel), rel.split("/")))


def _deeper_hint(files: list[str], pattern: str) -> str:
    """A top-level-only pattern that matches deeper is the usual slip; say so."""
    if "/" in pattern:
        return ""
    deeper = re.compile(glob_regex("**/" + pattern), re.DOTALL)
    count = sum(1 for rel in files if deeper.fullmatch(rel))
    if not count:
        return ""
    return (
        f"note: `{pattern}` only matches files directly in the folder; "
        f"`**/{pattern}` would match {plural(count, 'file')} at any depth\n"
    )


def render_glob(
    matched: list[str], params: GlobSearchParams, root: Path, workspace: Path, note: str
) -> str:
    where = display_path(root, workspace)
    order = "most recently modified first" if params.sort == "mtime" else "sorted by path"
    if not matched:
        return f"{note}No files match `{params.pattern}` under {where}."
    shown = matched[:MAX_GLOB_RESULTS]
    header = f"{plural(len(matched), 'file')} match `{params.pattern}` under {where} ({order})"
    if len(matched) > len(shown):
        header += (
            f"; showing the first {len(shown)}, {len(matched) - len(shown)} more not shown: "
            "narrow the pattern or the path"
        )
    lines = [display_path(root / rel, workspace) for rel in shown]
    return note + header + "\n" + "\n".join(lines)


# -- grep_search ----------------------------------------------------------------------------

OutputMode = Literal["content", "files_with_matches", "count"]


class GrepSearchParams(ToolParams):
    pattern: str = Field(
        min_length=1,
        description="Regular expression to search for (ripgrep/Rust syntax, e.g. "
        "`def \\w+_handler`, `TODO|FIXME`); set fixed_strings for a literal string.",
    )
    path: str | None = Field(
        default=None, description="File or folder to search (default: the workspace)."
    )
    glob: str | None = Field(
        default=None,
        description="Only search files matching this glob, e.g. `*.py`, `*.{ts,tsx}`; prefix "
        "with `!` to exclude instead, e.g. `!*.min.js`. A glob with a `/` (`src/*/api.go`) is "
        "matched against the path relative to `path` and includes files even if .gitignore "
        "lists them.",
    )
    case_insensitive: bool = Field(default=False, description="Ignore letter case.")
    fixed_strings: bool = Field(
        default=False, description="Treat pattern as a literal string, not a regex."
    )
    context: int = Field(
        default=0,
        ge=0,
        le=20,
        description="Lines of context to show before and after each match (content mode).",
    )
    output_mode: OutputMode = Field(
        default="content",
        description="`content` (matching lines with line numbers, the default), "
        "`files_with_matches` (only the file paths) or `count` (matching lines per file).",
    )
    max_results: int = Field(
        default=100,
        ge=1,
        le=2000,
        description="Most matching lines (content) or files (the other modes) to return.",
    )


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


def compile_pattern(params: GrepSearchParams) -> re.Pattern[str]:
    source = re.escape(params.pattern) if params.fixed_strings else params.pattern
    try:
        return re.compile(source, re.IGNORECASE if params.case_insensitive else 0)
    except re.error as error:
        raise InvalidArguments(
            f"invalid regular expression {params.pattern!r}: {error}. Escape special "
            "characters such as ( [ . * + ?, or set fixed_strings to search literally"
        ) from None


class FileFilter:
    """The ``glob`` parameter, as ripgrep applies it; ``!`` excludes instead of including.

    A name glob (no ``/``, like ``*.py`` or ``**/*.py``) filters file names and leaves
    ``.gitignore`` in charge (ripgrep's ``--type-add`` / ``-t``). A path glob (``src/*/x.py``)
    is matched against the path relative to the search root with ripgrep's ``-g`` meaning:
    it wins over ``.gitignore`` for what it matches, and excluding one prunes folders too.
    """

    def __init__(self, glob: str | None) -> None:
        self.glob = glob
        self.rule: GlobRule | None = None
        self.by_name = True
        if not glob:
            return
        negate = glob.startswith("!")
        body = glob[1:] if negate else glob
        while body.startswith("**/"):
            body = body[3:]
        self.by_name = "/" not in body.rstrip("/")
        text = ("!" if negate else "") + (body if self.by_name else glob.lstrip("!"))
        self.rule = GlobRule.parse(text, braces=True, strict=True)
        if self.rule is None:
            raise InvalidArguments(f"glob {glob!r} has no pattern in it")
        self.name_glob = body

    def rg_args(self) -> list[str]:
        if self.rule is None or self.glob is None:
            return []
        if self.by_name:
            return type_filter(self.name_glob, exclude=self.rule.negate)
        return ["-g", self.glob]

    def override(self, rel: str, is_dir: bool) -> bool | None:
        if self.rule is None or self.by_name:
            return None
        if self.rule.matches(rel, is_dir):
            return not self.rule.negate
        if not self.rule.negate and not is_dir:
            return False
        return None

    def wants(self, rel: str) -> bool:
        """The name filter, applied after .gitignore (files only)."""
        if self.rule is None or not self.by_name:
            return True
        return self.rule.matches(rel, False) != self.rule.negate


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


def render_grep(outcome: GrepOutcome, params: GrepSearchParams, root: Path, workspace: Path) -> str:
    where = display_path(root, workspace)
    scope = f" in files matching `{params.glob}`" if params.glob else ""
    note = f"{outcome.note}\n" if outcome.note else ""
    if not outcome.files:
        return f"{note}No matches for `{params.pattern}` under {where}{scope}."
    more = (
        " (more exist: narrow the pattern, path or glob, or raise max_results)"
        if outcome.more
        else ""
    )
    files = plural(len(outcome.files), "file")
    names = [display_path(hits.path, workspace) for hits in outcome.files]
    if params.output_mode == "files_with_matches":
        header = f"{files} under {where}{scope} contain `{params.pattern}`{more}:"
        return note + header + "\n" + "\n".join(names)
    total = sum(hits.count for hits in outcome.files)
    matches = plural(total, "matching line")
    if params.output_mode == "count":
        header = f"{matches} in {files} under {where}{scope}{more}:"
        body = "\n".join(
            f"{name}: {hits.count}" for name, hits in zip(names, outcome.files, strict=True)
        )
        return note + header + "\n" + body
    header = f"{matches} in {files} for `{params.pattern}` under {where}{scope}{more}:"
    blocks = [_content_block(name, hits) for name, hits in zip(names, outcome.files, strict=True)]
    return note + header + "\n\n" + "\n\n".join(blocks)


def _content_block(name: str, hits: FileHits) -> str:
    out = [name]
    previous: int | None = None
    for number, text, is_match in hits.lines:
        if previous is not None and number > previous + 1:
            out.append("--")
        out.append(f"{number}{':' if is_match else '-'}{text}")
        previous = number
    return "\n".join(out)


class GrepSearchTool(Tool[GrepSearchParams]):
    name = "grep_search"
    label = "Grep"
    Params = GrepSearchParams
    permission = PermissionMode.READ_ONLY
    aliases: ClassVar[dict[str, str]] = {
        "query": "pattern",
        "regex": "pattern",
        "include": "glob",
        "context_lines": "context",
        "ignore_case": "case_insensitive",
    }
    description = """Search file contents for a regular expression (ripgrep when installed).

When to use: finding where something is defined, used, configured or logged: a function
name, an error message, a config key, a TODO, across a whole tree or one file.
When NOT to use: finding files by name (use glob_search); reading a whole file (use
read_file); searching command output (use run_shell with grep).
Disambiguation: output_mode "content" (default) gives matching lines with line numbers,
grouped by file (`12:` a match, `13-` context); "files_with_matches" only the paths;
"count" matching lines per file. Files ignored by .gitignore, binary files, and .git,
node_modules, __pycache__ and .venv are skipped. The regex is Rust/ripgrep syntax (no
look-around); escape ( [ . etc. or set fixed_strings. No matches is a normal answer, not an
error. Results are capped by max_results; the first line says when more exist.
Examples: {"pattern": "def load_config"}; {"pattern": "TODO|FIXME", "output_mode":
"count"}; {"pattern": "timeout", "path": "src", "glob": "*.py", "context": 2,
"case_insensitive": true}; {"pattern": "a.b(c)", "fixed_strings": true}"""

    def __init__(self, engine: SearchEngine = "auto") -> None:
        self.engine = engine

    def access(self, params: GrepSearchParams) -> ToolAccess:
        path = params.path or "."
        return ToolAccess(permission=PermissionMode.READ_ONLY, read_paths=[path], subject=path)

    async def execute(self, params: GrepSearchParams, ctx: ToolContext) -> ToolResult:
        raw = params.path or "."
        root = ctx.resolve_path(raw)
        kind = await path_kind(ctx, root)
        if kind == "missing":
            raise await not_found(ctx, root, raw)
        rg = await ripgrep_binary(ctx, self.engine)
        screen = SecretScreen.of(ctx)
        if rg is None:
            regex = compile_pattern(params)
            deadline = Deadline(ctx)
            outcome = await asyncio.to_thread(
                python_grep, root, kind == "file", regex, params, deadline, screen.unlinked
            )
            if deadline.expired:
                outcome.note = (outcome.note or "") + deadline.note().rstrip("\n")
        else:
            outcome = await self._rg(ctx, rg, params, root, kind == "file", screen)
        if screen.withheld:
            outcome.note = screen.note().rstrip("\n") + (
                f"\n{outcome.note}" if outcome.note else ""
            )
        text = render_grep(outcome, params, root, ctx.workspace)
        details = {
            "root": str(root),
            "files": len(outcome.files),
            "matches": sum(hits.count for hits in outcome.files),
            "more": outcome.more,
            "engine": "ripgrep" if rg else "python",
        }
        return ToolResult(text, details)

    async def _rg(
        self,
        ctx: ToolContext,
        rg: str,
        params: GrepSearchParams,
        root: Path,
        is_file: bool,
        screen: SecretScreen,
    ) -> GrepOutcome:
        if params.output_mode == "content":
            head = (params.max_results + 1) * (2 * params.context + 2) + 1
        else:
            head = params.max_results + 2
        cwd = root.parent if is_file else root
        args = rg_grep_args(params, root)
        if not is_file:
            args[-4:-4] = screen.exclusions(root)  # before "-e pattern -- root"
        out = await run_ripgrep(ctx, rg, args, cwd, head=head)
        collector = Collector(params.output_mode, params.max_results, params.context)
        await asyncio.to_thread(parse_rg, out.stdout, params, collector, screen.hides)
        notes = [note for note in [first_error(out.stderr)] if note]
        notes += [f"note: {notice}" for notice in out.notices]
        return collector.outcome("\n".join(notes) or None)


def search_tools() -> list[Tool[Any]]:
    return [GlobSearchTool(), GrepSearchTool()]

"""``glob_search``: files by name, with ripgrep or the Python walk.

The pattern's literal leading folders become the search root (a smaller walk, and the root
the policy judges); both engines list the files and one regex from ``globs`` picks the
matches, sorted by path (or newest first) so a capped answer is the same every time, with the
total in the first line.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from tui.errors import InvalidArguments
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.files.access import (
    display_path,
    is_local,
    not_found,
    path_kind,
    plural,
)
from tui.tools.builtin.search.globs import MAGIC_CHARS, glob_regex, split_components
from tui.tools.builtin.search.ripgrep import (
    Deadline,
    SearchEngine,
    ripgrep_binary,
    run_ripgrep,
    skip_globs,
    type_filter,
)
from tui.tools.builtin.search.walk import walk_files
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.secret_screen import SecretScreen

MAX_GLOB_RESULTS = 1000


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
    parts = split_components(pattern)
    literal: list[str] = []
    for part in parts[:-1]:
        if MAGIC_CHARS.search(part):
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
        last = split_components(pattern)[-1]
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

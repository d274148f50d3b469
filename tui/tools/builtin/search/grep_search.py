"""``grep_search``: text in files, with ripgrep or the Python engine.

Results are sorted by path, so a capped answer is the same answer every time, and a summary
line comes first so no later cut can hide the totals; secrets are screened out of both
engines' answers.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess
from tui.tools.builtin.files.access import (
    display_path,
    not_found,
    path_kind,
    plural,
)
from tui.tools.builtin.search.grep_engines import (
    Collector,
    FileHits,
    GrepOutcome,
    parse_rg,
    python_grep,
    rg_grep_args,
)
from tui.tools.builtin.search.grep_query import GrepSearchParams, compile_pattern
from tui.tools.builtin.search.ripgrep import (
    Deadline,
    SearchEngine,
    first_error,
    ripgrep_binary,
    run_ripgrep,
)
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.secret_screen import SecretScreen


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

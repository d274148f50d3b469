"""File tools: ``read_file``, ``write_file``, ``edit_file`` and ``list_files``.

Why they are built this way:

* Every read and write goes through ``ctx.backend``, so the same tools work on whatever
  target the session drives (local, container, SSH). Only listing a folder has a local fast
  path (``os.scandir`` in a worker thread); other backends get the same listing from ``find``.
* Each path is declared in ``access()`` *and* resolved again in ``execute``: the policy judges
  it before anything runs, and the tool then acts on exactly the canonical path that was
  judged (``..`` folded, ``~`` expanded, symlinks followed).
* Output is shaped for a model that acts on it: numbered lines it can quote, paging hints
  with the exact ``offset`` to use next, and errors that say what to do instead (the closest
  file names, the closest matching line, the tool to use for a folder).
* ``read_file`` bounds its own output at whole lines instead of leaving it to the registry's
  character cut, so the "next page" hint is always exact.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from tui.diffs import bounded_diff, unified_diff
from tui.errors import ExecutionFailed, InvalidArguments
from tui.exec.backend import BackendError
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.files.access import (
    LIST_TIMEOUT,
    check_approved,
    display_path,
    encode_text,
    human_size,
    is_local,
    looks_binary,
    not_found,
    path_kind,
    plural,
    read_bytes,
    read_existing,
    split_lines,
    write_bytes,
    write_diff,
)
from tui.tools.builtin.files.edits import EditFileParams, apply_edit, edit_snippet
from tui.tools.builtin.files.listing import (
    MAX_LIST_ENTRIES,
    find_command,
    parse_find,
    render_listing,
    scan_local,
)
from tui.tools.builtin.files.reads import (
    IMAGE_TYPES,
    check_readable_size,
    image_result,
    page_text,
)
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.secret_screen import SecretScreen
from tui.tools.truncation import TruncationRule

DEFAULT_READ_LIMIT = 2000
Engine = Literal["auto", "shell", "python"]


# -- read_file ------------------------------------------------------------------------------


class ReadFileParams(ToolParams):
    path: str = Field(
        description=(
            "File to read; relative paths start at the workspace (on a tmux "
            "backend: where its shell stands)."
        )
    )
    offset: int = Field(default=1, ge=1, description="1-based line number to start at (default 1).")
    limit: int = Field(
        default=DEFAULT_READ_LIMIT,
        ge=1,
        le=100_000,
        description=f"Maximum number of lines to return (default {DEFAULT_READ_LIMIT}).",
    )


class ReadFileTool(Tool[ReadFileParams]):
    name = "read_file"
    label = "Read"
    Params = ReadFileParams
    permission = PermissionMode.READ_ONLY
    truncation = TruncationRule.head(8000)
    aliases: ClassVar[dict[str, str]] = {"file_path": "path", "filename": "path", "file": "path"}
    description = """Read a text file and return its lines numbered like `cat -n`.

When to use: looking at source, configs, logs or any text file before changing or citing it;
paging through a long file or a saved tool output with offset and limit.
When NOT to use: listing a folder (use list_files); finding which files contain something
(use grep_search); finding files by name (use glob_search).
Disambiguation: lines are numbered from 1; the last line says the total line count and, when
more remains, the exact offset for the next page. Output is limited to about 8000 characters
per call, so big files take several pages. Lines over 2000 characters are cut with a marker.
Binary files are described, not dumped; PNG, JPEG, GIF and WebP images are returned as images.
The line-number prefix (spaces, number, tab) is not part of the file: never copy it into
edit_file.
Examples: {"path": "src/app.py"}; {"path": "logs/server.log", "offset": 1200, "limit": 100}"""

    def access(self, params: ReadFileParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.READ_ONLY, read_paths=[params.path], subject=params.path
        )

    async def execute(self, params: ReadFileParams, ctx: ToolContext) -> ToolResult:
        path = ctx.resolve_path(params.path)
        name = display_path(path, ctx.workspace)
        if is_local(ctx.backend):
            await asyncio.to_thread(check_readable_size, path, params.path)
        data = await read_bytes(ctx, path, params.path)
        details: dict[str, Any] = {"path": str(path), "size": len(data)}
        mime = IMAGE_TYPES.get(path.suffix.lower())
        if mime is not None:
            return image_result(data, mime, name, details)
        if looks_binary(data):
            return ToolResult(
                f"{name} is a binary file ({human_size(len(data))}, {len(data)} bytes); its "
                "contents are not shown. Inspect it with run_shell (`file`, `xxd | head`).",
                dict(details, binary=True, truncated_chars=0),
            )
        budget = self.truncation.limit - 400
        page = await asyncio.to_thread(page_text, data, params.offset, params.limit, budget, name)
        details.update(
            total_lines=page.total_lines,
            first_line=page.first,
            last_line=page.last,
            next_offset=page.next_offset,
            truncated_chars=page.cut_chars,
        )
        return ToolResult(page.text, details)


# -- write_file -----------------------------------------------------------------------------


class WriteFileParams(ToolParams):
    path: str = Field(
        description="File to create or replace; relative paths start at the "
        "workspace. Missing parent folders are created."
    )
    content: str = Field(description="The complete new contents of the file (UTF-8 text).")


class WriteFileTool(Tool[WriteFileParams]):
    name = "write_file"
    label = "Write"
    Params = WriteFileParams
    permission = PermissionMode.WORKSPACE_WRITE
    aliases: ClassVar[dict[str, str]] = {"file_path": "path", "text": "content"}
    description = """Create a file, or replace a file's whole contents, with the given text.

When to use: creating a new file; rewriting a file completely (a generated config, a short
script) where an edit would be longer than the file itself.
When NOT to use: changing part of an existing file (use edit_file: smaller, safer, and it
fails loudly instead of silently dropping lines you did not repeat); reading (use read_file).
Disambiguation: parent folders are created. Overwriting replaces everything: read the file
first and include every line that must stay. The result says whether the file was created or
overwritten, and how many lines changed. Writing outside the workspace needs wider permission.
Examples: {"path": "src/util/slug.py", "content": "def slug(s):\\n    return s.lower()\\n"};
{"path": "notes/todo.md", "content": "- [ ] ship it\\n"}"""

    def access(self, params: WriteFileParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.WORKSPACE_WRITE,
            write_paths=[params.path],
            subject=params.path,
        )

    async def preview(self, params: WriteFileParams, ctx: ToolContext) -> str | None:
        path = ctx.resolve_path(params.path, write=True)
        name = display_path(path, ctx.workspace)
        old = await read_existing(ctx, path, params.path)
        if old is not None and looks_binary(old):
            return None
        return bounded_diff((await asyncio.to_thread(write_diff, old, params.content, name))[0])

    async def execute(self, params: WriteFileParams, ctx: ToolContext) -> ToolResult:
        path = ctx.resolve_path(params.path, write=True)
        name = display_path(path, ctx.workspace)
        data = encode_text(params.content, "content")
        old = await read_existing(ctx, path, params.path)
        details: dict[str, Any] = {"path": str(path), "bytes": len(data)}
        lines = len(split_lines(params.content))
        if old == data:
            return ToolResult(
                f"{name} already has exactly this content ({len(data)} bytes); nothing written.",
                dict(details, created=False, changed=False),
            )
        if old is None or not looks_binary(old):
            diff, added, removed = await asyncio.to_thread(write_diff, old, params.content, name)
            check_approved(ctx, diff, name)
        else:  # now binary: whatever diff was approved, it is not this change
            check_approved(ctx, "", name)
        await write_bytes(ctx, path, params.path, data)
        if old is None:
            return ToolResult(
                f"Created {name} ({len(data)} bytes, {plural(lines, 'line')}).",
                dict(details, created=True, changed=True, diff=bounded_diff(diff), added=added),
            )
        details.update(created=False, changed=True, previous_bytes=len(old))
        if looks_binary(old):
            return ToolResult(
                f"Overwrote {name} ({len(data)} bytes, {plural(lines, 'line')}); it was a "
                f"binary file of {len(old)} bytes.",
                details,
            )
        details.update(diff=bounded_diff(diff), added=added, removed=removed)
        return ToolResult(
            f"Overwrote {name} ({len(data)} bytes, {plural(lines, 'line')}; was {len(old)} "
            f"bytes): +{added} -{removed} lines.",
            details,
        )


# -- edit_file ------------------------------------------------------------------------------


class EditFileTool(Tool[EditFileParams]):
    name = "edit_file"
    label = "Edit"
    Params = EditFileParams
    permission = PermissionMode.WORKSPACE_WRITE
    aliases: ClassVar[dict[str, str]] = {
        "file_path": "path",
        "old": "old_string",
        "new": "new_string",
    }
    description = """Replace an exact piece of text in a file with new text, and show the diff.

When to use: changing part of an existing file: fixing a line, renaming within a file,
inserting a block next to a known line, deleting a block (new_string "").
When NOT to use: creating a file or rewriting all of it (use write_file); changing many files
(edit each, or use run_shell with a tool made for it); reading (use read_file).
Disambiguation: old_string must match the file exactly (whitespace and indentation included)
and exactly once: add surrounding lines to make it unique, or set replace_all to change every
occurrence. Copy text from read_file output without its line-number prefixes. Line endings
are preserved (a CRLF file stays CRLF), as is the final newline. Read the file before editing.
Examples: {"path": "src/app.py", "old_string": "    retries = 3\\n", "new_string":
"    retries = 5\\n"}; {"path": "README.md", "old_string": "colour", "new_string": "color",
"replace_all": true}"""

    def access(self, params: EditFileParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.WORKSPACE_WRITE,
            write_paths=[params.path],
            subject=params.path,
        )

    async def preview(self, params: EditFileParams, ctx: ToolContext) -> str | None:
        path = ctx.resolve_path(params.path, write=True)
        name = display_path(path, ctx.workspace)
        data = await read_existing(ctx, path, params.path)
        if data is None or looks_binary(data):
            return None
        text = data.decode("utf-8", "surrogateescape")
        edit = await asyncio.to_thread(apply_edit, text, params, name)
        diff, _, _ = await asyncio.to_thread(unified_diff, text, edit.text, name)
        return bounded_diff(diff)

    async def execute(self, params: EditFileParams, ctx: ToolContext) -> ToolResult:
        path = ctx.resolve_path(params.path, write=True)
        name = display_path(path, ctx.workspace)
        data = await read_bytes(
            ctx, path, params.path, missing_hint=" To create a new file, use write_file."
        )
        if looks_binary(data):
            raise InvalidArguments(f"{name} is a binary file; edit_file only edits text")
        text = data.decode("utf-8", "surrogateescape")
        edit = await asyncio.to_thread(apply_edit, text, params, name)
        diff, added, removed = await asyncio.to_thread(unified_diff, text, edit.text, name)
        check_approved(ctx, diff, name)
        await write_bytes(ctx, path, params.path, encode_text(edit.text, "new_string"))
        snippet = edit_snippet(edit.text, edit.first_line, params.new_string)
        summary = (
            f"Edited {name}: replaced {plural(edit.count, 'occurrence')} (first at line "
            f"{edit.first_line}); +{added} -{removed} lines"
            + ("; CRLF line endings kept" if edit.crlf else "")
            + ".\n"
        )
        details = {
            "path": str(path),
            "diff": bounded_diff(diff),
            "replacements": edit.count,
            "first_line": edit.first_line,
            "added": added,
            "removed": removed,
            "line_endings": "crlf" if edit.crlf else "lf",
        }
        return ToolResult(summary + snippet.rstrip("\n"), details)


# -- list_files -----------------------------------------------------------------------------


class ListFilesParams(ToolParams):
    path: str = Field(default=".", description="Folder to list (default: the workspace).")
    depth: int = Field(
        default=2,
        ge=1,
        le=10,
        description="How many levels deep to go: 1 lists only the folder's own entries "
        "(default 2).",
    )


class ListFilesTool(Tool[ListFilesParams]):
    name = "list_files"
    label = "List"
    Params = ListFilesParams
    permission = PermissionMode.READ_ONLY
    aliases: ClassVar[dict[str, str]] = {"dir": "path", "directory": "path", "max_depth": "depth"}
    description = """List a folder's files and subfolders as paths, with file sizes.

When to use: getting the lay of a project or a folder; checking what a folder holds before
reading or writing in it.
When NOT to use: finding files by name pattern across a tree (use glob_search); finding text
inside files (use grep_search); reading a file (use read_file).
Disambiguation: paths are relative to the listed folder, folders end with `/`, symlinks show
their target and are not followed. .git, node_modules, __pycache__ and .venv are shown but
not descended into. A big tree is cut to about 8000 characters (at most 1000 entries),
shallowest entries first; the first line says how many there are in all. Hidden files are
included; .gitignore is not applied.
Examples: {}; {"path": "src", "depth": 3}; {"path": "/var/log", "depth": 1}"""

    def __init__(self, engine: Engine = "auto") -> None:
        self.engine = engine

    def access(self, params: ListFilesParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.READ_ONLY, read_paths=[params.path], subject=params.path
        )

    async def execute(self, params: ListFilesParams, ctx: ToolContext) -> ToolResult:
        root = ctx.resolve_path(params.path)
        name = display_path(root, ctx.workspace)
        kind = await path_kind(ctx, root)
        if kind == "missing":
            raise await not_found(ctx, root, params.path)
        if kind == "file":
            raise InvalidArguments(f"{params.path} is a file, not a folder; use read_file")
        use_python = self.engine == "python" or (self.engine == "auto" and is_local(ctx.backend))
        screen = SecretScreen.of(ctx)
        if use_python:
            scan = await asyncio.to_thread(
                scan_local, root, params.depth, lambda path, link: screen.hides(path, follow=link)
            )
        else:
            scan = parse_find(await self._find(ctx, root, params.depth))
            scan.entries = [e for e in scan.entries if not screen.hides(str(root / e.rel))]
        text, details = await asyncio.to_thread(
            render_listing,
            scan,
            name,
            params.depth,
            MAX_LIST_ENTRIES,
            self.truncation.limit - 500,
        )
        if screen.withheld:
            text = screen.note() + text
        return ToolResult(text, dict(details, path=str(root), withheld=screen.withheld))

    async def _find(self, ctx: ToolContext, root: Path, depth: int) -> str:
        try:
            result = await ctx.backend.run(
                find_command(root, depth),
                env=ctx.policy.command_env(),
                timeout=LIST_TIMEOUT,
                cancel=ctx.cancel,
            )
        except BackendError as error:
            raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
        if result.exit_code not in (0, 1) or (result.exit_code == 1 and not result.stdout):
            raise ExecutionFailed(
                f"find failed on {ctx.backend.actor}: {result.stderr.strip()[:500]}"
            )
        return result.stdout


def file_tools() -> list[Tool[Any]]:
    return [ReadFileTool(), WriteFileTool(), EditFileTool(), ListFilesTool()]

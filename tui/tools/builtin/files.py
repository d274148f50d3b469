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
import base64
import difflib
import os
import shlex
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from tui.diffs import bounded_diff, creation_diff, unified_diff
from tui.errors import ExecutionFailed, InvalidArguments, NotFound
from tui.exec.backend import BackendError, ExecutionBackend
from tui.exec.local import LocalBackend
from tui.safe_text import clean
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.context import ToolContext
from tui.tools.result import ContentPart, ImageContent, ToolResult
from tui.tools.secret_screen import SecretScreen
from tui.tools.truncation import TruncationRule

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".hg", ".svn"})
"""Folders that are never descended into: version-control internals and dependency trees."""

BINARY_SNIFF_BYTES = 8192
MAX_LINE_CHARS = 2000
DEFAULT_READ_LIMIT = 2000
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_READ_BYTES = 256 * 1024 * 1024
"""Above this read_file refuses (locally) instead of loading the whole file to show a page."""
MAX_LIST_ENTRIES = 1000
MAX_LIST_SCAN = 50_000
"""Entries looked at before a listing gives up counting (a depth-10 walk of ``/``)."""
LIST_TIMEOUT = 60.0

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

Engine = Literal["auto", "shell", "python"]


# -- shared helpers (search.py uses them too) --------------------------------------------------


def is_local(backend: ExecutionBackend) -> bool:
    """True when the backend's files are this machine's, so Python may look at them directly."""
    return isinstance(backend, LocalBackend)


def display_path(path: Path, workspace: Path) -> str:
    """Workspace-relative when inside it (short, and what the model passes back), else absolute."""
    if path == workspace:
        return "."
    if path.is_relative_to(workspace):
        return path.relative_to(workspace).as_posix()
    return str(path)


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


def looks_binary(data: bytes) -> bool:
    """The heuristic git and ripgrep use: a NUL byte near the start means not text."""
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def split_lines(text: str) -> list[str]:
    """Lines as editors number them: split on ``\\n`` only, a final newline adds no line.

    ``str.splitlines`` also splits on form feeds and U+2028, which would shift every line
    number after them away from what ``cat -n``, ``grep -n`` and editors say.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


PathKind = Literal["dir", "file", "missing"]


async def path_kind(ctx: ToolContext, path: Path) -> PathKind:
    """What is at ``path`` on the target (something other than a folder counts as a file)."""
    if is_local(ctx.backend):
        return await asyncio.to_thread(_local_kind, path)
    quoted = shlex.quote(str(path))
    _, out = await _run(
        ctx,
        f"if [ -d {quoted} ]; then echo dir; elif [ -e {quoted} ]; then echo file; "
        "else echo missing; fi",
    )
    answer = out.strip()
    return "dir" if answer == "dir" else "file" if answer == "file" else "missing"


def _local_kind(path: Path) -> PathKind:
    try:
        info = path.stat()
    except OSError:
        return "missing"
    return "dir" if stat.S_ISDIR(info.st_mode) else "file"


async def _run(ctx: ToolContext, command: str) -> tuple[int | None, str]:
    """A small helper command on the target: its exit code and stdout."""
    try:
        result = await ctx.backend.run(
            command, env=ctx.policy.command_env(), timeout=LIST_TIMEOUT, cancel=ctx.cancel
        )
    except BackendError as error:
        raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
    return result.exit_code, result.stdout


async def folder_names(ctx: ToolContext, folder: Path) -> list[str] | None:
    """The names in ``folder``, or None when it cannot be listed (missing, not a folder)."""
    if is_local(ctx.backend):
        try:
            return await asyncio.to_thread(os.listdir, folder)
        except OSError:
            return None
    exit_code, out = await _run(ctx, f"ls -A1 -- {shlex.quote(str(folder))}")
    return out.splitlines() if exit_code == 0 else None


async def not_found(ctx: ToolContext, path: Path, raw: str, *, extra: str = "") -> NotFound:
    """A NotFound that names the closest entries, since a typo is the usual cause."""
    folder = path.parent
    where = display_path(folder, ctx.workspace)
    names = await folder_names(ctx, folder)
    if names is None:
        hint = f" The folder {where} does not exist either."
    else:
        lowered = {name.lower(): name for name in names}
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.5)
        if path.name.lower() in lowered and lowered[path.name.lower()] not in close:
            close.insert(0, lowered[path.name.lower()])
        if close:
            hint = f" Closest names in {where}: {', '.join(close)}."
        else:
            hint = f" Nothing similar in {where} ({len(names)} entries); try list_files."
    return NotFound(f"{raw}: no such file.{hint}{extra}")


async def read_bytes(ctx: ToolContext, path: Path, raw: str, *, missing_hint: str = "") -> bytes:
    """The file's bytes, with every failure turned into an error the model can act on."""
    try:
        return await ctx.backend.read_file(str(path))
    except (FileNotFoundError, NotADirectoryError):
        raise await not_found(ctx, path, raw, extra=missing_hint) from None
    except IsADirectoryError:
        raise InvalidArguments(
            f"{raw} is a directory, not a file; use list_files to see what it holds"
        ) from None
    except PermissionError:
        raise ExecutionFailed(f"cannot read {raw}: permission denied by the file system") from None
    except BackendError as error:
        raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
    except OSError as error:
        raise ExecutionFailed(f"cannot read {raw}: {error.strerror or error}") from None


async def write_bytes(ctx: ToolContext, path: Path, raw: str, data: bytes) -> None:
    try:
        await ctx.backend.write_file(str(path), data, make_parents=True)
    except IsADirectoryError:
        raise InvalidArguments(f"{raw} is a directory; give a file path") from None
    except (NotADirectoryError, FileExistsError):
        raise ExecutionFailed(
            f"cannot write {raw}: a part of its folder path is an existing file"
        ) from None
    except PermissionError:
        raise ExecutionFailed(f"cannot write {raw}: permission denied by the file system") from None
    except BackendError as error:
        raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
    except OSError as error:
        raise ExecutionFailed(f"cannot write {raw}: {error.strerror or error}") from None


async def read_existing(ctx: ToolContext, path: Path, raw: str) -> bytes | None:
    """The current bytes of a file about to be replaced, or None when it does not exist yet."""
    try:
        return await ctx.backend.read_file(str(path))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise InvalidArguments(f"{raw} is a directory; give a file path") from None
    except NotADirectoryError:
        raise ExecutionFailed(
            f"cannot write {raw}: a part of its folder path is an existing file"
        ) from None
    except BackendError as error:
        raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
    except OSError:
        return None  # unreadable but maybe writable: the write reports the real problem


def encode_text(text: str, what: str) -> bytes:
    """UTF-8, with surrogate escapes turned back into the odd bytes they came from."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as error:
        raise InvalidArguments(
            f"{what} contains a character that cannot be written as UTF-8 ({error.reason} at "
            f"position {error.start}); send valid Unicode text"
        ) from None


def write_diff(old: bytes | None, content: str, name: str) -> tuple[str, int, int]:
    """What writing ``content`` over ``old`` changes (None: a new file, all of it added)."""
    if old is None:
        diff, added = creation_diff(content, name)
        return diff, added, 0
    return unified_diff(old.decode("utf-8", "surrogateescape"), content, name)


def check_approved(ctx: ToolContext, diff: str, name: str) -> None:
    """Refuse a change other than the diff the person approved (the file moved meanwhile)."""
    if ctx.approved_diff is not None and bounded_diff(clean(diff)) != ctx.approved_diff:
        raise ExecutionFailed(
            f"{name} changed after the approval was asked: the change would differ from the "
            "diff the user approved, so nothing was written. Read the file again and retry."
        )


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


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


@dataclass
class Page:
    text: str
    total_lines: int
    first: int
    last: int
    cut_chars: int
    next_offset: int | None


def check_readable_size(path: Path, raw: str) -> None:
    """Refuse what would never finish or fill memory: /dev/zero, a FIFO, a 50 GB dump.

    Only where the file system can be asked cheaply (locally); elsewhere the read just runs.
    """
    try:
        info = path.stat()
    except OSError:
        return  # the read itself reports missing files with the closest names
    if stat.S_ISDIR(info.st_mode):
        return
    if not stat.S_ISREG(info.st_mode):
        raise InvalidArguments(
            f"{raw} is not a regular file (a device, FIFO or socket); use run_shell to read "
            "a bounded amount of it, e.g. `head -c 4096`"
        )
    if info.st_size > MAX_READ_BYTES:
        raise InvalidArguments(
            f"{raw} is {human_size(info.st_size)}, above the {human_size(MAX_READ_BYTES)} "
            "read_file limit; use run_shell with `sed -n 'START,ENDp'`, `head` or `tail`, "
            "or grep_search to find the part you need"
        )


def page_text(data: bytes, offset: int, limit: int, budget: int, name: str) -> Page:
    """Numbered lines from ``offset``, stopping at ``limit`` lines or ``budget`` characters.

    Stopping at a whole line (never mid-line) keeps the next-page offset exact.
    """
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return Page(f"[{name} is empty: 0 lines]", 0, 0, 0, 0, None)
    if offset > total:
        raise InvalidArguments(
            f"offset {offset} is past the end of {name}, which has {plural(total, 'line')}; "
            f"use an offset from 1 to {total}"
        )
    end = min(total, offset - 1 + limit)
    shown: list[str] = []
    used = 0
    last = offset - 1
    cut_chars = 0
    for number in range(offset, end + 1):
        entry = _numbered(number, lines[number - 1])
        if cut_chars or (shown and used + len(entry) > budget):
            cut_chars += len(entry)
            continue
        shown.append(entry)
        used += len(entry)
        last = number
    next_offset = last + 1 if last < total else None
    if cut_chars:
        footer = (
            f"[lines {offset}-{last} of {total} shown: the {budget}-character output limit cut "
            f"the other {end - last} requested lines ({cut_chars} chars). "
            f"Next page: offset={next_offset}]"
        )
    elif next_offset is not None:
        footer = f"[lines {offset}-{last} of {total} shown. Next page: offset={next_offset}]"
    else:
        footer = f"[end of file: lines {offset}-{last} of {total}]"
    return Page("".join(shown) + footer, total, offset, last, cut_chars, next_offset)


def _numbered(number: int, line: str) -> str:
    line = line.removesuffix("\r")
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + f" … [line cut: {len(line) - MAX_LINE_CHARS} more chars]"
    return f"{number:6d}\t{line}\n"


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


def image_result(data: bytes, mime: str, name: str, details: dict[str, Any]) -> ToolResult:
    """An image the model can look at, unless it is too big to send."""
    if len(data) > MAX_IMAGE_BYTES:
        return ToolResult(
            f"{name} is an image ({mime}, {human_size(len(data))}), above the "
            f"{human_size(MAX_IMAGE_BYTES)} limit for returning images; it is not shown.",
            dict(details, image=True),
        )
    content: list[ContentPart] = [
        f"{name}: image ({mime}, {human_size(len(data))})",
        ImageContent(base64.b64encode(data).decode("ascii"), mime),
    ]
    return ToolResult(content, dict(details, image=True, mime_type=mime))


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


class EditFileParams(ToolParams):
    path: str = Field(
        description=(
            "File to edit; relative paths start at the workspace (on a tmux "
            "backend: where its shell stands)."
        )
    )
    old_string: str = Field(
        description="The exact text to replace, copied from the file with its indentation and "
        "line breaks (without read_file's line-number prefixes). It must occur exactly once "
        "unless replace_all is true."
    )
    new_string: str = Field(description="The text to put in its place (may be empty).")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of requiring exactly one."
    )


@dataclass
class Edit:
    text: str
    count: int
    first_line: int
    crlf: bool


def uses_crlf(text: str) -> bool:
    crlf = text.count("\r\n")
    return crlf > 0 and crlf >= text.count("\n") - crlf


def _with_endings(text: str, crlf: bool) -> str:
    lf = text.replace("\r\n", "\n")
    return lf.replace("\n", "\r\n") if crlf else lf


def apply_edit(text: str, params: EditFileParams, name: str) -> Edit:
    """The edited text, or an error that says how to make the edit match.

    The model writes ``\\n``; a CRLF file gets its own line endings back, so an edit never
    turns a Windows file into a mixed one.
    """
    if params.old_string == params.new_string:
        raise InvalidArguments(
            "old_string and new_string are identical; there is nothing to change"
        )
    if not params.old_string:
        raise InvalidArguments(
            "old_string is empty; to create a file or replace all of it, use write_file"
        )
    crlf = uses_crlf(text)
    candidates = [
        (_with_endings(params.old_string, crlf), _with_endings(params.new_string, crlf)),
        (params.old_string, params.new_string),
    ]
    found = next(((old, new) for old, new in candidates if old in text), None)
    if found is None:
        raise InvalidArguments(not_found_message(text, params.old_string, name))
    old, new = found
    count = text.count(old)
    first = text.find(old)
    if count > 1 and not params.replace_all:
        where = occurrence_lines(text, old, limit=10)
        raise InvalidArguments(
            f"old_string occurs {count} times in {name} (at lines {where}); include more "
            "surrounding lines so it matches exactly one place, or set replace_all to true to "
            "change all of them"
        )
    result = text.replace(old, new) if params.replace_all else text.replace(old, new, 1)
    if text.endswith("\n") and result and not result.endswith("\n"):
        result += "\r\n" if crlf else "\n"
    return Edit(result, count if params.replace_all else 1, text.count("\n", 0, first) + 1, crlf)


def occurrence_lines(text: str, needle: str, limit: int) -> str:
    lines: list[str] = []
    start = text.find(needle)
    while start != -1 and len(lines) < limit:
        lines.append(str(text.count("\n", 0, start) + 1))
        start = text.find(needle, start + 1)
    more = text.count(needle) - len(lines)
    return ", ".join(lines) + (f" and {more} more" if more > 0 else "")


def not_found_message(text: str, old: str, name: str) -> str:
    """Why an edit did not match, with the nearest thing that does when one is cheap to find."""
    message = (
        f"old_string was not found in {name}. It must match the file exactly, including "
        "whitespace, indentation (tabs vs spaces) and line breaks; read_file the region again "
        "and copy the text without the line-number prefixes."
    )
    file_lines = split_lines(text.replace("\r\n", "\n"))
    wanted = [line.strip() for line in split_lines(old.replace("\r\n", "\n"))]
    if not wanted or len(file_lines) > 200_000:
        return message
    stripped = [line.strip() for line in file_lines]
    start = _match_ignoring_whitespace(stripped, wanted)
    if start is not None:
        return (
            f"{message} Ignoring leading and trailing whitespace it matches at line {start + 1}: "
            f"{file_lines[start].rstrip()!r}; copy that region's exact indentation."
        )
    probe = next((line for line in wanted if line), "")
    close = difflib.get_close_matches(probe, stripped, n=1, cutoff=0.6) if probe else []
    if close:
        number = stripped.index(close[0]) + 1
        return f"{message} The closest line is line {number}: {file_lines[number - 1].rstrip()!r}."
    return message


def _match_ignoring_whitespace(stripped: list[str], wanted: list[str]) -> int | None:
    size = len(wanted)
    for index, line in enumerate(stripped):
        if line == wanted[0] and stripped[index : index + size] == wanted:
            return index
    return None


def edit_snippet(text: str, first_line: int, new_string: str) -> str:
    """The edited region with line numbers, so the model sees the result without a re-read."""
    lines = split_lines(text)
    span = max(1, len(split_lines(new_string.replace("\r\n", "\n"))))
    start = max(1, first_line - 2)
    end = min(len(lines), first_line + min(span, 12) + 1)
    return "".join(_numbered(number, lines[number - 1]) for number in range(start, end + 1))


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

"""What every file tool (and the search and notebook tools) does on the target.

Asking what is at a path, reading and writing bytes through ``ctx.backend`` with each failure
turned into an error the model can act on (the closest names for a typo, the tool to use for
a folder), and the small text rules they share: where a path is shown from, how lines are
numbered, what counts as binary.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import shlex
import stat
from pathlib import Path
from typing import Literal

from tui.diffs import bounded_diff, creation_diff, unified_diff
from tui.errors import ExecutionFailed, InvalidArguments, NotFound
from tui.exec.backend import BackendError, ExecutionBackend
from tui.exec.local import LocalBackend
from tui.safe_text import clean
from tui.tools.context import ToolContext

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".hg", ".svn"})
"""Folders that are never descended into: version-control internals and dependency trees."""
BINARY_SNIFF_BYTES = 8192
LIST_TIMEOUT = 60.0
"""Seconds a helper command on the target (what is at a path, a folder's names) may take."""


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


async def read_existing(
    ctx: ToolContext,
    path: Path,
    raw: str,
    *,
    wanted: str = "a file path",
    must_read: bool = False,
) -> bytes | None:
    """The current bytes of a file about to be replaced, or None when it does not exist yet.

    ``must_read``: a file that exists but cannot be read is an error rather than None, for
    a change that edits what is there (a notebook insert must never replace a notebook it
    could not read); otherwise the write that follows reports the real problem.
    """
    try:
        return await ctx.backend.read_file(str(path))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise InvalidArguments(f"{raw} is a directory; give {wanted}") from None
    except NotADirectoryError:
        raise ExecutionFailed(
            f"cannot write {raw}: a part of its folder path is an existing file"
        ) from None
    except BackendError as error:
        raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
    except PermissionError:
        if not must_read:
            return None
        raise ExecutionFailed(f"cannot read {raw}: permission denied by the file system") from None
    except OSError as error:
        if not must_read:
            return None
        raise ExecutionFailed(f"cannot read {raw}: {error.strerror or error}") from None


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

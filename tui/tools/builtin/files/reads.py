"""What ``read_file`` shows: a page of numbered lines, an image, or a refusal up front.

A page stops at whole lines within its character budget, so the next-page offset it names is
always exact; a device, FIFO or huge file is refused before anything is read.
"""

from __future__ import annotations

import base64
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.errors import InvalidArguments
from tui.image_info import image_info
from tui.tools.builtin.files.access import human_size, plural, split_lines
from tui.tools.result import ContentPart, ImageContent, ToolResult

MAX_LINE_CHARS = 2000
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_READ_BYTES = 256 * 1024 * 1024
"""Above this read_file refuses (locally) instead of loading the whole file to show a page."""
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


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
        entry = numbered_line(number, lines[number - 1])
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


def numbered_line(number: int, line: str) -> str:
    line = line.removesuffix("\r")
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + f" … [line cut: {len(line) - MAX_LINE_CHARS} more chars]"
    return f"{number:6d}\t{line}\n"


def image_result(data: bytes, mime: str, name: str, details: dict[str, Any]) -> ToolResult:
    """An image the model can look at, unless it is too big to send."""
    if len(data) > MAX_IMAGE_BYTES:
        return ToolResult(
            f"{name} is an image ({mime}, {human_size(len(data))}), above the "
            f"{human_size(MAX_IMAGE_BYTES)} limit for returning images; it is not shown.",
            dict(details, image=True),
        )
    info = image_info(data)
    pixels = f"{info.width}x{info.height} px, " if info and info.width and info.height else ""
    content: list[ContentPart] = [
        f"{name}: image ({mime}, {pixels}{human_size(len(data))})",
        ImageContent(base64.b64encode(data).decode("ascii"), mime),
    ]
    return ToolResult(content, dict(details, image=True, mime_type=mime))

"""What ``edit_file`` asks for and how it matches: exact text, once, line endings kept.

When the text does not match, the error says what does (the same lines with other
indentation, or the closest line), since a whitespace slip is the usual cause.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from pydantic import Field

from tui.errors import InvalidArguments
from tui.tools.base import ToolParams
from tui.tools.builtin.files.access import split_lines
from tui.tools.builtin.files.reads import numbered_line


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
    return "".join(numbered_line(number, lines[number - 1]) for number in range(start, end + 1))

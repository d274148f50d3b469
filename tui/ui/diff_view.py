"""A unified diff as Rich text: numbered, coloured by kind, highlighted by file type, folded.

Used by the approval modal (what will change) and the tool block (what changed). The diff
text comes from ``tui.diffs``; this only paints it. File content is attacker-written, so it
goes into ``Text`` as plain characters (never markup) with control characters shown as
symbols, and the lexer is chosen from the file name alone.
"""

from __future__ import annotations

import unicodedata
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text

from tui.diffs import FOLD_LINES, DiffLine, fold, fold_notice, number_width, parse

if TYPE_CHECKING:
    from rich.syntax import Syntax

ADD_STYLE = Style(color="green", bold=True)
REMOVE_STYLE = Style(color="red", bold=True)
ADD_BACKGROUND = Style(bgcolor="#103a10")
REMOVE_BACKGROUND = Style(bgcolor="#3f1212")
NUMBER_STYLE = Style(dim=True)
HUNK_STYLE = Style(dim=True, italic=True)

_CONTROL = {code: chr(0x2400 + code) for code in range(0x20)} | {0x7F: "\u2421"}
_CONTROL.pop(0x09)  # tabs stay tabs


def visible(text: str) -> str:
    """Control characters (an escape sequence planted in a file) as their Unicode symbols,
    and format characters (a bidi override that reorders the line) spelled out."""
    text = text.translate(_CONTROL)
    if text.isprintable():
        return text
    return "".join(
        char
        if char == "\t" or (char.isprintable() and unicodedata.category(char) != "Cf")
        else f"\\u{ord(char):04x}"
        for char in text
    )


def lexer_for(path: str) -> str:
    """A Pygments lexer name guessed from the file name; ``text`` when none fits."""
    name = PurePosixPath(path.split(" ", 1)[0]).name
    if not name:
        return "text"
    from rich.syntax import Syntax  # Pygments: ~12 ms, paid by the first diff, not the start

    try:
        return Syntax.guess_lexer(name, code="")
    except Exception:
        return "text"


def path_of(diff: str) -> str:
    """The file a diff names in its ``+++ b/`` header."""
    for line in diff.splitlines()[:3]:
        if line.startswith("+++ "):
            return line[4:].removeprefix("b/")
    return ""


def diff_text(
    diff: str, *, path: str | None = None, limit: int | None = FOLD_LINES, key: str = "o"
) -> Text:
    """The diff as one ``Text``: old and new line numbers, sign, highlighted content."""
    lines = parse(diff)
    folded = fold(lines, limit if limit is not None else len(lines) + 1)
    from rich.syntax import Syntax

    syntax = Syntax(
        "",
        lexer_for(path if path is not None else path_of(diff)),
        theme="monokai",
        background_color="default",
    )
    width = number_width(folded.lines)
    out = Text(no_wrap=False, end="")
    for index, line in enumerate(folded.lines):
        if index:
            out.append("\n")
        out.append_text(_line(line, width, syntax))
    if folded.hidden:
        out.append("\n")
        out.append(fold_notice(folded.hidden, key), Style(italic=True, bold=True))
    return out


def _line(line: DiffLine, width: int, syntax: Syntax) -> Text:
    if line.kind in ("hunk", "header", "note"):
        return Text(visible(line.text), HUNK_STYLE)
    old = str(line.old) if line.old is not None else ""
    new = str(line.new) if line.new is not None else ""
    text = Text()
    text.append(f"{old:>{width}} {new:>{width}} ", NUMBER_STYLE)
    code = syntax.highlight(visible(line.text))
    code.rstrip()
    if line.kind == "add":
        text.append("+", ADD_STYLE)
        code.stylize(ADD_BACKGROUND)
    elif line.kind == "remove":
        text.append("-", REMOVE_STYLE)
        code.stylize(REMOVE_BACKGROUND)
    else:
        text.append(" ")
    text.append_text(code)
    return text

"""A snapshot's screen as text rows, to say in a failed test what changed on screen.

A mismatched snapshot otherwise says only ``assert False``, and its report (an HTML page)
stays on the machine that ran it: CI's log then cannot tell a moved character from a race.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass

TEXT = re.compile(
    r'<text class="([^"]*)" x="([\d.]+)" y="[\d.]+" textLength="([\d.]+)" '
    r'clip-path="url\(#terminal-line-(\d+)\)">(.*?)</text>'
)
STYLE = re.compile(r"\.(terminal-r\d+) \{ ([^}]*) \}")
RUN_ID = re.compile(r"\bterminal-\d+-([\w-]+)")
"""The id a fresh screenshot carries in its names (``terminal-1234-r5``), gone once accepted."""
MOST_LINES = 40
"""Lines of difference shown at most: enough to see what moved, short enough for a CI log."""


@dataclass
class Screen:
    rows: list[str]
    styles: list[list[tuple[int, str]]]
    """Per row, where each run of text starts and its style (CSS, not the file's class names,
    which are numbered per file)."""


def screen(svg: str) -> Screen:
    """The characters and text styles of every row of a Textual SVG screenshot."""
    svg = RUN_ID.sub(r"terminal-\1", svg)
    css = dict(STYLE.findall(svg))
    cells: dict[int, dict[int, str]] = {}
    styles: dict[int, list[tuple[int, str]]] = {}
    for name, x, length, line, raw in TEXT.findall(svg):
        text = html.unescape(raw).replace("\xa0", " ")
        if not text:
            continue
        width = float(length) / len(text)
        column = round(float(x) / width)
        row = cells.setdefault(int(line), {})
        for offset, char in enumerate(text):
            row[column + offset] = char
        styles.setdefault(int(line), []).append((column, css.get(name, name)))
    height = max(cells, default=-1) + 1
    rows = []
    for number in range(height):
        row = cells.get(number, {})
        rows.append("".join(row.get(c, " ") for c in range(max(row, default=-1) + 1)).rstrip())
    return Screen(rows, [sorted(styles.get(n, [])) for n in range(height)])


def mismatch(expected_svg: str, actual_svg: str) -> str:
    """What differs between the accepted screen and this run's, in lines a log can hold."""
    expected, actual = screen(expected_svg), screen(actual_svg)
    if not expected.rows:
        return "no accepted snapshot to compare with"
    lines = list(
        difflib.unified_diff(expected.rows, actual.rows, "accepted", "this run", n=1, lineterm="")
    )
    if lines:
        return "the screen's text differs:\n" + "\n".join(lines[:MOST_LINES])
    restyled = [
        f"row {number} {actual.rows[number]!r}: now {sorted(set(mine) - set(theirs))[:3]}, "
        f"was {sorted(set(theirs) - set(mine))[:3]}"
        for number, (theirs, mine) in enumerate(zip(expected.styles, actual.styles, strict=False))
        if theirs != mine
    ]
    if restyled:
        return "same text, other styles:\n" + "\n".join(restyled[:MOST_LINES])
    return "same text and text styles: backgrounds or other markup differ"

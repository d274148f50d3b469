"""Globs as ripgrep and git read them, turned into regular expressions.

``glob_search`` matches its pattern with them, ``grep_search`` its ``glob`` filter, and the
Python search engine every ``.gitignore`` line, so all three agree on what a glob means:
``*`` and ``?`` stay within one folder, ``**`` spans folders, ``{a,b}`` alternates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.errors import InvalidArguments


def split_components(pattern: str) -> list[str]:
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
    components = split_components(pattern)
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


MAGIC_CHARS = re.compile(r"[*?\[{\\]")


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

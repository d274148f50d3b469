"""Shell words: the literal value of a word after quote removal, or how it was written when
an expansion decides it at run time. Rules read words, never raw nodes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tui.security.risk.source import Source

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass(frozen=True)
class Word:
    """One shell word: its literal value when it has one, and how it was written."""

    value: str | None
    """The word after quote removal; None when it depends on an expansion at run time."""
    raw: str
    """The source text."""
    approx: str
    """The value with run-time parts left as written: what a shell string would re-parse."""
    pattern: bool = False
    """Unquoted glob or brace characters: the shell may turn it into other words."""
    node: Node | None = None


def plain_word(value: str) -> Word:
    return Word(value=value, raw=value, approx=value)


_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
_GLOB = re.compile(r"[*?\[{]")
_ANSI_C = re.compile(
    r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL
)
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}


def unescape_word(text: str) -> str:
    """Backslash removal in an unquoted word; a backslash-newline joins lines."""
    return _ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_dq(text: str) -> str:
    return _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _decode_ansi_c(body: str) -> str:
    """``$'\\x72m'`` is ``rm``: decoded here so that the disguise does not work."""

    def one(match: re.Match[str]) -> str:
        esc = match.group(1)
        head = esc[0]
        if head in "xuU" and len(esc) > 1:
            return chr(min(int(esc[1:], 16), 0x10FFFF))
        if head.isdigit() and head in "01234567":
            return chr(int(esc, 8))
        if head == "c" and len(esc) == 2:
            return chr(ord(esc[1]) & 0x1F)
        return _ANSI_SIMPLE.get(esc, esc)

    return _ANSI_C.sub(one, body)


_UNQUOTED_NESTED = frozenset({"concatenation", "command_name"})


def literal_value(src: Source, node: Node) -> str | None:
    """The word's value after quote removal, or None when an expansion decides it."""
    kind = node.type
    if kind == "word":
        return unescape_word(src.of(node))
    if kind == "number":
        return src.of(node)
    if kind == "raw_string":
        return src.of(node)[1:-1]
    if kind == "ansi_c_string":
        return _decode_ansi_c(src.of(node)[2:-1])
    if kind in ("string", "translated_string"):
        parts = []
        for child in node.named_children:
            if child.type != "string_content":
                return None
            parts.append(_unescape_dq(src.of(child)))
        return "".join(parts)
    if kind in _UNQUOTED_NESTED:
        values = [literal_value(src, child) for child in node.named_children]
        if any(v is None for v in values):
            return None
        return "".join(v for v in values if v is not None)
    return None


def _approx(src: Source, node: Node) -> str:
    """Like ``literal_value`` but keeps expansions as written, for re-parsing as shell code."""
    value = literal_value(src, node)
    if value is not None:
        return value
    kind = node.type
    if kind in ("string", "translated_string"):
        raw = src.of(node)
        inner = raw[2:-1] if kind == "translated_string" else raw[1:-1]
        return _unescape_dq(inner)
    if kind in _UNQUOTED_NESTED:
        return "".join(_approx(src, child) for child in node.named_children)
    return src.of(node)


def _is_pattern(src: Source, node: Node) -> bool:
    """Unquoted ``* ? [ {`` in a word: globbing or brace expansion may change it entirely."""
    if node.type == "word":
        return bool(_GLOB.search(_ESCAPE.sub("", src.of(node))))
    if node.type in _UNQUOTED_NESTED:
        return any(_is_pattern(src, child) for child in node.named_children)
    return False


def make_word(src: Source, node: Node) -> Word:
    return Word(
        value=literal_value(src, node),
        raw=src.of(node),
        approx=_approx(src, node),
        pattern=_is_pattern(src, node),
        node=node,
    )


def _join_words(first: Word, second: Word, raw: str) -> Word:
    value = None if first.value is None or second.value is None else first.value + second.value
    return Word(
        value=value,
        raw=raw,
        approx=first.approx + second.approx,
        pattern=first.pattern or second.pattern,
        node=first.node,
    )


def command_words(src: Source, nodes: Iterable[Node]) -> list[Word]:
    """Words of a command, re-joining ``r\\<newline>m``, which tree-sitter splits but bash joins."""
    words: list[Word] = []
    last_end = -1
    first_start = -1
    for node in nodes:
        word = make_word(src, node)
        gap = src.data[last_end : node.start_byte] if words else b""
        if words and gap and not gap.replace(b"\\\n", b""):
            words[-1] = _join_words(words[-1], word, src.slice(first_start, node.end_byte))
        else:
            words.append(word)
            first_start = node.start_byte
        last_end = node.end_byte
    return words

"""The command text as tree-sitter sees it, and the one parser of the process."""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

_PARSER: Parser | None = None
_BUILDING = threading.Lock()
"""Built once even when ``warm`` builds it in a thread while a command arrives."""


def parser() -> Parser:
    """One parser for the process: building the language is the slow part, parsing is cheap."""
    global _PARSER
    if _PARSER is None:
        with _BUILDING:
            if _PARSER is None:
                import tree_sitter
                import tree_sitter_bash

                _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


class Source:
    """The command as bytes for tree-sitter, mapped back to exact ``str`` slices.

    Every non-ASCII character reaches the parser as ``x``. tree-sitter-bash's scanner passes
    the current character to ``isalpha``/``isdigit``, which index a 256-entry table: a code
    point above 255 reads out of bounds and crashed the process under fuzzing. ``x`` is what
    bash makes of such characters anyway (word characters: bash splits words only on
    space, tab and newline), and with one byte per character the parser's byte offsets are
    the ``str`` indices, so segment texts are still exact substrings of the original.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = (text if text.isascii() else _NON_ASCII.sub("x", text)).encode("ascii")

    def slice(self, start: int, end: int) -> str:
        return self.text[start:end]

    def of(self, node: Node) -> str:
        return self.slice(node.start_byte, node.end_byte)


_NON_ASCII = re.compile("[^\x00-\x7f]")


def shorten(text: str, limit: int = 60) -> str:
    """Source text quoted in a reason, cut so that one reason stays one line."""
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"

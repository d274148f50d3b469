"""What a parse with errors still tells: where the error is, the regions tree-sitter had to
invent (a MISSING ``fi``), and dangerous names inside what it could not read."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tui.security.risk.program_names import KEY_RISK, program_key
from tui.security.risk.source import Source
from tui.security.risk.verdict import SegmentRisk
from tui.security.risk.words import unescape_word

if TYPE_CHECKING:
    from tree_sitter import Node


def describe_error(src: Source, root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing:
            return f"missing {node.type!r}"
        if node.is_error:
            row, col = node.start_point
            snippet = src.of(node)[:40]
            return f"syntax error at line {row + 1}, column {col + 1} near {snippet!r}"
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return "syntax error"


def dangerous_word(src: Source, node: Node) -> str | None:
    """A high-risk program name anywhere in an unparsable region: assume it runs."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "word":
            for part in re.split(r"[\s,{}();|&]+", unescape_word(src.of(current))):
                if KEY_RISK.get(program_key(part)) == "high":
                    return program_key(part)
        stack.extend(current.named_children)
    return None


def missing_segments(src: Source, root: Node) -> list[SegmentRisk]:
    """tree-sitter's MISSING nodes (an absent ``fi`` or quote) are errors with no region."""
    segments: list[SegmentRisk] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing:
            parent = node.parent or root
            reason = f"syntax error: missing {node.type!r}"
            text = src.of(parent)
            segments.append(SegmentRisk(text, "medium", (reason,), False, None))
        elif node.has_error:
            stack.extend(node.children)
    return segments

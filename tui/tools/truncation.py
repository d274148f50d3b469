"""Bounding what the model reads, and saying exactly how much it did not.

The model gets a head (shell, files, fetches: the start matters) or a tail (pane captures:
the latest screen matters). A head cut also keeps a short tail, because a command's verdict
is usually on its last lines. Whatever is cut, the whole text is saved to a file whose path
goes into the marker, so the model can page through it with ``read_file``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tui.locations import tool_output_dir


@dataclass(frozen=True)
class TruncationRule:
    mode: Literal["head", "tail", "none"]
    limit: int = 0
    """Characters kept from the start (head) or the end (tail)."""
    keep_tail: int = 0
    """For head mode: characters also kept from the very end."""

    @classmethod
    def head(cls, limit: int, *, keep_tail: int = 0) -> TruncationRule:
        return cls("head", limit, keep_tail)

    @classmethod
    def tail(cls, limit: int) -> TruncationRule:
        return cls("tail", limit)

    @classmethod
    def none(cls) -> TruncationRule:
        return cls("none")


@dataclass(frozen=True)
class Truncated:
    text: str
    cut_chars: int
    full_output_path: str | None = None


def safe_cut(text: str, index: int) -> int:
    """Move a cut point off a surrogate pair or a CR LF, so no half character is left."""
    if 0 < index < len(text) and "\udc00" <= text[index] <= "\udfff":
        index -= 1
    if 0 < index < len(text) and text[index - 1] == "\r" and text[index] == "\n":
        index -= 1
    return index


def truncate(text: str, rule: TruncationRule, *, spill_name: str | None = None) -> Truncated:
    """Apply ``rule``; when anything is cut and ``spill_name`` is given, save the whole text."""
    if rule.mode == "none" or len(text) <= rule.limit + rule.keep_tail:
        return Truncated(text, 0)
    path = save_full_output(spill_name, text) if spill_name else None
    where = f"; full output ({len(text)} chars) saved to {path}" if path else ""
    if rule.mode == "tail":
        start = safe_cut(text, len(text) - rule.limit)
        cut = start
        return Truncated(f"[truncated {cut} chars from start{where}]\n{text[start:]}", cut, path)
    head_end = safe_cut(text, rule.limit)
    tail_start = safe_cut(text, len(text) - rule.keep_tail) if rule.keep_tail else len(text)
    cut = tail_start - head_end
    place = "from the middle" if rule.keep_tail else "from end"
    marker = f"\n[truncated {cut} chars {place}{where}]\n"
    return Truncated(text[:head_end] + marker + text[tail_start:], cut, path)


def save_full_output(name: str, text: str) -> str | None:
    """Keep an untruncated result where the model's read tools can reach it.

    A new file every time (a token beside the name: ids repeat across runs and servers), and
    all of it or nothing: a disk that refuses part of it leaves no file that looks whole.
    """
    directory = tool_output_dir()
    path = Path(directory, f"{spill_file_name(name)}-{secrets.token_hex(4)}.txt")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8", errors="surrogateescape") as file:
            file.write(text)
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return str(path)


def spill_file_name(name: str) -> str:
    """``name`` made safe as a file name in the tool output folder."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:120] or "output"


def envelope(result: object, *, now_ms: int | None = None) -> str:
    """The JSON text a tool result reaches the model in."""
    stamp = now_ms if now_ms is not None else int(time.time() * 1000)
    return json.dumps(
        {"harness_timestamp": {"source": "harness", "unix_millis": stamp}, "result": result},
        ensure_ascii=False,
    )

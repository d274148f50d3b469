"""``@path`` in a prompt: the file is read through the policy and appended to the message.

As in the peers, the message keeps the ``@path`` text and gains the file in a fenced block
named by its path. The session reads it (``AgentSession.read_mentioned``) through the same
guard as the agent's read tool (a secret, a NUL byte or, in workspace-only mode, a path outside
the workspace is refused) and on its backend, so an SSH or container workspace reads its own
file. What is attached is bounded per file and in total, with a note saying what was cut;
whatever is not attached is said in the chat with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from tui.errors import AgentTuiError

PER_FILE = 64 * 1024
TOTAL = 256 * 1024
_MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s@`]+)")

MentionReader = Callable[[str], Awaitable[bytes]]
"""Reads the file an ``@path`` names, or raises: ``AgentTuiError`` (refused, or the target
failed), ``FileNotFoundError``/``NotADirectoryError`` (no such file), ``IsADirectoryError``
(not a regular file), another ``OSError`` (unreadable)."""


@dataclass
class Attached:
    """The message to send, and what the person should be told about the mentions."""

    text: str
    notes: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def mentioned(text: str) -> list[str]:
    """Each distinct ``@path`` in order; trailing punctuation of a sentence is not part of it."""
    found = [m.group(1).rstrip(".,;:!?)") for m in _MENTION.finditer(text)]
    return list(dict.fromkeys(name for name in found if name))


def _fence(body: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


async def attach_mentions(text: str, read: MentionReader) -> Attached:
    """``text`` with each readable ``@path`` appended (bounded), and notes on the rest."""
    result = Attached(text)
    budget = TOTAL
    blocks: list[str] = []
    for raw in mentioned(text):
        if budget <= 0:
            result.notes.append(f"@{raw} not attached: the {TOTAL // 1024} KB total is used up")
            continue
        try:
            data = await read(raw)
        except AgentTuiError as error:
            result.notes.append(f"@{raw} not attached: {error.msg}")
            continue
        except (FileNotFoundError, NotADirectoryError):
            if not _looks_like_path(raw):
                continue  # "@alice" in prose is no file mention
            result.notes.append(f"@{raw} not attached: no such file")
            continue
        except IsADirectoryError:
            result.notes.append(f"@{raw} not attached: not a regular file")
            continue
        except OSError as error:
            result.notes.append(f"@{raw} not attached: {error}")
            continue
        if b"\0" in data[:8192]:
            result.notes.append(f"@{raw} not attached: binary file")
            continue
        limit = min(PER_FILE, budget)
        body = data[:limit].decode("utf-8", errors="replace")
        cut = ""
        if len(data) > limit:
            cut = f"\n[cut: first {limit} of {len(data)} bytes attached]"
            result.notes.append(f"@{raw} attached in part: first {limit} of {len(data)} bytes")
        budget -= min(len(data), limit)
        fence = _fence(body)
        blocks.append(f"{fence}{raw}\n{body.rstrip(chr(10))}\n{fence}{cut}")
        result.paths.append(raw)
    if blocks:
        result.text = text + "\n\n" + "\n\n".join(blocks)
    return result


def _looks_like_path(raw: str) -> bool:
    return "/" in raw or "." in Path(raw).name

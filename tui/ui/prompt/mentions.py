"""``@path`` in a prompt: the file is read through the policy and appended to the message.

As in the peers, the message keeps the ``@path`` text and gains the file in a fenced block
named by its path. The read goes through the same guard as the agent's read tool (a secret, a
NUL byte or, in workspace-only mode, a path outside the workspace is refused) and through the
session's backend, so an SSH or container workspace reads its own file. What is attached is
bounded per file and in total, with a note saying what was cut; whatever is not attached is
said in the chat with the reason.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tui.errors import AgentTuiError
from tui.exec.backend import BackendError, ExecutionBackend
from tui.security.paths import PathGuard

PER_FILE = 64 * 1024
TOTAL = 256 * 1024
_MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s@`]+)")


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


async def _read(backend: ExecutionBackend, guard: PathGuard, raw: str) -> bytes:
    path = guard.resolve(raw)  # raises PermissionDenied for a secret
    if guard.local:
        info = path.stat()  # FileNotFoundError when missing
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(raw)
    return await backend.read_file(str(path))


async def attach_mentions(text: str, backend: ExecutionBackend, guard: PathGuard) -> Attached:
    """``text`` with each readable ``@path`` appended (bounded), and notes on the rest."""
    result = Attached(text)
    budget = TOTAL
    blocks: list[str] = []
    for raw in mentioned(text):
        if budget <= 0:
            result.notes.append(f"@{raw} not attached: the {TOTAL // 1024} KB total is used up")
            continue
        try:
            data = await _read(backend, guard, raw)
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
        except (PermissionError, BackendError, OSError) as error:
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

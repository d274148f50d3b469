"""``@path`` in a prompt: the file is read through the policy and appended to the message.

As in the peers, the message keeps the ``@path`` text and gains the file in a fenced block
named by its path. The session reads it (``SessionAPI.read_mentioned``) through the same
guard as the agent's read tool (a secret, a NUL byte or, in workspace-only mode, a path outside
the workspace is refused) and on its backend, so an SSH or container workspace reads its own
file. What is attached is bounded per file and in total, with a note saying what was cut;
whatever is not attached is said in the chat with the reason.

An image — ``@shot.png``, or the path of one pasted or dropped into the prompt (quoted, with
escaped spaces, or a ``file://`` URL) — is attached as an image, which every wire format sends
in its own image part; the message gains a line naming it with its size
(``[image #1: shot.png, 1280x720 px, 245 KB]``), which is what the chat shows of it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from tui.errors import AgentTuiError
from tui.image_info import IMAGE_SUFFIXES, image_info
from tui.views import ImageAttachment

PER_FILE = 64 * 1024
TOTAL = 256 * 1024
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Per image: the smallest of the three APIs' limits (Anthropic's 5 MB)."""
MAX_IMAGES = 10
_MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s@`]+)")
_SUFFIX = "|".join(s.lstrip(".") for s in IMAGE_SUFFIXES)
_PASTED = re.compile(
    (
        r"(?:(?<=\s)|^)(?:'(?P<single>[^'\n]+\.(?:SUF))'|\"(?P<double>[^\"\n]+\.(?:SUF))\""
        r"|(?P<bare>(?:file://|~/|/|\./|\.\./)(?:\\ |[^\s'\"])+\.(?:SUF)))"
        r"(?=[\s,;:!?)]|\.(?:\s|$)|$)"
    ).replace("SUF", _SUFFIX),
    re.IGNORECASE,
)

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
    images: list[ImageAttachment] = field(default_factory=list)


def mentioned(text: str) -> list[str]:
    """Each distinct ``@path`` in order; trailing punctuation of a sentence is not part of it."""
    found = [m.group(1).rstrip(".,;:!?)") for m in _MENTION.finditer(text)]
    return list(dict.fromkeys(name for name in found if name))


def pasted_images(text: str) -> list[str]:
    """Paths of images pasted or dropped into ``text`` (not ``@`` mentions), as files."""
    from urllib.parse import unquote, urlsplit

    found = []
    for match in _PASTED.finditer(text):
        raw = match.group("single") or match.group("double") or match.group("bare") or ""
        if raw.startswith("file://"):
            raw = unquote(urlsplit(raw).path)
        found.append(raw.replace("\\ ", " "))
    return list(dict.fromkeys(found))


def _fence(body: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


async def attach_mentions(text: str, read: MentionReader) -> Attached:
    """``text`` with each readable ``@path`` appended (bounded), and notes on the rest."""
    result = Attached(text)
    budget = TOTAL
    blocks: list[str] = []
    for raw in pasted_images(text):
        try:
            data = await read(raw)
        except (AgentTuiError, OSError) as error:
            reason = error.msg if isinstance(error, AgentTuiError) else "no such file"
            result.notes.append(f"{raw} not attached: {reason}")
            continue
        _attach_image(result, raw, data)
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
        if raw.lower().endswith(IMAGE_SUFFIXES) and image_info(data) is not None:
            _attach_image(result, raw, data)
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
        result.text = result.text + "\n\n" + "\n\n".join(blocks)
    return result


def _attach_image(result: Attached, raw: str, data: bytes) -> None:
    """One image, with its placeholder line in the message (or a note saying why not)."""
    info = image_info(data)
    name = Path(raw).name
    if info is None:
        result.notes.append(f"{raw} not attached: not a PNG, JPEG, GIF or WebP image")
        return
    if len(data) > MAX_IMAGE_BYTES:
        result.notes.append(
            f"{raw} not attached: {info.describe(len(data))}, above the "
            f"{MAX_IMAGE_BYTES // (1024 * 1024)} MB an image may be"
        )
        return
    if len(result.images) >= MAX_IMAGES:
        result.notes.append(f"{raw} not attached: at most {MAX_IMAGES} images a message")
        return
    result.images.append(ImageAttachment(name, info.mime_type, data))
    result.paths.append(raw)
    number = len(result.images)
    result.text += f"\n[image #{number}: {name}, {info.describe(len(data))}]"


def _looks_like_path(raw: str) -> bool:
    return "/" in raw or "." in Path(raw).name

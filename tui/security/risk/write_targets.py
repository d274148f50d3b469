"""Where a write lands: a system path or a block device is high, a plain file medium,
``/dev/null`` nothing."""

from __future__ import annotations

import re

from tui.security.risk.source import shorten
from tui.security.risk.tables.paths import (
    BLOCK_DEVICE,
    HARMLESS_PREFIXES,
    HARMLESS_TARGETS,
    NETWORK_DEVICE,
    SECRET_DIRS,
    STARTUP_FILES,
    SYSTEM_PREFIXES,
)
from tui.security.risk.verdict import Verdict
from tui.security.risk.words import Word


def normalise_path(path: str) -> str:
    path = re.sub(r"/+", "/", path)
    path = re.sub(r"(^|/)\./", r"\1", path)
    return path.rstrip("/") or ("/" if path.startswith("/") else path)


def system_path(path: str) -> str | None:
    """Why writing to ``path`` endangers the machine or the user's account, if it does."""
    norm = normalise_path(path)
    if norm in HARMLESS_TARGETS or norm.startswith(HARMLESS_PREFIXES):
        return None
    if BLOCK_DEVICE.match(norm):
        return "a block device"
    if norm == "/":
        return "the root directory"
    for prefix in SYSTEM_PREFIXES:
        if norm == prefix or norm.startswith(prefix + "/"):
            return "a system path"
    home_like = norm.startswith(("~", "$HOME", "${HOME}", "/home/", "/Users/", "/root"))
    name = norm.rsplit("/", 1)[-1]
    if home_like and (name in STARTUP_FILES or name in (".ssh", ".gnupg", ".aws")):
        return "a shell startup or credentials file"
    if any(d in norm + "/" for d in SECRET_DIRS):
        return "a credentials or autostart directory"
    return None


def harmless_target(path: str) -> bool:
    norm = normalise_path(path)
    return norm in HARMLESS_TARGETS or norm.startswith(HARMLESS_PREFIXES)


def judge_write_target(
    verdict: Verdict, word: Word, verb: str, *, redirect: bool, replaces: bool = False
) -> None:
    """Writing into a system path is high; into anything else medium; to /dev/null nothing.

    ``redirect`` says the write is the segment's only sign of acting, so it needs a reason of
    its own. ``replaces`` is for commands that swap the path itself (mv, ln, install, rsync)
    rather than write through it: ``mv x /dev/null`` as root replaces the device node.
    """
    path = word.value if word.value is not None else word.approx
    if word.value is not None and harmless_target(path):
        if replaces:
            verdict.flag("high", f"{verb} {path}, replacing a device node")
        return
    what = system_path(path)
    if NETWORK_DEVICE.match(normalise_path(path)):
        verdict.flag("high", f"{verb} {path}, a network connection (a classic reverse shell)")
    elif what == "a block device":
        verdict.flag("high", f"{verb} the block device {path} (can destroy a disk)")
    elif what is not None:
        verdict.flag("high", f"{verb} {path}, {what}")
    elif word.value is None:
        verdict.flag("medium", f"{verb} a file named at run time ({shorten(word.raw)})")
    elif redirect:
        verdict.flag("medium", f"{verb} {path}")
    else:
        verdict.read_only = False


# -- wrappers --------------------------------------------------------------------------------

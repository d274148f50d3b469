"""Files read into the model's prompt (AGENTS.md, CLAUDE.md, a skill's SKILL.md) go through
the same secret screen as the file tools, and a little more.

They are read before any question is asked — the system prompt is built when the session
starts — and everything in them is sent to the provider. A cloned repository's ``AGENTS.md``
that is a symlink to ``~/.ssh/id_rsa`` or to ``/proc/self/environ`` (the agent's own
environment) would hand the key over as "instructions". So such a file is read only when it
is a regular file, outside ``/proc``, ``/sys`` and ``/dev``, and no secret by the path guard
(lexically, after following links, or as a hard link to one); otherwise it is refused with a
sentence saying why, which the session shows.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tui.security.paths import PathGuard
from tui.security.secrets import SECRET_PATHS

SYSTEM_TREES = ("/proc", "/sys", "/dev")
"""Kernel and device files: never instructions, often secrets (a process's environment)."""


def default_guard(workspace: Path) -> PathGuard:
    """The built-in secret places, for callers without the session's configured guard."""
    return PathGuard(workspace=workspace, forbidden=list(SECRET_PATHS))


def prompt_file_refusal(path: Path, guard: PathGuard) -> str | None:
    """Why ``path`` must not be read into a prompt, or None when it may."""
    lexical = os.path.normpath(os.path.abspath(path))
    real = os.path.realpath(lexical)
    for tree in SYSTEM_TREES:
        if real == tree or real.startswith(tree + "/"):
            return f"{path} resolves to {real}, inside {tree}; it is not read into the prompt"
    reason = guard.secret_reason(lexical, real)
    if reason is not None:
        return f"{reason}; it is not read into the prompt"
    try:
        mode = os.stat(real).st_mode
    except OSError as error:
        return f"{path} cannot be read ({error.strerror or error})"
    if not stat.S_ISREG(mode):
        return f"{path} is not a regular file; it is not read into the prompt"
    return None


def read_prompt_file(path: Path, guard: PathGuard, limit: int) -> tuple[str | None, str | None]:
    """``(text, None)`` with at most ``limit`` characters of the file, or ``(None, why)``."""
    refusal = prompt_file_refusal(path, guard)
    if refusal is not None:
        return None, refusal
    try:
        with open(os.path.realpath(path), "rb") as handle:
            data = handle.read(limit * 4 + 4)
    except OSError as error:
        return None, f"{path} cannot be read ({error.strerror or error})"
    return data.decode("utf-8", errors="replace"), None

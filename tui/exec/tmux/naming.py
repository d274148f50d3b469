"""Names of the agent's own tmux sessions: one per app instance or headless run.

A person finds the agent's shell in ``tmux ls`` by its workspace, and two instances in the
same workspace must not meet in one shell, so a name is the workspace's folder name plus a
short random instance id: ``atui-myproject-3f2a``. tmux turns ``.`` and ``:`` in session
names into ``_`` (they separate windows and panes in a target) and ``#`` would be expanded as
a format, so only ``[A-Za-z0-9_-]`` is kept.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Collection
from pathlib import PurePath

from tui.exec.tmux.sessions import PREFIX

STEM_LIMIT = 40
"""Characters of the workspace name kept: the whole name stays short enough to read."""


def instance_id() -> str:
    """Four hex digits: enough to tell a few instances of one workspace apart."""
    return secrets.token_hex(2)


def workspace_stem(workspace: str | PurePath) -> str:
    """``/home/me/My.Project`` → ``My-Project``; ``/`` → ``root``."""
    name = PurePath(workspace).name
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:STEM_LIMIT].strip("-")
    return stem or "root"


def session_name(workspace: str | PurePath, instance: str) -> str:
    """``atui-<workspace>-<instance>``, tmux-safe."""
    return f"{PREFIX}{workspace_stem(workspace)}-{instance}"


def fresh_session_name(workspace: str | PurePath, taken: Collection[str]) -> str:
    """A name for a new instance's session that no session on the server has yet."""
    while True:
        name = session_name(workspace, instance_id())
        if name not in taken:
            return name

"""``[tmux]`` and ``[ssh]``: where the agent's commands run."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator

from tui.config.sections import SECTION

_PORT = re.compile(r"(?:^\[[^\]]*\]|^[^:\[\]]*):([^:]*)$")
"""The port of ``user@host:PORT`` or ``[v6]:PORT`` (a bare IPv6 address has no port)."""


class TmuxSettings(BaseModel):
    """The tmux server the agent's long-running commands live in."""

    model_config = SECTION

    socket_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")
    """The base of agent-tui's tmux sockets (``tmux -L``; unset: ``agent-tui``): each instance
    runs its own server on ``<base>-<id>``, and a fixed ``session`` lives on the base one."""
    session: str | None = Field(default=None, pattern=r"[A-Za-z0-9_-]")
    """A fixed session name, shared by every instance that uses it; unset gives each app
    instance and headless run its own session, named after the workspace (``atui-NAME-ID``)."""
    keep_session: bool = False
    """Keep the instance's session after quitting (as ``/pane keep`` does); the next start in
    the same workspace re-attaches it."""
    max_sessions: int = Field(default=8, ge=1)
    """Sessions the agent may keep open at once, its shared one included (Buddy's default: 1)."""
    max_panes: int = Field(default=16, ge=1)
    """Panes the agent may keep open at once, across its sessions (Buddy's default: 5, counted
    per session)."""
    allow_user_pane_capture: bool = False
    """Let ``tmux_capture_pane user_pane=true`` read your own tmux pane (``$TMUX_PANE``) when
    agent-tui runs inside tmux. Only your own config can set it, never a workspace's."""
    history_limit: int = Field(default=50000, ge=0, le=2**31 - 1)
    """Scroll-back lines kept per pane."""


class SshSettings(BaseModel):
    """The remote host commands run on when the SSH backend is chosen."""

    model_config = SECTION

    host: str | None = None
    """``user@host[:port]`` or an alias from ~/.ssh/config."""

    @field_validator("host")
    @classmethod
    def _usable_host(cls, value: str | None) -> str | None:
        """Caught here, at its line, rather than when the connection is made."""
        if value is None:
            return None
        text = value.strip().removeprefix("ssh://").rstrip("/")
        if not text or any(char.isspace() for char in text) or text.endswith("@"):
            raise ValueError("expected user@host[:port] or an ssh config alias")
        found = _PORT.search(text.rsplit("@", 1)[-1])
        if found and not (found.group(1).isdigit() and 0 < int(found.group(1)) < 65536):
            raise ValueError(f"the port must be a number from 1 to 65535 (got {found.group(1)!r})")
        return value

    identity_file: str | None = None
    """A private key file; unset uses the agent and ssh config."""
    known_hosts: str | None = None
    """A known_hosts file; unset uses ~/.ssh/known_hosts."""
    connect_timeout: float = Field(default=10, gt=0)
    """Seconds to wait for the connection."""

"""What the UI's screens show of the deeper rooms' records, defined below all of them.

The UI may import only the session, the events, the bus and the ground floor, yet its screens
list saved sessions, standing grants and a workspace's held settings. Those records are made
in the agent, in security and in config; the shapes the screens read live here, so both sides
depend on this floor and neither on the other. A plain record moves here whole; a record
that carries its room's own types (a grant's parsed rule, a trust review) stays home and is
described here by a read-only protocol it already satisfies.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# -- saved sessions (``/sessions``) --------------------------------------------------------


@dataclass(frozen=True)
class SessionInfo:
    """What ``agent-tui sessions`` shows, read without parsing every record."""

    id: str
    workspace: str
    created: dt.datetime
    updated: dt.datetime
    """The file's modification time: the last thing recorded."""
    preview: str
    """The first user message, on one line, shortened."""
    message_count: int
    path: Path
    provider: str = ""
    model: str = ""


# -- standing grants (``/grants``) ---------------------------------------------------------


class GrantView(Protocol):
    """One "allow always" grant as the grants screen lists it."""

    @property
    def rule(self) -> object:
        """The allow rule; ``str()`` of it reads as the person would write it."""

    @property
    def scope(self) -> str:
        """``session`` or ``saved``."""

    @property
    def workspace(self) -> str:
        """Canonical workspace path, or ``*`` for every workspace."""

    @property
    def created(self) -> float:
        """Unix seconds when it was granted (0: unknown)."""

    @property
    def hosts(self) -> str | None:
        """The fleet hosts or groups it holds on (None: everywhere)."""


class GrantList(Protocol):
    """The grants in force in this workspace, and the one way to take one back."""

    def list(self) -> Sequence[GrantView]:
        """Grants in force here, session ones first."""

    def revoke(self, rule_text: str) -> bool:
        """Remove every grant here whose rule reads ``rule_text``; True when one was."""


# -- workspace trust (the trust screen) ----------------------------------------------------


class HeldChangeView(Protocol):
    """One thing a workspace file would change that waits for trust (or is never taken)."""

    @property
    def key(self) -> str:
        """The dotted setting, or ``.mcp.json servers.NAME``."""

    @property
    def effect(self) -> str:
        """What it would do, in words a person can check against the file."""

    @property
    def why(self) -> str:
        """``loosens``, ``runs``, ``sends`` or ``never``."""

    @property
    def source(self) -> str:
        """The file (and line) it comes from."""

    @property
    def details(self) -> Sequence[str]:
        """The whole of what it runs or sends, one item a line (a server's command, each
        argument, its environment), as the file writes it."""


class TrustView(Protocol):
    """Where a workspace stands: its files and what trusting them would change."""

    @property
    def key(self) -> str:
        """The workspace's real path, as trust records name it."""

    @property
    def files(self) -> Sequence[Path]:
        """Its files that can change settings."""

    @property
    def held(self) -> Sequence[HeldChangeView]:
        """Changes that wait for trust."""

    @property
    def refused(self) -> Sequence[HeldChangeView]:
        """Keys a workspace file may never set: dropped whether trusted or not."""


# -- the person's and the workspace's own slash commands (``/NAME``) ---------------------


@dataclass(frozen=True)
class UserCommand:
    """A slash command from a Markdown file (``.claude/commands/review.md`` is ``/review``) or
    a skill called by name; what it sends is built by ``AgentSession.expand_command``."""

    name: str
    description: str
    path: Path
    """The command's file, or the skill's SKILL.md."""
    source: str
    """``workspace`` or ``user``."""
    kind: str = "command"
    """``command`` or ``skill``."""
    argument_hint: str = ""
    """What its arguments are, from the front matter (``[pr-number]``)."""


# -- images a message attaches (``@shot.png``, a pasted path) ----------------------------


@dataclass(frozen=True)
class ImageAttachment:
    """An image sent with the person's message, in every wire format's own image part."""

    name: str
    mime_type: str
    data: bytes

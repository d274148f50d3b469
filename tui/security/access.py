"""What one tool call would touch: the only thing the security policy reads of a tool call.

It lives here, below the tools, so the policy judges calls without knowing any tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.security.permissions import PermissionMode


@dataclass
class ToolAccess:
    """What one call would touch, as the security policy needs to judge it.

    Tools compute it from their parsed parameters; the policy never reads tool params itself.
    """

    permission: PermissionMode
    """The least permission this particular call needs."""
    command: str | None = None
    """A shell command the call runs, judged by the risk parser segment by segment."""
    read_paths: list[str] = field(default_factory=list)
    write_paths: list[str] = field(default_factory=list)
    subject: str | None = None
    """What ``tool(pattern)`` rules match against when there is no command (a path, a URL)."""
    claimed_risk: str | None = None
    """The model's own risk label: shown to the person, never lowers the computed risk."""
    why: str | None = None
    acting: bool | None = None
    """Counts towards the acting-calls rate limit; defaults to permission > read-only."""
    outside: bool = False
    """The call asks to run its command outside the sandbox: a person is always asked."""
    hosts: str | None = None
    """A fleet's host pattern the call fans out to (judged per host, asked once)."""
    host: str | None = None
    """The one fleet host the call acts on (judged by that host's rules); None: the
    session's default target."""

    @property
    def is_acting(self) -> bool:
        if self.acting is not None:
            return self.acting
        return self.permission > PermissionMode.READ_ONLY

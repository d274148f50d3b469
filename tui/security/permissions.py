"""Permission levels tools declare, and the approval modes a session runs in."""

from __future__ import annotations

import enum
import functools


@functools.total_ordering
class PermissionMode(enum.Enum):
    """What a call may touch, ordered: read-only < workspace-write < danger-full-access."""

    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    DANGER_FULL_ACCESS = "danger-full-access"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, PermissionMode):
            return NotImplemented
        return self.rank < other.rank


_RANKS = {
    PermissionMode.READ_ONLY: 0,
    PermissionMode.WORKSPACE_WRITE: 1,
    PermissionMode.DANGER_FULL_ACCESS: 2,
}


class ApprovalMode(enum.Enum):
    """How much runs without asking (the ``--approval-mode`` flag).

    - ``read-only``: read-only calls run; anything else is refused.
    - ``ask``: read-only calls run; everything else asks.
    - ``auto-edit``: file edits inside the workspace run too; commands that act still ask.
    - ``full-auto``: everything the policy permits runs without asking.
    """

    READ_ONLY = "read-only"
    ASK = "ask"
    AUTO_EDIT = "auto-edit"
    FULL_AUTO = "full-auto"

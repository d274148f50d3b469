"""The one error base every agent-tui failure shares, so callers can show `title` and `msg`."""

from __future__ import annotations


class AgentTuiError(Exception):
    """Base of every error agent-tui raises on purpose.

    Args:
        msg: What went wrong and, where possible, what to do about it.
        title: A short heading for notifications.
    """

    title: str = "agent-tui error"

    def __init__(self, msg: str, *, title: str | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        if title is not None:
            self.title = title

    def __str__(self) -> str:
        return self.msg

"""What the tmux tools share: the backend check, error mapping, notes, Buddy's action metadata."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator

from tui.errors import ExecutionFailed, LimitReached, NotFound, PermissionDenied
from tui.exec.backend import BackendError
from tui.exec.tmux.guard import ShellGuardError
from tui.exec.tmux.sessions import LimitReached as SessionLimit
from tui.exec.tmux.sessions import NotOurs
from tui.tools.base import ToolParams
from tui.tools.builtin.durations import FORMS, parse_duration
from tui.tools.context import ToolContext

MAX_DELAY = 600.0
"""The longest ``delay`` a tmux tool waits (10 minutes; use run_shell wait for longer)."""


def tmux_backend(ctx: ToolContext) -> Any:
    backend = ctx.backend
    if not getattr(backend, "SUPPORTS_TMUX", False):
        raise ExecutionFailed(f"{backend.actor} is not a tmux backend; start agent-tui with tmux")
    return backend


def failure(error: BackendError) -> Exception:
    if isinstance(error, SessionLimit):
        return LimitReached(f"{error.msg} ([tmux] max_sessions / max_panes)")
    if isinstance(error, NotOurs):
        return NotFound(error.msg)
    if isinstance(error, ShellGuardError):
        return PermissionDenied(error.msg)
    return ExecutionFailed(error.msg)


def notes(ctx: ToolContext, notices: list[str]) -> list[str]:
    for notice in notices:
        ctx.notice(notice)
    return [f"note: {notice}" for notice in notices]


def delay_field(default: float, what: str) -> Any:
    return Field(default=default, description=f"{what} ({FORMS}; at most 10m).")


def parse_delay(value: object) -> float:
    return parse_duration(value, what="delay", maximum=MAX_DELAY)


Why = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A reason: required where Buddy requires one, and never blank."""


class ActionMeta(ToolParams):
    """Buddy's safety metadata, required on every tool that acts: shown in the approval, never
    trusted for it.

    The computed risk decides; ``risk`` can only raise what the person is shown, ``mutation``
    and ``privesc`` can only raise the permission the call needs. A call without one of the
    four is refused with InvalidArguments naming it, as Buddy's schema does.
    """

    risk: Literal["low", "medium", "high"] = Field(
        description="Your own risk estimate for this action (low, medium, high); it never "
        "lowers the computed risk the user is shown."
    )
    mutation: bool = Field(description="True when this action mutates state (files, services).")
    privesc: bool = Field(
        description="True when the action uses privilege escalation (sudo, su, root)."
    )
    why: Why = Field(
        description="Short reason for this action, including the risk/privesc justification."
    )


class Selectors(ToolParams):
    """A pane by raw ``target`` or, as in Buddy, by managed ``session`` and ``pane``."""

    target: str | None = Field(
        default=None,
        description="Pane id (%3), session name or session:window.pane; default: the shared "
        "pane. Prefer session/pane.",
    )
    session: str | None = Field(
        default=None,
        description="One of your sessions (its active pane unless `pane` is given); default: "
        "the shared session.",
    )
    pane: str | None = Field(
        default=None,
        description="One of your panes: its name (tmux_create_pane name=…), its index in the "
        "session's window, or its id (%3).",
    )

    @field_validator("pane", mode="before")
    @classmethod
    def _pane_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

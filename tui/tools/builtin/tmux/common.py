"""What the tmux tools (and ``run_shell`` in a pane) share: the pane of the call's backend,
Buddy's ``session``/``pane`` selectors, error mapping, notes, Buddy's action metadata.

The tools accept a raw tmux ``target`` and, as Buddy does, a ``session`` (a managed session's
name) and a ``pane`` (a pane's name from ``tmux_create_pane``, its index in the session's
current window, or its ``%id``). Every answer comes from the backend's owner-filtered listing
or ``resolve_target``, so a selector can only ever reach a pane agent-tui created: a person's
own session on the same socket, or another instance's, is "not found", never typed into.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator

from tui.errors import ExecutionFailed, LimitReached, NotFound, PermissionDenied
from tui.exec.backend import BackendError
from tui.exec.tmux_pane import (
    LimitReached as SessionLimit,
)
from tui.exec.tmux_pane import (
    NotOurs,
    ShellGuardError,
    TmuxPane,
    canonical_pane_name,
    canonical_session_name,
    is_pane_id,
    tmux_pane,
)
from tui.tools.base import ToolParams
from tui.tools.builtin.durations import FORMS, parse_duration
from tui.tools.context import ToolContext

MAX_DELAY = 600.0
"""The longest ``delay`` a tmux tool waits (10 minutes; use run_shell wait for longer)."""


def pane_backend(ctx: ToolContext) -> TmuxPane:
    """The call's backend as a ``TmuxPane``. Raises ExecutionFailed when it has no tmux."""
    pane = tmux_pane(ctx.backend)
    if pane is None:
        raise ExecutionFailed(
            f"{ctx.backend.actor} is not a tmux backend; start agent-tui with tmux"
        )
    return pane


async def select_target(
    backend: TmuxPane, *, target: str | None, session: str | None, pane: str | int | None
) -> str | None:
    """The pane id the selectors name; None when none is given (the shared pane).

    Raises:
        NotOurs: the session or pane does not exist among agent-tui's own, or ``target``
            was given together with ``session``/``pane``.
    """
    if target is not None and (session is not None or pane is not None):
        raise NotOurs("give either target or session/pane, not both")
    if target is not None:
        return await backend.resolve_target(target)
    if session is None and pane is None:
        return None
    session_name = _session(session) if session is not None else backend.default_session
    if pane is None:
        return await backend.resolve_target(session_name)
    text = str(pane).strip()
    if is_pane_id(text):
        pane_id = await backend.resolve_target(text)
        if session is not None:
            await _check_in_session(backend, pane_id, session_name)
        return pane_id
    if text.isdigit():
        return await backend.resolve_target(f"{session_name}:.{int(text)}")
    try:
        name = canonical_pane_name(text)
    except ValueError as error:
        raise NotOurs(str(error)) from None
    for info in await backend.list_panes(session_name):
        if info.name == name:
            return info.pane_id
    raise NotOurs(f"no pane named {name!r} in agent-tui's session {session_name}")


def _session(session: str) -> str:
    try:
        return canonical_session_name(session)
    except ValueError as error:
        raise NotOurs(str(error)) from None


async def _check_in_session(backend: TmuxPane, pane_id: str, session: str) -> None:
    if pane_id not in {info.pane_id for info in await backend.list_panes(session)}:
        raise NotOurs(f"pane {pane_id} is not in agent-tui's session {session}")


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

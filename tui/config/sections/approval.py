"""``[approval]`` and ``[notify]``: when a person is asked before a call runs, and how they
are called back to the terminal when something waits for them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from tui.config.sections import SECTION
from tui.security.permissions import ApprovalMode
from tui.security.rules import InvalidRule, Rule


class SavedGrant(BaseModel):
    """One "allow always" grant saved by the GrantStore (which reads them itself)."""

    model_config = SECTION

    rule: str
    """``tool``, ``tool(exact)`` or ``tool(prefix:*)``."""
    workspace: str = "*"
    """The canonical workspace it applies to, or ``*`` for all."""
    created: float = 0
    """Unix seconds when it was granted."""
    hosts: str | None = None
    """A fleet's hosts or groups (a host pattern) it holds on; unset: everywhere."""

    @field_validator("rule")
    @classmethod
    def _rule_parses(cls, value: str) -> str:
        """A broken saved rule would otherwise only fail later, inside the GrantStore."""
        try:
            Rule.parse(value)
        except InvalidRule as exc:
            raise ValueError(exc.msg) from None
        return value


class ApprovalSettings(BaseModel):
    """When a person is asked before a call runs."""

    model_config = SECTION

    mode: ApprovalMode = ApprovalMode.ASK
    """``read-only``, ``ask``, ``auto-edit`` or ``full-auto`` (see ``--approval-mode``)."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds to wait for an answer before the call is denied; unset waits for ever."""
    grants: list[SavedGrant] = Field(default_factory=list)
    """Saved "allow always" grants, written by the app; delete an entry to revoke it."""


class NotifySettings(BaseModel):
    """Bell and desktop notification while the terminal is not focused (the app only)."""

    model_config = SECTION

    enabled: bool = True
    bell: bool = True
    """Ring the terminal bell."""
    desktop: Literal["osc9", "osc777", "both", "off"] = "osc9"
    """Desktop notification escape: OSC 9 (iTerm2, WezTerm, kitty…) or OSC 777 (VTE, foot)."""
    min_turn_seconds: float = Field(default=10.0, ge=0)
    """A turn at least this long notifies when it ends; an approval always does."""

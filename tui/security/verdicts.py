"""The policy's two answers, and how a PreToolUse hook's own answer weighs on them."""

from __future__ import annotations

import enum
from typing import Literal

from tui.security.access import ToolAccess
from tui.security.permissions import ApprovalMode
from tui.security.risk.verdict import RISK_ORDER, CommandRisk, Risk


class Verdict(enum.Enum):
    ALLOW = "allow"
    ASK = "ask"


def hook_verdict(
    judged: tuple[Verdict, str],
    hook_permission: Literal["allow", "ask"] | None,
    mode: ApprovalMode,
) -> tuple[Verdict, str]:
    """The policy's verdict once a PreToolUse hook's ``permissionDecision`` is weighed.

    Runs after ``precheck``, so deny rules, command lists, the ceiling and the rate limit have
    already refused what they refuse. ``ask`` turns any allow into a question. ``allow``
    answers only the mode's own question: an ask rule, a secret read (by path or inside a
    command) and read-only mode still stop the call for a person, whatever the hook says.
    """
    verdict, how = judged
    if hook_permission == "ask":
        return Verdict.ASK, "hook" if verdict is Verdict.ALLOW else how
    if (
        hook_permission == "allow"
        and verdict is Verdict.ASK
        and how == "mode"
        and mode is not ApprovalMode.READ_ONLY
    ):
        return Verdict.ALLOW, "hook"
    return verdict, how


def claimed_risk(label: str | None) -> Risk:
    """The model's own label as a risk (anything unrecognised counts for nothing: low)."""
    if label in RISK_ORDER:
        return label
    return "low"


def call_subjects(access: ToolAccess, risk: CommandRisk | None) -> list[str | None]:
    """What ``tool(pattern)`` rules match against: the command and each segment, or the
    call's subject."""
    if access.command is not None:
        return (
            [access.command, *(s.text.strip() for s in risk.segments)] if risk else [access.command]
        )
    return [access.subject]

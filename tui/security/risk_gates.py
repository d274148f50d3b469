"""ZeroClaw's two risk switches: ``block_high_risk_commands`` and
``require_approval_for_medium_risk``.

Both judge the command's effective risk (the computed one, raised by the model's own claim,
never lowered by it; an unknown program counts as high, as it does for the permission it
needs). A blocked command is refused before anyone is asked, unless the person named it:
``[security] command_allowlist`` lists every program it runs (ZeroClaw's "explicitly
allowed"), or an ``allow`` rule covers every segment. A medium- or high-risk command asks
even where the approval mode would let it through (``full-auto``); the person's own allow
rules and saved grants still answer for it, as they are the person's earlier yes.
"""

from __future__ import annotations

from tui.security.access import ToolAccess
from tui.security.risk.verdict import RISK_ORDER, CommandRisk, Risk, max_risk
from tui.security.rules import Rule, covers_all
from tui.security.settings import SecuritySettings
from tui.security.verdicts import claimed_risk

BLOCKED = "Command blocked: high-risk command is disallowed by policy"
"""ZeroClaw's words, so a model or prompt written for ZeroClaw recognises them."""


def effective_risk(access: ToolAccess, risk: CommandRisk) -> Risk:
    return max_risk(risk.risk, claimed_risk(access.claimed_risk))


def high_risk_refusal(
    settings: SecuritySettings, tool: str, access: ToolAccess, risk: CommandRisk, allow: list[Rule]
) -> str | None:
    """Why ``block_high_risk_commands`` refuses this command, or None."""
    if not settings.block_high_risk_commands or access.command is None:
        return None
    effective = effective_risk(access, risk)
    if RISK_ORDER[effective] < RISK_ORDER["unknown"]:
        return None
    listed = settings.command_allowlist
    programs = [s.program or s.text.strip() for s in risk.segments]
    if listed and programs and all(p in listed and p != "*" for p in programs):
        return None
    if covers_all(allow, tool, access.command, [s.text.strip() for s in risk.segments]):
        return None
    return (
        f"{BLOCKED} ([security] block_high_risk_commands; computed risk: {effective}). Do it "
        "another way, or ask the user to allow it ([security] allow or command_allowlist)"
    )


def asks_for_risk(settings: SecuritySettings, access: ToolAccess, risk: CommandRisk | None) -> bool:
    """``require_approval_for_medium_risk``: this command must be asked about in every mode."""
    if not settings.require_approval_for_medium_risk or risk is None or access.command is None:
        return False
    return RISK_ORDER[effective_risk(access, risk)] >= RISK_ORDER["medium"]


def risk_reason(access: ToolAccess, risk: CommandRisk) -> str:
    return (
        f"[security] require_approval_for_medium_risk: the command is rated "
        f"{effective_risk(access, risk)}"
    )

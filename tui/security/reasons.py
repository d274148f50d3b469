"""Why a call asks: one sentence naming the rule or the mode that made the policy stop.

A person who cannot tell why something needs approval learns to approve everything. The
policy already knows why (``SecurityPolicy.verdict`` returns ``ASK`` for a secret read, an
``ask`` rule or the approval mode); this module turns that into words for the modal and the
headless terminal prompt, naming the mode, the rule as written in ``[security].ask``, the
control file a write would change and the computed risk.
"""

from __future__ import annotations

from tui.security.access import ToolAccess
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.risk.verdict import CommandRisk
from tui.security.rules import Rule


def secret_reason(mode: ApprovalMode, secrets: list[str]) -> str:
    """A secret read asks in every mode, before any allow rule or grant."""
    what = "; ".join(secrets) or "a secret"
    return f"{mode.value}: secret reads always ask ({what})"


def rule_reason(rule: Rule) -> str:
    return f"the rule {rule} in [security].ask"


def mode_reason(
    mode: ApprovalMode,
    access: ToolAccess,
    needed: PermissionMode,
    risk: CommandRisk | None,
    control: str | None,
) -> str:
    """The approval mode asked: say which mode, what kind of call, and the computed risk."""
    rated = f" (computed risk: {risk.risk})" if risk is not None else ""
    if mode is ApprovalMode.AUTO_EDIT:
        if control is not None:
            return f"auto-edit: writes that change what runs later ask ({control})"
        if access.command is not None:
            return f"auto-edit: commands that act need approval{rated}"
        if needed is PermissionMode.DANGER_FULL_ACCESS:
            return "auto-edit: writes outside the workspace need approval"
        return f"auto-edit: {needed.value} calls need approval{rated}"
    if access.command is not None:
        return f"{mode.value} mode: commands that act need approval{rated}"
    if needed is PermissionMode.DANGER_FULL_ACCESS:
        return f"{mode.value} mode: writes outside the workspace need approval"
    return f"{mode.value} mode: {needed.value} calls need approval{rated}"


__all__ = ["mode_reason", "rule_reason", "secret_reason"]

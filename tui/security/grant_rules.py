"""What "allow always" offers and grants: a starting pattern, or each segment exactly.

Granting per segment means approving ``git status && rm -rf x`` grants exactly those two
commands and nothing broader (a click on a compound command once installed ``rm *`` in a peer).
"""

from __future__ import annotations

from tui.security.access import ToolAccess
from tui.security.risk.verdict import CommandRisk
from tui.security.rules import Rule


def suggest_pattern(tool: str, access: ToolAccess, risk: CommandRisk | None) -> str:
    """A starting point for "allow always": program plus first argument, as a prefix."""
    if access.command is None:
        return f"{tool}({access.subject})" if access.subject else tool
    if risk and len(risk.segments) == 1:
        words = risk.segments[0].text.split()
        if len(words) > 2:
            return f"{tool}({' '.join(words[:2])}:*)"
    return f"{tool}({access.command.strip()})"


def grant_rules(
    tool: str,
    access: ToolAccess,
    risk: CommandRisk | None,
    pattern: str | None,
    keep: list[str] | None = None,
) -> list[Rule]:
    """What "allow always" grants: the edited pattern, or each segment exactly — only those
    of ``keep`` when the person unticked some (never a rule they were not shown).

    Granting per segment means approving ``git status && rm -rf x`` grants exactly those two
    commands and nothing broader.
    """
    if pattern:
        rule = Rule.parse(pattern) if "(" in pattern else Rule.parse(f"{tool}({pattern})")
        return [rule]
    if access.command is None:
        return [Rule(tool, access.subject)] if access.subject else [Rule(tool)]
    segments = [s.text.strip() for s in risk.segments] if risk else []
    rules = [Rule(tool, text) for text in (segments or [access.command.strip()])]
    return rules if keep is None else [rule for rule in rules if str(rule) in keep]

"""``tool``, ``tool(exact)`` and ``tool(prefix:*)`` rules, matched per command segment."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.errors import AgentTuiError

_RULE = re.compile(r"^\s*(?P<tool>[A-Za-z0-9_.\-*]+)\s*(?:\((?P<content>.*)\))?\s*$", re.DOTALL)


class InvalidRule(AgentTuiError):
    title = "Invalid rule"


def prefix_matches(prefix: str, subject: str) -> bool:
    """``git commit`` covers ``git commit -m x`` but not ``git commits``; ``src/`` covers
    ``src/a.py``. A word is never cut in half."""
    if not subject.startswith(prefix):
        return False
    if len(subject) == len(prefix) or not prefix:
        return True
    return not (prefix[-1].isalnum() and subject[len(prefix)].isalnum())


@dataclass(frozen=True)
class Rule:
    tool: str
    content: str | None = None
    """None: the whole tool. Otherwise an exact subject, or a prefix when ``is_prefix``."""
    is_prefix: bool = False

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = _RULE.match(text)
        if not match:
            raise InvalidRule(
                f"rule {text!r} is not of the form tool, tool(exact) or tool(prefix:*)"
            )
        content = match.group("content")
        if content is None:
            return cls(match.group("tool"))
        content = content.strip()
        if content.endswith(":*"):
            return cls(match.group("tool"), content[:-2].rstrip(), True)
        if content in ("*", ""):
            return cls(match.group("tool"))
        return cls(match.group("tool"), content)

    def matches_tool(self, tool: str) -> bool:
        return self.tool in ("*", tool)

    def matches(self, tool: str, subject: str | None) -> bool:
        if not self.matches_tool(tool):
            return False
        if self.content is None:
            return True
        if subject is None:
            return False
        subject = subject.strip()
        if self.is_prefix:
            return prefix_matches(self.content, subject)
        return subject == self.content

    def __str__(self) -> str:
        if self.content is None:
            return self.tool
        return f"{self.tool}({self.content}{':*' if self.is_prefix else ''})"


def parse_rules(texts: list[str]) -> list[Rule]:
    return [Rule.parse(text) for text in texts]


def first_match(rules: list[Rule], tool: str, subjects: list[str | None]) -> Rule | None:
    """The first rule matching any one subject (deny and ask rules: one segment is enough)."""
    for rule in rules:
        for subject in subjects:
            if rule.matches(tool, subject):
                return rule
    return None


def covers_all(rules: list[Rule], tool: str, whole: str | None, parts: list[str]) -> bool:
    """Allow rules: the whole command matches one rule, or every segment matches some rule.

    Never lets ``git status && rm -rf x`` through on the strength of ``git status:*``.
    """
    # A prefix rule never judges a compound command as a whole: `touch:*` would otherwise
    # cover `touch a && rm -rf b`.
    compound = len(parts) > 1
    if any(rule.matches(tool, whole) for rule in rules if not (compound and rule.is_prefix)):
        return True
    if not parts:
        return False
    return all(any(rule.matches(tool, part) for rule in rules) for part in parts)

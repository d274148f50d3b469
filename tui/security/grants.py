""" "Allow always" grants: listed, revoked, scoped to a workspace, optionally saved.

A grant is an allow rule for one tool and one command segment (exact, or a prefix the person
edited), so approving ``git status && rm -rf x`` can never silently grant ``rm``. Saved grants
live in the config file's ``[approval].grants`` array and apply only to the workspace they were
made in unless saved with ``workspace = "*"``.
"""

from __future__ import annotations

import builtins
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tui.security.rules import Rule

Scope = Literal["session", "saved"]


@dataclass
class Grant:
    rule: Rule
    scope: Scope
    workspace: str
    """Canonical workspace path, or ``*`` for every workspace."""
    created: float = field(default_factory=time.time)
    hosts: str | None = None
    """A fleet's host pattern (hosts or groups) the grant holds on; None: wherever the
    session's commands run."""

    def applies_to(self, workspace: str) -> bool:
        return self.workspace in ("*", workspace)

    def describe(self) -> str:
        where = "every workspace" if self.workspace == "*" else self.workspace
        on = f", on hosts {self.hosts}" if self.hosts else ""
        return f"{self.rule} — {self.scope}, {where}{on}"


class GrantStore:
    def __init__(self, workspace: Path, saved_file: Path | None = None) -> None:
        self.workspace = str(workspace)
        self.saved_file = saved_file
        self._grants: list[Grant] = []
        if saved_file is not None:
            self._grants.extend(load_saved_grants(saved_file))

    def list(self) -> list[Grant]:
        """Grants in force here, session ones first."""
        here = [g for g in self._grants if g.applies_to(self.workspace)]
        return sorted(here, key=lambda g: (g.scope != "session", g.created))

    def rules(self, on_host: Callable[[str], bool] | None = None) -> builtins.list[Rule]:
        """The rules in force; a grant scoped to hosts only where ``on_host(its pattern)``."""
        return [
            g.rule
            for g in self.list()
            if g.hosts is None or (on_host is not None and on_host(g.hosts))
        ]

    def add(
        self,
        rule: Rule,
        scope: Scope = "session",
        *,
        workspace: str | None = None,
        hosts: str | None = None,
    ) -> Grant:
        grant = Grant(rule=rule, scope=scope, workspace=workspace or self.workspace, hosts=hosts)
        if any(
            str(g.rule) == str(rule) and g.workspace == grant.workspace and g.hosts == hosts
            for g in self._grants
        ):
            return grant
        self._grants.append(grant)
        if scope == "saved":
            self._save()
        return grant

    def revoke(self, rule_text: str) -> bool:
        """Remove every grant here whose rule reads ``rule_text``; True when one was removed."""
        doomed = [
            g for g in self._grants if str(g.rule) == rule_text and g.applies_to(self.workspace)
        ]
        for grant in doomed:
            self._grants.remove(grant)
        if any(g.scope == "saved" for g in doomed):
            self._save()
        return bool(doomed)

    def _save(self) -> None:
        if self.saved_file is None:
            return
        save_grants(self.saved_file, [g for g in self._grants if g.scope == "saved"])


def load_saved_grants(path: Path) -> list[Grant]:
    if not path.exists():
        return []
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    approval = document.get("approval", {})
    grants = []
    for entry in approval.get("grants", []):
        rule = Rule.parse(str(entry["rule"]))
        grants.append(
            Grant(
                rule=rule,
                scope="saved",
                workspace=str(entry.get("workspace", "*")),
                created=float(entry.get("created", 0)),
                hosts=str(entry["hosts"]) if entry.get("hosts") else None,
            )
        )
    return grants


def save_grants(path: Path, grants: list[Grant]) -> None:
    """Rewrite only ``[approval].grants``, keeping the rest of the file and its comments."""
    import tomlkit  # keeps the file's comments and layout; ~10 ms only when a grant is saved
    import tomlkit.items

    document = (
        tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    )
    approval = document.get("approval")
    if approval is None:
        approval = tomlkit.table()
        document["approval"] = approval
    array = tomlkit.array()
    array.multiline(True)
    for grant in grants:
        entry = tomlkit.inline_table()
        entry.update(
            {
                "rule": str(grant.rule),
                "workspace": grant.workspace,
                "created": round(grant.created, 3),
                **({"hosts": grant.hosts} if grant.hosts else {}),
            }
        )
        array.append(entry)
    approval["grants"] = array
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomlkit.dumps(document), encoding="utf-8")

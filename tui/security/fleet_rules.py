"""What one fleet host runs under: its groups' and its own ``[fleet]`` rules, strictest first.

A host in ``prod`` and ``staging`` gets both groups' deny and ask lists, ``always_ask`` and
``blocked`` if either says so, and the stricter approval mode; its own ``[fleet.hosts.NAME]``
mode wins over its groups' (the person named that host). ``[fleet] blocked`` patterns block
too. The settings models live in ``tui.config``; this reads them by their attributes only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tui.security.inventory import Inventory
from tui.security.permissions import ApprovalMode
from tui.security.rules import Rule, parse_rules

_STRICTNESS = [ApprovalMode.READ_ONLY, ApprovalMode.ASK, ApprovalMode.AUTO_EDIT]
_STRICTNESS.append(ApprovalMode.FULL_AUTO)


class RulesLike(Protocol):
    """One ``[fleet.groups.NAME]`` or ``[fleet.hosts.NAME]`` table."""

    @property
    def approval_mode(self) -> ApprovalMode | None: ...
    @property
    def always_ask(self) -> bool: ...
    @property
    def allow(self) -> list[str]: ...
    @property
    def ask(self) -> list[str]: ...
    @property
    def deny(self) -> list[str]: ...
    @property
    def blocked(self) -> bool: ...


@dataclass(frozen=True)
class HostRule:
    """The effective rules of one host."""

    approval_mode: ApprovalMode | None = None
    """None: the session's mode."""
    always_ask: bool = False
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    blocked: bool = False
    sources: tuple[str, ...] = field(default=())
    """Which tables said something (``groups.prod``, ``hosts.db1``, ``blocked``), for reasons."""


@dataclass
class FleetRules:
    """Computes ``HostRule`` per host from the ``[fleet]`` tables.

    Args:
        inventory: Which groups each host is in.
        groups: ``[fleet.groups.*]``.
        hosts: ``[fleet.hosts.*]``.
        blocked: ``[fleet] blocked`` host patterns.
    """

    inventory: Inventory
    groups: Mapping[str, RulesLike] = field(default_factory=dict)
    hosts: Mapping[str, RulesLike] = field(default_factory=dict)
    blocked: Sequence[str] = ()
    _cache: dict[str, HostRule] = field(default_factory=dict)

    def of(self, name: str) -> HostRule:
        cached = self._cache.get(name)
        if cached is None:
            cached = self._cache[name] = self._compute(name)
        return cached

    def _compute(self, name: str) -> HostRule:
        tables: list[tuple[str, RulesLike]] = [
            (f"groups.{group}", self.groups[group])
            for group in ("all", *self.inventory.groups_of(name))
            if group in self.groups
        ]
        own = self.hosts.get(name)
        if own is not None:
            tables.append((f"hosts.{name}", own))
        modes = [table.approval_mode for _, table in tables if table.approval_mode is not None]
        mode = min(modes, key=_STRICTNESS.index) if modes else None
        if own is not None and own.approval_mode is not None:
            mode = own.approval_mode
        blocked_by = [p for p in self.blocked if self.inventory.matches(p, name)]
        return HostRule(
            approval_mode=mode,
            always_ask=any(table.always_ask for _, table in tables),
            allow=tuple(rule for _, t in tables for rule in parse_rules(t.allow)),
            ask=tuple(rule for _, t in tables for rule in parse_rules(t.ask)),
            deny=tuple(rule for _, t in tables for rule in parse_rules(t.deny)),
            blocked=bool(blocked_by) or any(table.blocked for _, table in tables),
            sources=tuple(source for source, _ in tables) + (("blocked",) if blocked_by else ()),
        )

    def describe(self, name: str) -> str:
        """Where a host's rules come from, for reasons: ``[fleet.groups.prod]``."""
        sources = [s for s in self.of(name).sources if s != "blocked"]
        return ", ".join(f"[fleet.{source}]" for source in sources) or "[fleet]"


__all__ = ["FleetRules", "HostRule", "RulesLike"]

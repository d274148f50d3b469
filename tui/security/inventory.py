"""The hosts of a fleet and their groups, and Ansible's host patterns to pick some of them.

Plain data, below everything that connects: the policy matches host patterns for per-group
rules and scoped grants, the fleet opens connections from it, the tools select hosts with it.
The inventory itself comes from ``--ssh`` flags or from an Ansible inventory file read by
ansible-core (``tui.exec.fleet.ansible_inventory``); the pattern language is Ansible's
(``ansible/inventory/manager.py``), re-done here because ansible-core is an optional extra and
a pattern is judged on every call:

* ``a:b`` or ``a,b``: union; ``&a``: and also in ``a``; ``!a``: but not in ``a``. Plain
  patterns apply first, then the ``&`` ones, then the ``!`` ones, whatever their order.
* A name matches a group (all its hosts, its children's included) or a host; ``all`` and
  ``*`` match every host; ``web*``, ``db?``, ``[ab]x`` are shell globs over group and host
  names; ``~regex`` a regular expression (matched from the start).
* ``web[0]``, ``web[1:3]``, ``web[2:]``, ``web[-1]``: a slice of what the rest selected.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

SPECIAL_GROUPS = ("all", "ungrouped")

_SUBSCRIPT = re.compile(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)([:-])([0-9]*))\]$")
_SPLIT_COLONS = re.compile(r"(?:[^\s:\[\]]|\[[^\]]*\])+")


class PatternError(ValueError):
    """A host pattern that cannot be read (a bad regex, a subscript past the end)."""


@dataclass(frozen=True)
class InventoryHost:
    """One host of the fleet: the name people and patterns use, and where to connect."""

    name: str
    address: str
    """What to connect to: ``ansible_host``, else the name (an ``~/.ssh/config`` alias works)."""
    port: int | None = None
    user: str | None = None
    groups: tuple[str, ...] = ()
    """Every group it is in, parents of its groups included (never ``all``)."""
    identity_file: str | None = None
    """``ansible_ssh_private_key_file``: a key for this host alone."""

    @property
    def target(self) -> str:
        """``[user@]address[:port]`` for the SSH backend."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        user = f"{self.user}@" if self.user else ""
        return f"{user}{host}{f':{self.port}' if self.port is not None else ''}"


@dataclass
class Inventory:
    """The hosts in inventory order, and each group's hosts (children included)."""

    hosts: dict[str, InventoryHost] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_hosts(cls, hosts: Iterable[InventoryHost]) -> Inventory:
        """An inventory of these hosts, the groups made from what each host says of itself."""
        inventory = cls()
        for host in hosts:
            if host.name in inventory.hosts:
                continue
            inventory.hosts[host.name] = host
            for group in host.groups or ("ungrouped",):
                inventory.groups.setdefault(group, []).append(host.name)
        inventory.groups["all"] = list(inventory.hosts)
        return inventory

    def groups_of(self, name: str) -> tuple[str, ...]:
        host = self.hosts.get(name)
        return host.groups if host is not None and host.groups else ("ungrouped",)

    def select(self, pattern: str) -> list[str]:
        """The host names ``pattern`` selects, in inventory order of first match.

        Raises:
            PatternError: the pattern cannot be read.
        """
        parts = split_pattern(pattern)
        plain = [p for p in parts if p[0] not in "&!"]
        ordered = (plain or ["all"]) + [p for p in parts if p[0] == "&"]
        ordered += [p for p in parts if p[0] == "!"]
        chosen: list[str] = []
        for part in ordered:
            if part in self.hosts:
                found = [part]
            else:
                found = self._one(part.lstrip("&!") if part[0] in "&!" else part)
            if part[0] == "!":
                drop = set(found)
                chosen = [name for name in chosen if name not in drop]
            elif part[0] == "&":
                keep = set(found)
                chosen = [name for name in chosen if name in keep]
            else:
                chosen.extend(name for name in found if name not in chosen)
        return list(dict.fromkeys(chosen))

    def matches(self, pattern: str, name: str) -> bool:
        """``name`` is among the hosts ``pattern`` selects (an unreadable pattern: no)."""
        try:
            return name in self.select(pattern)
        except PatternError:
            return False

    def _one(self, pattern: str) -> list[str]:
        expression, subscript = _split_subscript(pattern)
        found = self._enumerate(expression)
        if subscript is None or not found:
            return found
        start, end = subscript
        try:
            if end is None:
                return [found[start]]
            return found[start : (len(found) - 1 if end == -1 else end) + 1]
        except IndexError:
            raise PatternError(f"no hosts matched the subscripted pattern {pattern!r}") from None

    def _enumerate(self, pattern: str) -> list[str]:
        """A group's hosts when the pattern names groups, and hosts by name when it names
        none or is a glob or regex (Ansible's ``_enumerate_matches``)."""
        match = _matcher(pattern).match
        results: list[str] = []
        groups = [name for name in self.groups if match(name)]
        for group in groups:
            results.extend(self.groups[group])
        if not groups or pattern[0] == "~" or any(c in pattern for c in ".?*["):
            results.extend(name for name in self.hosts if match(name))
        return list(dict.fromkeys(results))


def split_pattern(pattern: str) -> list[str]:
    """``a,b`` or ``a:b`` into its parts; a single address or ``web[1:3]`` stays whole."""
    text = pattern.strip()
    if not text:
        raise PatternError("the host pattern is empty")
    if "," in text:
        parts = text.split(",")
    elif _is_single(text):
        parts = [text]
    else:
        parts = _SPLIT_COLONS.findall(text)
    cleaned = [part.strip() for part in parts if part.strip()]
    if not cleaned:
        raise PatternError(f"no host pattern in {pattern!r}")
    return cleaned


def _is_single(text: str) -> bool:
    """A word with at most a trailing ``[..]`` subscript, or an IPv6 address: not a list."""
    if ":" not in text:
        return True
    subscripted = _SUBSCRIPT.match(text)
    if subscripted and ":" not in subscripted.group(1):
        return True
    return (
        text.count(":") > 1
        and "[" not in text
        and all(c in "0123456789abcdefABCDEF:." for c in text)
    )


def _split_subscript(pattern: str) -> tuple[str, tuple[int, int | None] | None]:
    if pattern[0] == "~":
        return pattern, None
    match = _SUBSCRIPT.match(pattern)
    if not match:
        return pattern, None
    expression, index, start, _, end = match.groups()
    if index:
        return expression, (int(index), None)
    return expression, (int(start), int(end) if end else -1)


def _matcher(pattern: str) -> re.Pattern[str]:
    try:
        if pattern[0] == "~":
            compiled = re.compile(pattern[1:])
        else:
            compiled = re.compile(fnmatch.translate(pattern))
    except re.error as error:
        raise PatternError(f"invalid host pattern {pattern!r}: {error}") from None
    return compiled  # ``.match``: from the start, as Ansible matches


__all__ = ["SPECIAL_GROUPS", "Inventory", "InventoryHost", "PatternError", "split_pattern"]

"""``[fleet]``: many SSH hosts from one session, and the rules each host or group runs under."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from tui.config.sections import SECTION
from tui.security.permissions import ApprovalMode
from tui.security.rules import InvalidRule, Rule


class HostRules(BaseModel):
    """What commands on one host, or on every host of one group, run under.

    A host in several groups gets the strictest of them: the strictest approval mode, every
    ``deny`` and ``ask`` list, ``always_ask`` and ``blocked`` from any; its own table's
    ``approval_mode`` (``[fleet.hosts.NAME]``) wins over its groups'.
    """

    model_config = SECTION

    approval_mode: ApprovalMode | None = None
    """This host's or group's mode instead of the session's (``"auto-edit"`` for staging)."""
    always_ask: bool = False
    """Every command here asks a person first, read-only ones too (``prod``)."""
    allow: list[str] = Field(default_factory=list)
    """Rules (as in ``[security].allow``) that run here without asking."""
    ask: list[str] = Field(default_factory=list)
    """Rules that always ask here."""
    deny: list[str] = Field(default_factory=list)
    """Rules refused here."""
    blocked: bool = False
    """Never touched: no connection is opened, no command runs."""

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _rules_parse(cls, value: list[str]) -> list[str]:
        for text in value:
            try:
                Rule.parse(text)
            except InvalidRule as exc:
                raise ValueError(exc.msg) from None
        return value


class FleetSettings(BaseModel):
    """The hosts of a fleet (besides ``--ssh`` given several times and ``--inventory``)."""

    model_config = SECTION

    inventory: str | None = None
    """An Ansible inventory file (INI or YAML), read by ansible-core (the ``ansible`` extra)."""
    ssh: list[str] = Field(default_factory=list)
    """More hosts, as ``--ssh`` takes them: ``user@host[:port]`` or ``~/.ssh/config`` aliases."""
    limit: str | None = None
    """Only the hosts this Ansible pattern selects (as ``--limit``)."""
    forks: int = Field(default=10, ge=1, le=500)
    """Hosts worked on at once by one fan-out (Ansible's ``forks``)."""
    blocked: list[str] = Field(default_factory=list)
    """Host patterns never touched: no connection, no command."""
    groups: dict[str, HostRules] = Field(default_factory=dict)
    """``[fleet.groups.NAME]``: the rules of every host in group NAME."""
    hosts: dict[str, HostRules] = Field(default_factory=dict)
    """``[fleet.hosts.NAME]``: the rules of host NAME (its own approval mode wins)."""

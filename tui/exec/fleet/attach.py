"""Ties a fleet to the session's policy: one mode per host, hosts opened when judged."""

from __future__ import annotations

from collections.abc import Callable

from tui.events import Event
from tui.exec.fleet.fleet import Fleet
from tui.exec.sandbox.sandbox import Sandbox
from tui.security.fleet_policy import FleetPolicy, effective_mode
from tui.security.policy import SecurityPolicy


def attach_fleet(
    fleet: Fleet,
    policy: SecurityPolicy,
    publish: Callable[[Event], None],
    default_sandbox: Sandbox | None,
) -> None:
    """The policy learns the hosts and opens them through the fleet; every host's sandbox
    walls follow that host's approval mode (``[fleet]`` rules, else the session's), so the
    kernel and the policy never disagree about a host; host states go to ``publish``."""
    if isinstance(policy, FleetPolicy):
        policy.setup(fleet.inventory, fleet.rules, fleet.open, fleet.backend, fleet.default_host)
    fleet.set_modes(lambda name: effective_mode(policy, name))
    if default_sandbox is not None:
        default = fleet.default_host
        default_sandbox.approval_mode = lambda: effective_mode(policy, default)
    fleet.publish = publish


__all__ = ["attach_fleet"]

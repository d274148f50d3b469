"""A fleet as the session's target: the hosts, ``--limit``, and how each host is opened.

Part of the composition root, beside ``tui.targets``: ``--ssh`` given several times,
``--inventory FILE`` (or ``[fleet] inventory``) and ``[fleet] ssh`` make the hosts,
``--limit`` (or ``[fleet] limit``) keeps some of them. The first host that opens becomes the
session's default target, opened at start exactly as ``--ssh`` opens one host; every other
host is opened the same way the first time a call needs it (``Fleet.ensure``): its own
connection, host key check, workspace, sandbox probe and, in the app, tmux session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tui.config import Settings
from tui.exec.backend import BackendError, ExecutionBackend
from tui.exec.fleet.fleet import Fleet, OpenedHost
from tui.exec.ssh.target import SSHTarget
from tui.security.confinement import SandboxFacts
from tui.security.fleet_rules import FleetRules
from tui.security.inventory import Inventory, InventoryHost, PatternError
from tui.security.permissions import ApprovalMode
from tui.targets import (
    Target,
    TargetChoice,
    has_tmux,
    make_sandbox,
    open_target,
    open_tmux,
    remote_sandbox,
    remote_workspace,
    target_home,
)

ModeOf = Callable[[str], ApprovalMode]


async def load_inventory(choice: TargetChoice, settings: Settings) -> tuple[Inventory, list[str]]:
    """The fleet's hosts from the flags and ``[fleet]``, ``--limit`` applied.

    Raises:
        BackendError: an unreadable inventory, a bad or empty ``--limit``, no hosts at all.
    """
    said: list[str] = []
    hosts: list[InventoryHost] = []
    source = choice.inventory or settings.fleet.inventory
    if choice.inventory == "" and not source:
        raise BackendError("--inventory without a file needs [fleet] inventory in the config")
    if source:
        from tui.exec.fleet.ansible_inventory import load_ansible_inventory

        path = Path(source)
        loaded, said = await asyncio.to_thread(lambda: load_ansible_inventory(path.expanduser()))
        hosts.extend(loaded.hosts.values())
        groups = loaded.groups
    else:
        groups = {}
    for text in [*([choice.ssh] if choice.ssh else []), *choice.fleet_ssh, *settings.fleet.ssh]:
        try:
            target = SSHTarget.parse(text)
        except ValueError as error:
            raise BackendError(str(error)) from None
        # The host is its name, as people say it; a second login or port on it is told apart.
        if str(target) in {host.target for host in hosts}:
            continue  # the same target twice
        taken = {host.name for host in hosts}
        name = target.host if target.host not in taken else str(target)
        if name in taken:
            name = f"{target}#{len(hosts) + 1}"
        hosts.append(InventoryHost(name, target.host, target.port, target.user, ("ungrouped",)))
    inventory = Inventory.from_hosts(hosts)
    for group, members in groups.items():
        if group != "all":
            inventory.groups[group] = [m for m in members if m in inventory.hosts]
    inventory.groups.setdefault("ungrouped", [])
    if not inventory.hosts:
        raise BackendError(f"the fleet has no hosts{f' ({source} lists none)' if source else ''}")
    limit = choice.limit or settings.fleet.limit
    if limit:
        try:
            kept = inventory.select(limit)
        except PatternError as error:
            raise BackendError(f"--limit: {error}") from None
        if not kept:
            raise BackendError(f"--limit {limit!r} matches no host of the fleet")
        inventory = _restricted(inventory, kept)
    return inventory, said


def _socket_word(name: str) -> str:
    """A host name as a tmux socket name's tail (letters, digits, ``-``, ``_``, ``.``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]


def _restricted(inventory: Inventory, names: list[str]) -> Inventory:
    keep = set(names)
    return Inventory(
        hosts={name: host for name, host in inventory.hosts.items() if name in keep},
        groups={g: [m for m in members if m in keep] for g, members in inventory.groups.items()},
    )


def fleet_rules(settings: Settings, inventory: Inventory) -> FleetRules:
    fleet = settings.fleet
    return FleetRules(inventory, fleet.groups, fleet.hosts, tuple(fleet.blocked))


async def open_fleet_host(
    host: InventoryHost,
    *,
    settings: Settings,
    workspace: Path,
    mode_of: ModeOf,
    tmux: bool,
    own_tmux: bool = True,
) -> OpenedHost:
    """Open one host as ``--ssh`` opens the one target: connection, home, workspace, its
    sandbox probe, and its tmux session when ``tmux`` (and the host has tmux).

    Raises:
        BackendError: the host cannot be used (unreachable, key refused, no home).
    """
    from tui.exec.ssh.backend import SSHBackend

    ssh = SSHBackend(
        host.target,
        identity_file=host.identity_file or settings.ssh.identity_file,
        known_hosts=settings.ssh.known_hosts,
        connect_timeout=settings.ssh.connect_timeout,
        label=host.name,
    )
    try:
        home = await target_home(ssh)
        where = remote_workspace(workspace, home)
        ssh.start_in(str(where))
        box = remote_sandbox(settings, where, ssh, host.name)
        box.approval_mode = lambda: mode_of(host.name)
        notice = await box.start() or ""
        if box.active:
            ssh.sandbox = box
        facts = (
            box.facts()
            if box.active
            else SandboxFacts(absent=f"no sandbox on {host.name}: the rater decides")
        )
        backend: ExecutionBackend = ssh
        closers: list[Callable[[], Awaitable[Any]]] = [ssh.close, box.close]
        notices: list[str] = []
        if tmux and await has_tmux(ssh):
            # Each host its own tmux server: two inventory names may be one machine, and
            # their sessions (one workspace) must not meet as each other's leftovers.
            suffix = "" if not own_tmux else "-" + _socket_word(host.name)
            backend = await open_tmux(ssh, settings, where, notices, socket_suffix=suffix)
            if own_tmux:
                closers.insert(0, backend.close)
    except BaseException:
        await ssh.close()
        raise
    notice = "; ".join(n for n in [notice, *notices] if n)
    return OpenedHost(
        backend, ssh, where, home, facts, notice, closers, box if box.active else None
    )


async def open_fleet(
    choice: TargetChoice, settings: Settings, workspace: Path, *, interactive: bool
) -> Target:
    """The fleet and its first reachable host as the session's default target.

    Raises:
        BackendError: no inventory, no host left by ``--limit``, or no host reachable.
    """
    sandbox = make_sandbox(settings, workspace)
    sandbox.approval_mode = lambda: settings.approval.mode
    await sandbox.start()
    inventory, said = await load_inventory(choice, settings)
    rules = fleet_rules(settings, inventory)
    use_tmux = choice.tmux if choice.tmux is not None else interactive
    modes: dict[str, ModeOf] = {"of": lambda name: settings.approval.mode}

    def mode_of(name: str) -> ApprovalMode:
        return modes["of"](name)

    async def opener(host: InventoryHost) -> OpenedHost:
        return await open_fleet_host(
            host, settings=settings, workspace=workspace, mode_of=mode_of, tmux=use_tmux
        )

    notices = [f"inventory: {line}" for line in said]
    failures: list[str] = []
    default: tuple[str, OpenedHost] | None = None
    for name, host in inventory.hosts.items():
        if rules.of(name).blocked:
            continue
        try:
            opened = await open_fleet_host(
                host,
                settings=settings,
                workspace=workspace,
                mode_of=mode_of,
                tmux=use_tmux,
                own_tmux=False,  # the session closes its own backend
            )
        except BackendError as error:
            failures.append(f"{name}: {error.msg}")
            if len(failures) >= 3:
                break
            continue
        default = (name, opened)
        break
    if default is None:
        raise BackendError(
            "no host of the fleet could be opened: " + " | ".join(failures or ["all blocked"])
        )
    notices += [f"skipped {failure}" for failure in failures]
    name, opened = default
    fleet = Fleet(inventory, rules, opener, forks=settings.fleet.forks, default=default)
    fleet.set_modes = lambda of: modes.__setitem__("of", of)
    notices.append(
        f"fleet: {len(inventory.hosts)} hosts, default {name}, at most {settings.fleet.forks} "
        "at once; the others open when first used"
    )
    if opened.notice:
        notices.append(opened.notice)
    remote = opened.remote
    return Target(
        opened.backend,
        opened.workspace,
        False,
        opened.home,
        notices,
        sandbox,
        remote,
        None if remote is not None else f"no sandbox on {name}: the rater decides",
        fleet=fleet,
    )


async def open_chosen(
    choice: TargetChoice, settings: Settings, workspace: Path, *, interactive: bool
) -> Target:
    """The target the choice names: a fleet, or one target (``tui.targets``)."""
    if choice.wants_fleet:
        return await open_fleet(choice, settings, workspace, interactive=interactive)
    return await open_target(choice, settings, workspace, interactive=interactive)


__all__ = [
    "fleet_rules",
    "load_inventory",
    "open_chosen",
    "open_fleet",
    "open_fleet_host",
]

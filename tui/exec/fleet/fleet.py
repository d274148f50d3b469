"""The hosts of a fleet at run time: one connection each, opened lazily, kept, watched.

Why it is built this way:

* **Lazily, once.** A host is opened the first time a call needs it: its SSH connection
  (host key checked exactly as for one host), its home and workspace, its own sandbox probe
  (bwrap there, or only the rater), and in the app its tmux session. Opening runs under the
  ``forks`` bound and under a per-host lock, so twenty calls naming one host open it once.
  A host that cannot be opened (no answer, a changed key) says why and is tried again the
  next time it is named.
* **Kept, and reconnected with a notice.** Every host keeps its one connection; the SSH
  backend reopens a dropped one once and says so in the next result's notices.
* **Watched.** Every change of a host (opening, running a command, its last exit code, a
  failure) is published as a ``FleetHostState`` for the host list.
* **Bounded.** ``forks`` hosts are worked on at once (Ansible's word and default idea); the
  others wait their turn in order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tui.errors import AgentTuiError
from tui.events import Event, FleetHostState
from tui.exec.backend import ExecutionBackend
from tui.exec.sandbox.sandbox import Sandbox
from tui.security.confinement import SandboxFacts
from tui.security.fleet_policy import HostFacts
from tui.security.fleet_rules import FleetRules
from tui.security.inventory import Inventory, InventoryHost
from tui.security.permissions import ApprovalMode

State = Literal["idle", "connecting", "ready", "running", "unreachable", "blocked", "closed"]


@dataclass
class OpenedHost:
    """What opening one host made: its backend (tmux or not) and what judging needs."""

    backend: ExecutionBackend
    """Where its commands run: a tmux backend in the app where the host has tmux."""
    ssh: ExecutionBackend
    """Its SSH connection (the same object as ``backend`` without tmux)."""
    workspace: Path
    home: str | None
    sandbox: SandboxFacts
    notice: str = ""
    """What its sandbox probe said (``sandbox on web01: …`` or ``no sandbox on …``)."""
    closers: list[Callable[[], Awaitable[Any]]] = field(default_factory=list)
    """Closed with the fleet, in order (the tmux backend, the connection, the sandbox)."""
    remote: Sandbox | None = None
    """Its own sandbox (bwrap there), when the probe found one working."""


HostOpen = Callable[[InventoryHost], Awaitable[OpenedHost]]
"""Opens one host (``tui.targets`` builds it from the settings). Raises AgentTuiError."""


@dataclass
class HostLink:
    """One host of the fleet and what is known of it now."""

    host: InventoryHost
    opened: OpenedHost | None = None
    state: State = "idle"
    last_exit: int | None = None
    running: str | None = None
    detail: str = ""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    runs: int = 0
    """Commands run here so far (a test's and the bench's count of kept connections)."""


class Fleet:
    """Every host of the session's fleet.

    Args:
        inventory: The hosts (``--limit`` already applied).
        rules: Which hosts are blocked (never opened).
        open_host: Opens one host.
        forks: Hosts worked on at once.
        default: The host opened at start (the session's default target), if any.
    """

    def __init__(
        self,
        inventory: Inventory,
        rules: FleetRules,
        open_host: HostOpen,
        *,
        forks: int = 10,
        default: tuple[str, OpenedHost] | None = None,
    ) -> None:
        self.inventory = inventory
        self.rules = rules
        self._open_host = open_host
        self.forks = forks
        self.slots = asyncio.Semaphore(forks)
        """Held by each host's part of a fan-out while it runs (and while a host opens)."""
        self.links = {name: HostLink(host) for name, host in inventory.hosts.items()}
        self.default_host = default[0] if default else next(iter(inventory.hosts))
        self.publish: Callable[[Event], None] | None = None
        """Where host states go (the session's bus), once a session listens."""
        self.on_opened: Callable[[str, OpenedHost], None] | None = None
        """Called once per host opened (the session starts its pane mirror)."""
        self.set_modes: Callable[[Callable[[str], ApprovalMode]], None] = lambda of: None
        """Tells the hosts' sandboxes each host's approval mode (set by who opens hosts)."""
        self._closed = False
        for name, link in self.links.items():
            if rules.of(name).blocked:
                link.state = "blocked"
                link.detail = "blocked: never touched"
        if default is not None:
            link = self.links[default[0]]
            link.opened = default[1]
            link.state = "ready"
            link.detail = default[1].notice

    # -- opening -----------------------------------------------------------------------------

    def opened(self, name: str) -> OpenedHost | None:
        link = self.links.get(name)
        return link.opened if link is not None else None

    async def open(self, names: list[str]) -> dict[str, HostFacts | str]:
        """Open these hosts (at most ``forks`` at once); each one's facts or why not."""

        async def one(name: str) -> tuple[str, HostFacts | str]:
            try:
                opened = await self.ensure(name)
            except AgentTuiError as error:
                return name, error.msg
            return name, self.facts(name, opened)

        done = await asyncio.gather(*(one(name) for name in names))
        return dict(done)

    def facts(self, name: str, opened: OpenedHost) -> HostFacts:
        return HostFacts(
            name=name,
            actor=opened.backend.actor,
            workspace=opened.workspace,
            home=opened.home,
            sandbox=opened.sandbox,
        )

    async def ensure(self, name: str) -> OpenedHost:
        """The host, opened now if it was not (raises AgentTuiError with why not)."""
        link = self.links.get(name)
        if link is None:
            raise AgentTuiError(f"no host named {name!r} in the fleet")
        if link.opened is not None:
            return link.opened
        if link.state == "blocked":
            raise AgentTuiError(f"{name} is blocked: nothing is run there")
        async with link.lock:
            if link.opened is not None:
                return link.opened
            if self._closed:
                raise AgentTuiError("the fleet is closed")
            self._set(link, "connecting", detail="")
            try:
                async with self.slots:
                    opened = await self._open_host(link.host)
            except AgentTuiError as error:
                self._set(link, "unreachable", detail=error.msg)
                raise
            except Exception as error:  # an unexpected failure is this host's, not the run's
                self._set(link, "unreachable", detail=f"{type(error).__name__}: {error}")
                raise AgentTuiError(f"{name}: could not be opened: {error}") from None
            link.opened = opened
            self._set(link, "ready", detail=opened.notice)
        if self.on_opened is not None:
            self.on_opened(name, opened)
        return opened

    async def backend(self, name: str) -> ExecutionBackend:
        return (await self.ensure(name)).backend

    # -- what runs where ---------------------------------------------------------------------

    def started(self, name: str, command: str) -> float:
        link = self.links[name]
        link.runs += 1
        self._set(link, "running", running=command)
        return time.monotonic()

    def finished(self, name: str, exit_code: int | None, *, failure: str = "") -> None:
        link = self.links[name]
        link.last_exit = exit_code
        if failure:
            self._set(link, "unreachable" if "connection" in failure else "ready", detail=failure)
        else:
            self._set(link, "ready", detail="")

    def running_count(self) -> int:
        return sum(1 for link in self.links.values() if link.state == "running")

    # -- the host list -----------------------------------------------------------------------

    def _set(
        self,
        link: HostLink,
        state: State,
        *,
        running: str | None = None,
        detail: str | None = None,
    ) -> None:
        link.state = state
        link.running = running if state == "running" else None
        if detail is not None:
            link.detail = detail
        self.announce(link.host.name)

    def announce(self, name: str | None = None) -> None:
        """Publish the state of ``name`` (None: of every host)."""
        if self.publish is None:
            return
        for link in self.links.values() if name is None else [self.links[name]]:
            self.publish(self.state_event(link))

    def state_event(self, link: HostLink) -> FleetHostState:
        host = link.host
        guard: Literal["kernel", "rater", "unknown"] = "unknown"
        if link.opened is not None:
            guard = "kernel" if link.opened.sandbox.active else "rater"
        return FleetHostState(
            host=host.name,
            address=host.target,
            groups=list(self.inventory.groups_of(host.name)),
            state=link.state,
            last_exit=link.last_exit,
            running=link.running,
            guard=guard,
            detail=link.detail[:300],
        )

    async def close(self) -> None:
        """Close every host opened (tmux first, then the connection), once."""
        if self._closed:
            return
        self._closed = True
        for link in self.links.values():
            opened, link.opened = link.opened, None
            if opened is None:
                continue
            for closer in opened.closers:
                try:
                    await closer()
                except Exception:  # one host failing to close must not keep the others
                    continue
            link.state = "closed"


__all__ = ["Fleet", "HostLink", "HostOpen", "OpenedHost"]

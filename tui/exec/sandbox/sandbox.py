"""``Sandbox``: how the backends of one session spawn what the agent runs.

It is not a backend: a backend asks it to turn an argv into the argv that runs the same thing
inside the walls of a ``Confinement``. It knows whether ``bwrap`` works here (found and probed
once), the session's approval mode (through the policy, so a ``/mode`` change takes effect on
the next spawn), the places to hide, and the host-policy proxy for the columns with network.

``[sandbox] mode``: ``auto`` uses bubblewrap where it works and otherwise says once that the
rater alone decides; ``required`` refuses to run commands without it; ``off`` is the person's
own explicit choice (a workspace file can never set it).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tui.exec.backend import BackendError
from tui.exec.sandbox.bwrap import bwrap_argv, find_bwrap, probe, probe_no_userns
from tui.exec.sandbox.places import Places, find_places
from tui.exec.sandbox.proxy import HostProxy, Refusal
from tui.scratch import private_folder, remove_private_folder
from tui.security.confinement import Confinement, SandboxFacts, mode_confinement
from tui.security.hosts import HostPolicy
from tui.security.permissions import ApprovalMode

SandboxMode = Literal["auto", "required", "off"]
Confine = Callable[[Sequence[str], str | None], Awaitable[list[str]]]
"""Turns ``(argv, cwd)`` into the argv that runs it confined (see ``Sandbox.confiner``)."""

RELAY = str(Path(__file__).with_name("relay.py"))


class SandboxRequired(BackendError):
    """``[sandbox] mode = "required"`` and no sandbox can be made: nothing runs."""

    title = "No sandbox"


@dataclass
class Sandbox:
    """The sandbox of one session's local spawns.

    Args:
        workspace: The workspace (its real path).
        mode: ``[sandbox] mode``.
        patterns: The secret places (``[security] forbidden_paths``).
        own_dirs: agent-tui's config and data folders, hidden whole.
        readable_again: Folders inside those that stay readable (the user's skills).
        writable: ``[sandbox] writable``: more folders the workspace columns may write.
        edit_network: ``[sandbox] network = "proxy"`` for auto-edit commands.
        hosts: The host policy the proxy applies.
        home: The home folder ``~`` means (None: this process's).
    """

    workspace: Path
    mode: SandboxMode = "auto"
    patterns: Sequence[str] = ()
    own_dirs: Sequence[Path] = ()
    readable_again: Sequence[Path] = ()
    writable: Sequence[str] = ()
    edit_network: bool = False
    hosts: HostPolicy | None = None
    home: str | None = field(default_factory=lambda: os.path.expanduser("~"))
    on_refused: Callable[[Refusal], None] | None = None
    bwrap: str | None = None
    """The ``bwrap`` found and probed by ``start`` (None: no sandbox)."""
    unavailable: str | None = None
    """Why there is no sandbox (None while there is one, or before ``start``)."""
    network: bool = True
    """The host-policy proxy reaches this sandbox (a remote host's does not yet)."""
    approval_mode: Callable[[], ApprovalMode] = lambda: ApprovalMode.ASK
    """The session's mode now (the composition root points it at the policy)."""
    _proxy: HostProxy | None = field(default=None, repr=False)
    _started: bool = False
    _empty: str = "/dev/null"
    _no_userns: bool = False

    async def start(self) -> str | None:
        """Find and try ``bwrap`` once; what the person should hear about it (None: nothing).

        With ``mode = "required"`` and no bubblewrap it says so, and every spawn is refused.
        """
        if self._started:
            return None
        self._started = True
        if self.mode == "off":
            self.unavailable = 'the sandbox is off ([sandbox] mode = "off")'
            return f"{self.unavailable}: commands run unconfined and the rater alone decides"
        found = find_bwrap(self.workspace)
        if found is None:
            problem: str | None = "bubblewrap (bwrap) is not installed"
        else:  # both at once: this is on the way to the first frame
            problem, self._no_userns = await asyncio.gather(probe(found), probe_no_userns(found))
        if found is not None and problem is None:
            self.bwrap = found
            self._empty = _empty_file()
            return None
        self.unavailable = problem
        if self.mode == "required":
            return f'no sandbox: {problem}; [sandbox] mode = "required": no command will run'
        return f"no sandbox: {problem}. The rater alone decides what runs (install bubblewrap)"

    @property
    def active(self) -> bool:
        return self.bwrap is not None

    @property
    def status(self) -> str:
        """One short phrase for the status bar and the mirror title."""
        if self.active:
            return self.base().label
        return "no sandbox"

    def facts(self) -> SandboxFacts:
        """What the policy needs: whether commands are confined, and how to say it."""
        absent = (
            f"no sandbox: the rater decides ({self.unavailable})"
            if self.unavailable
            else ("no sandbox: the rater decides")
        )
        return SandboxFacts(
            active=self.active, edit_network=self.edit_network, absent=absent, network=self.network
        )

    def base(self) -> Confinement:
        """What runs unasked in the session's mode may do: the shared shell's walls."""
        walls = mode_confinement(self.approval_mode(), edit_network=self.edit_network)
        return walls if self.network else walls.offline()

    async def wrap(
        self,
        command: Sequence[str],
        confinement: Confinement | None = None,
        *,
        cwd: str | None = None,
        terminal: bool = False,
        status_fd: int | None = None,
    ) -> list[str]:
        """``command`` as it must be spawned: inside ``confinement`` (None: ``base()``).

        Without a sandbox the command comes back unchanged (``auto``/``off``); with
        ``required`` that never happens (``start`` refused). An ``outside`` confinement
        comes back unchanged too: only a person's yes produces one.

        Raises:
            SandboxRequired: required and not started or not available.
        """
        walls = confinement or self.base()
        if walls.outside:
            return list(command)
        if not self.network:
            walls = walls.offline()
        if self.bwrap is None:
            if self.mode == "required":
                raise SandboxRequired(
                    f"{self.unavailable or 'the sandbox was not started'}; "
                    '[sandbox] mode = "required" runs nothing without it'
                )
            return list(command)
        places = await self.places()
        proxy_socket = None
        if walls.network == "proxy":
            proxy_socket = await self.proxy().socket_path()
        return bwrap_argv(
            self.bwrap,
            walls,
            command,
            workspace=self.workspace,
            cwd=cwd,
            places=places,
            proxy_socket=proxy_socket,
            relay=[sys.executable, "-I", "-S", RELAY],
            terminal=terminal,
            empty_file=self._empty,
            no_userns=self._no_userns,
            status_fd=status_fd,
        )

    async def places(self) -> Places:
        """What to hide and protect, looked up now (this machine's file system)."""
        return find_places(
            patterns=self.patterns,
            home=self.home,
            own_dirs=self.own_dirs,
            readable_again=self.readable_again,
            workspace=self.workspace,
            writable=self.writable,
        )

    def confiner(self, walls: Confinement) -> Confine:
        """A ``Confine`` for programs of the person's own config (hooks, MCP servers): always
        ``walls``, whatever the mode (they are not the model's commands)."""

        async def confine(command: Sequence[str], cwd: str | None) -> list[str]:
            return await self.wrap(command, walls, cwd=cwd)

        return confine

    def proxy(self) -> HostProxy:
        """The host-policy proxy, made on first use."""
        if self._proxy is None:
            self._proxy = HostProxy(self.hosts or HostPolicy.from_lists(None, []), self.on_refused)
        return self._proxy

    def refusals_since(self, moment: float) -> list[Refusal]:
        """Connections the proxy refused since ``moment`` (``time.monotonic``)."""
        return self._proxy.refused_since(moment) if self._proxy is not None else []

    @staticmethod
    def now() -> float:
        return time.monotonic()

    async def close(self) -> None:
        if self._proxy is not None:
            await self._proxy.close()
        if self._empty != "/dev/null":
            remove_private_folder(os.path.dirname(self._empty))
            self._empty = "/dev/null"


def _empty_file() -> str:
    """A private empty read-only file, bound over the secret files a sandbox hides."""
    folder = private_folder("sandbox")
    path = os.path.join(folder, "empty")
    with open(path, "wb"):
        pass
    os.chmod(path, 0o444)
    return path

"""What a new pane runs: the shell, started inside the sandbox of the pane's confinement.

The watched shell lives on between commands, so whatever one command leaves in it (aliases,
functions, ``PROMPT_COMMAND``, ``PATH``, background jobs) runs again later. Starting the shell
itself inside the sandbox makes that harmless: nothing it runs can do more than its walls let
it. Every pane is tagged with its walls (``@agent_tui_sandbox``), and a command is only typed
into a pane whose walls are no wider than what the command was approved for.
"""

from __future__ import annotations

import os
import pwd
import shlex

from tui.exec.backend import BackendError
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.tmux.control import ControlClient, quote
from tui.security.confinement import Confinement

SANDBOX_OPTION = "@agent_tui_sandbox"
"""A pane's walls (``Confinement.key``), so a later agent re-attaching knows them too."""


def login_shell() -> list[str]:
    """The person's own shell as a login shell, as tmux would start it."""
    shell = os.environ.get("SHELL") or ""
    if not shell:
        try:
            shell = pwd.getpwuid(os.getuid()).pw_shell
        except KeyError:
            shell = ""
    return [shell or "/bin/sh", "-l"]


class PaneShells:
    """Builds the command line of each new pane, and checks a pane against a call's walls.

    Args:
        shell: The shell command line panes run (``bash --norc``); None: the login shell.
        sandbox: The session's sandbox; None or inactive: panes run ``shell`` as it is.
    """

    def __init__(self, shell: str | None, sandbox: Sandbox | None) -> None:
        self.shell = shell
        self.sandbox = sandbox

    @property
    def active(self) -> bool:
        return self.sandbox is not None and self.sandbox.active

    def base(self) -> Confinement | None:
        """The shared pane's walls in the session's mode now (None: no sandbox)."""
        return self.sandbox.base() if self.sandbox is not None and self.active else None

    async def command(self, confinement: Confinement | None, cwd: str | None) -> str | None:
        """The pane command for ``confinement`` (None: the mode's), or ``shell`` unconfined."""
        if self.sandbox is None or not self.active:
            if self.sandbox is not None and self.sandbox.mode == "required":
                await self.sandbox.wrap(["true"])  # raises: required and not available
            return self.shell
        walls = confinement or self.sandbox.base()
        argv = shlex.split(self.shell) if self.shell else login_shell()
        if walls.outside:
            return shlex.join(argv)
        wrapped = await self.sandbox.wrap(argv, walls, cwd=cwd, terminal=True)
        return "exec " + shlex.join(wrapped)

    @staticmethod
    async def tag(client: ControlClient, pane_id: str, walls: Confinement | None) -> None:
        """Record ``walls`` on the pane (nothing without a sandbox)."""
        if walls is not None:
            await client.command(f"set-option -p -t {pane_id} {SANDBOX_OPTION} {quote(walls.key)}")

    @staticmethod
    async def read_tag(client: ControlClient, pane_id: str) -> Confinement | None:
        (line,) = await client.command(f"display-message -p -t {pane_id} '#{{{SANDBOX_OPTION}}}'")
        return Confinement.from_key(line)

    def check(self, pane_walls: Confinement | None, call: Confinement | None, pane_id: str) -> None:
        """Refuse to type into a pane whose walls are wider than the call was approved for.

        Raises:
            BackendError: the pane is unconfined, confined more loosely, or of unknown walls.
        """
        if not self.active:
            return
        wanted = call or self.base()
        if wanted is None:
            return
        if pane_walls is None:
            raise BackendError(
                f"pane {pane_id} was not started by this agent's sandbox (its walls are unknown): "
                "nothing is typed into it; use the shared pane or one made with tmux_create_pane"
            )
        if not wanted.covers(pane_walls):
            raise BackendError(
                f"pane {pane_id} runs {pane_walls.label}; this call was approved for "
                f"{wanted.label}, so nothing is typed there"
            )

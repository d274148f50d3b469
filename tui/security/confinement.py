"""What the kernel lets one command do: the sandbox column of each approval mode.

The risk rater explains a command to the person and decides what ask mode asks; it cannot be
the promise, because a shell is a programming language. The promise is kept below it: every
command runs inside a bubblewrap sandbox (``tui/exec/sandbox``) whose walls come from here.

    | mode                       | files                        | network                    |
    | read-only, ask (unasked)   | nothing writable but a tmp   | none                       |
    | auto-edit, ask (approved)  | the workspace, not its       | none, unless [sandbox]     |
    |                            | control files                | network = "proxy"          |
    | full-auto                  | same as auto-edit            | through the host policy    |

Secret places are hidden in every column. Going outside the sandbox is never a mode: it is one
command a person approved after reading "runs OUTSIDE the sandbox". Where each command has a
sandbox of its own (``SandboxFacts.per_command``), one that needs no network
(``tui.security.offline``) gets its column without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tui.security.permissions import ApprovalMode

Files = Literal["read-only", "workspace"]
Network = Literal["none", "proxy"]

_FILE_RANK = {"read-only": 0, "workspace": 1}
_NET_RANK = {"none": 0, "proxy": 1}

APPROVED_HOW = frozenset({"approved", "approved_always", "grant", "rule", "hook"})
"""How a call got through when a person (now, earlier through a grant, or in their own config)
said yes to it rather than the mode letting it pass unasked."""

OUTSIDE_WARNING = "runs OUTSIDE the sandbox: can write anywhere you can, reach any host"
"""The plain words every question about going outside carries."""


@dataclass(frozen=True)
class Confinement:
    """The walls around one command (or one pane's shell, and so every command typed there)."""

    files: Files = "read-only"
    network: Network = "none"
    outside: bool = False
    """No sandbox at all: only ever for a command a person approved as going outside."""

    @property
    def label(self) -> str:
        """Where the command runs, in the words the modal, the tool block and headless use."""
        if self.outside:
            return "OUTSIDE the sandbox"
        files = "read-only" if self.files == "read-only" else "workspace"
        network = "no network" if self.network == "none" else "network through the host policy"
        return f"sandbox: {files}, {network}"

    @property
    def key(self) -> str:
        """A short stable name (tmux pane tags, window names): ``ro``, ``ws``, ``ws+net``."""
        if self.outside:
            return "outside"
        base = "ro" if self.files == "read-only" else "ws"
        return base + ("+net" if self.network == "proxy" else "")

    @classmethod
    def from_key(cls, key: str) -> Confinement | None:
        """The confinement a ``key`` names, or None for anything else."""
        return _BY_KEY.get(key.strip())

    def offline(self) -> Confinement:
        """The same walls with no network (where no proxy reaches the sandbox)."""
        if self.outside or self.network == "none":
            return self
        return Confinement(self.files, "none")

    def covers(self, other: Confinement) -> bool:
        """True when this lets a command do at least everything ``other`` lets it do.

        A shell confined by ``self`` may run a command approved for ``other`` only when
        ``other.covers(self)``: the shell's walls are no wider than what was approved.
        """
        if self.outside:
            return True
        if other.outside:
            return False
        return (
            _FILE_RANK[self.files] >= _FILE_RANK[other.files]
            and _NET_RANK[self.network] >= _NET_RANK[other.network]
        )


READ_ONLY = Confinement("read-only", "none")
WORKSPACE = Confinement("workspace", "none")
WORKSPACE_NET = Confinement("workspace", "proxy")
OUTSIDE = Confinement("workspace", "proxy", outside=True)
_BY_KEY = {c.key: c for c in (READ_ONLY, WORKSPACE, WORKSPACE_NET, OUTSIDE)}

OWN_COMMAND = OUTSIDE
"""For agent-tui's own fixed commands on a target (its tmux servers' lifecycle, the home folder,
the sandbox probe): never the model's or a person's command, so never wrapped, and never
anything but those fixed scripts."""


def mode_confinement(mode: ApprovalMode, *, edit_network: bool = False) -> Confinement:
    """What runs unasked in ``mode`` may do: the shared shell's walls.

    Args:
        mode: The session's approval mode.
        edit_network: ``[sandbox] network = "proxy"``: auto-edit commands may reach the
            network through the host policy.
    """
    if mode in (ApprovalMode.READ_ONLY, ApprovalMode.ASK):
        return READ_ONLY
    if mode is ApprovalMode.AUTO_EDIT:
        return WORKSPACE_NET if edit_network else WORKSPACE
    return WORKSPACE_NET


def call_confinement(
    mode: ApprovalMode, how: str, *, outside: bool = False, edit_network: bool = False
) -> Confinement:
    """The walls for one call the policy let through.

    Args:
        mode: The approval mode it was judged in.
        how: How it got through (``Authorization.how``): ``mode`` when nobody said yes.
        outside: A person approved running it outside the sandbox.
        edit_network: As for ``mode_confinement``.
    """
    if outside:
        return OUTSIDE
    base = mode_confinement(mode, edit_network=edit_network)
    if mode is ApprovalMode.ASK and how in APPROVED_HOW:
        # A yes in ask mode gives what auto-edit gives unasked, never more.
        return mode_confinement(ApprovalMode.AUTO_EDIT, edit_network=edit_network)
    return base


@dataclass(frozen=True)
class SandboxFacts:
    """What the policy needs to know of the sandbox the commands will meet.

    The sandbox itself lives with the backends (``tui/exec/sandbox``); the policy only labels
    calls and decides what going outside asks, so these facts are all it holds.
    """

    active: bool = False
    """Commands on this target run inside bubblewrap."""
    edit_network: bool = False
    """``[sandbox] network = "proxy"``: auto-edit commands reach the network (host policy)."""
    absent: str = "no sandbox: the rater decides"
    """What the modal and tool blocks say where there is no sandbox (and why)."""
    network: bool = True
    """The host-policy proxy reaches these sandboxes; without it no column has network."""
    per_command: bool = False
    """Each command gets a sandbox of its own (not a shared pane's shell): one that needs no
    network (``tui.security.offline``) is given none."""

    def mode_confinement(self, mode: ApprovalMode) -> Confinement:
        walls = mode_confinement(mode, edit_network=self.edit_network)
        return walls if self.network else walls.offline()

    def call_confinement(self, mode: ApprovalMode, how: str, *, outside: bool) -> Confinement:
        walls = call_confinement(mode, how, outside=outside, edit_network=self.edit_network)
        return walls if self.network else walls.offline()

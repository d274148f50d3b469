"""The life of an instance's own tmux session: found or named at start, closed or kept at quit.

Each app instance and each headless ``--tmux`` run gets a session of its own, started in its
workspace, so two workspaces or two instances never type into one shell. The session carries
two user options beside the owner tag: ``@agent_tui_workspace`` (the workspace's real path)
and ``@agent_tui_kept`` (set by ``/pane keep`` or ``[tmux] keep_session``). At quit a session
that is not kept is killed; a kept one stays and the next start in the same workspace takes it
back, unless another agent-tui already holds it (a control-mode client is attached).

On this machine the server is read and told through libtmux (blocking: in a thread); on a
container or SSH host, where only the host backend can reach tmux, through the tmux command
line run there, and through the control client for a session already attached.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.exec.backend import ExecutionBackend
from tui.exec.local import LocalBackend
from tui.exec.tmux.control import ControlClient, ControlClosed, TmuxCommandError, quote
from tui.exec.tmux.libtmux_loader import load_libtmux
from tui.exec.tmux.naming import fresh_session_name
from tui.exec.tmux.owner import HOST_OPTION, PID_OPTION, START_OPTION, Owner
from tui.exec.tmux.sessions import OWNER_OPTION
from tui.security.confinement import OWN_COMMAND

WORKSPACE_OPTION = "@agent_tui_workspace"
KEPT_OPTION = "@agent_tui_kept"

_SEP = "\t"
_SESSIONS = _SEP.join(
    [
        "#{session_name}",
        f"#{{{OWNER_OPTION}}}",
        f"#{{{WORKSPACE_OPTION}}}",
        f"#{{{KEPT_OPTION}}}",
        "#{session_created}",
        f"#{{{HOST_OPTION}}}",
        f"#{{{PID_OPTION}}}",
        f"#{{{START_OPTION}}}",
    ]
)
_CLIENTS = _SEP.join(["#{session_name}", "#{client_control_mode}"])
_CLIENTS_MARK = "--atui-clients--"


@dataclass(frozen=True)
class Place:
    """Where the agent's tmux server is: the host, its socket and config, the client's env."""

    host: ExecutionBackend
    socket_name: str
    config: str | None = None
    env: Mapping[str, str] | None = None

    @property
    def local(self) -> bool:
        return isinstance(self.host, LocalBackend)

    def argv(self, *args: str) -> list[str]:
        """A ``tmux`` command line on the socket, never nested in the person's own tmux.

        ``-u``: a client that does not believe its locale is UTF-8 (an SSH login or a container
        exec with no ``LANG``) gets every reply sanitised, tabs and non-ASCII turned into
        ``_``, which breaks the tab-separated formats read here and mangles workspace paths.
        """
        argv = ["env", "-u", "TMUX", "-u", "TMUX_PANE", "tmux", "-u", "-L", self.socket_name]
        if self.config:
            argv += ["-f", self.config]
        return [*argv, *args]

    def socket_path(self) -> str:
        """The socket file on this machine, found as tmux finds it from the client's env."""
        env = os.environ if self.env is None else self.env
        folder = env.get("TMUX_TMPDIR") or "/tmp"
        return os.path.join(folder, f"tmux-{os.getuid()}", self.socket_name)

    def server(self) -> Any:
        """A libtmux ``Server`` on the socket (this machine only; calls block)."""
        libtmux = load_libtmux()
        return libtmux.Server(socket_path=self.socket_path(), config_file=self.config)


@dataclass(frozen=True)
class ServerSession:
    """One session on the agent's socket, as the lifecycle sees it."""

    name: str
    owner: str
    workspace: str
    kept: bool
    created: int
    held: bool
    """An agent-tui (a control-mode client) is attached to it now."""
    agent: Owner | None = None
    """The agent-tui process that made it (None: not recorded)."""


@dataclass(frozen=True)
class Choice:
    """The session an instance will use, and what to tell the person about it."""

    name: str
    reattached: bool = False
    notice: str | None = None


async def choose_session(
    place: Place,
    *,
    owner: str,
    workspace: str,
    fixed: str | None = None,
) -> Choice:
    """Our kept, unheld session of ``workspace`` if there is one, else a fresh name.

    ``fixed`` (a ``[tmux] session`` the person set) is used as is: they chose to share it.
    """
    if fixed:
        return Choice(fixed)
    listed = await list_server(place)
    for info in sorted(listed, key=lambda s: s.created, reverse=True):
        if info.owner == owner and info.workspace == workspace and info.kept and not info.held:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created))
            return Choice(
                info.name,
                reattached=True,
                notice=(
                    f"re-attached the kept session {info.name} from {when} (its shell, "
                    "directory and history as they were left); /pane close lets it close "
                    "when you quit"
                ),
            )
    return Choice(fresh_session_name(workspace, {info.name for info in listed}))


async def list_server(place: Place) -> list[ServerSession]:
    """Every session on the socket (none when no server runs), with who holds it."""
    if place.local:
        sessions, clients = await asyncio.to_thread(_list_local, place)
    else:
        sessions, clients = await _list_remote(place)
    held = set()
    for line in clients:
        name, _, control = line.partition(_SEP)
        if control == "1":
            held.add(name)
    found = []
    for line in sessions:
        parts = line.split(_SEP)
        if len(parts) != 8:
            continue
        name, owner, workspace, kept, created, host, pid, start = parts
        found.append(
            ServerSession(
                name,
                owner,
                workspace,
                kept == "1",
                int(created) if created.isdigit() else 0,
                name in held,
                Owner.parse(host, pid, start),
            )
        )
    return found


def _list_local(place: Place) -> tuple[list[str], list[str]]:
    server = place.server()
    sessions = server.cmd("list-sessions", "-F", _SESSIONS)
    if sessions.returncode != 0:
        return [], []  # no server: nothing kept, any name is free
    clients = server.cmd("list-clients", "-F", _CLIENTS)
    return list(sessions.stdout), list(clients.stdout)


async def _list_remote(place: Place) -> tuple[list[str], list[str]]:
    script = (
        f"{shlex.join(place.argv('list-sessions', '-F', _SESSIONS))} 2>/dev/null; "
        f"echo {_CLIENTS_MARK}; "
        f"{shlex.join(place.argv('list-clients', '-F', _CLIENTS))} 2>/dev/null; true"
    )
    result = await place.host.run(script, timeout=30, confinement=OWN_COMMAND)
    before, _, after = result.stdout.partition(_CLIENTS_MARK + "\n")
    return before.splitlines(), after.splitlines()


async def tag_session(
    client: ControlClient, session: str, *, workspace: str | None, kept: bool
) -> None:
    """Mark ``session`` as this workspace's and this process's (``owner``: the next start
    tells a leftover by it); mark it kept when asked (never unmark here)."""
    target = quote(f"={session}:")
    me = Owner.me()
    lines = [
        f"set-option -t {target} {HOST_OPTION} {quote(me.host)}",
        f"set-option -t {target} {PID_OPTION} {me.pid}",
        f"set-option -t {target} {START_OPTION} {me.start}",
    ]
    if workspace:
        lines.append(f"set-option -t {target} {WORKSPACE_OPTION} {quote(workspace)}")
    if kept:
        lines.append(f"set-option -t {target} {KEPT_OPTION} 1")
    if lines:
        for reply in await client.commands(lines):
            reply.check()


async def set_kept(client: ControlClient, session: str, kept: bool) -> None:
    target = quote(f"={session}:")
    if kept:
        await client.command(f"set-option -t {target} {KEPT_OPTION} 1")
    else:
        await client.command(f"set-option -u -t {target} {KEPT_OPTION}")


async def is_kept(client: ControlClient, session: str) -> bool:
    try:
        lines = await client.command(
            f"display-message -p -t {quote(f'={session}:')} '#{{{KEPT_OPTION}}}'"
        )
    except (TmuxCommandError, ValueError):
        return False
    return bool(lines) and lines[0].strip() == "1"


async def ending_sessions(place: Place, owner: str, names: Sequence[str]) -> list[str]:
    """At quit: which of ``names`` (the instance's session first) to end — all of those
    carrying our owner tag, none when the instance's own session is kept."""
    if not names:
        return []
    listed = {info.name: info for info in await list_server(place)}
    own = listed.get(names[0])
    if own is None or own.owner != owner or own.kept:
        return []
    return [name for name in names if name in listed and listed[name].owner == owner]


async def end_sessions(
    place: Place, owner: str, names: Sequence[str], *, client: ControlClient | None = None
) -> list[str]:
    """Kill what ``ending_sessions`` picks; returns the names killed. (``TmuxBackend.close``
    stops what runs in their panes first: ``teardown``.)"""
    doomed = await ending_sessions(place, owner, names)
    await kill_sessions(place, doomed, client=client)
    return doomed


async def kill_sessions(
    place: Place,
    names: Sequence[str],
    *,
    client: ControlClient | None = None,
) -> None:
    """Kill ``names`` (already known to be ours): libtmux here, the control client elsewhere.

    Through the client, last first: the first is the instance's own session, the one the
    client is attached to, and killing it ends the client. Whatever the client could not
    reach (it closed under us) goes through the tmux command line on the host.
    """
    if not names:
        return
    if place.local:
        await asyncio.to_thread(_kill_local, place, list(names))
        return
    left = list(names)
    if client is not None and client.is_open:
        while left:
            try:
                await client.command(f"kill-session -t {quote(f'={left[-1]}')}")
            except (TmuxCommandError, ValueError):
                pass  # gone already
            except ControlClosed:
                break
            left.pop()
    if left:
        script = "; ".join(shlex.join(place.argv("kill-session", "-t", f"={n}")) for n in left)
        await place.host.run(script + " 2>/dev/null; true", timeout=30, confinement=OWN_COMMAND)


def _kill_local(place: Place, names: list[str]) -> None:
    server = place.server()
    for name in names:
        server.cmd("kill-session", "-t", f"={name}")


def attach_command(place: Place, session: str) -> str:
    """The command a person types in another terminal to watch or join ``session``.

    On this machine the socket is named by its path (``-S``): ``-L`` would depend on the
    ``TMUX_TMPDIR`` of the terminal it is typed in.
    """
    if place.local:
        return shlex.join(["tmux", "-S", place.socket_path(), "attach", "-t", f"={session}"])
    command = shlex.join(["tmux", "-L", place.socket_name, "attach", "-t", f"={session}"])
    return f"{command}   (on {place.host.actor})"

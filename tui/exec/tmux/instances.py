"""A tmux server per instance, and the leftovers of instances that died, swept at start.

Why a server per instance, not one shared server with starts taken in turn: tmux 3.3a's server
crashes when several control clients create sessions on it at once (agent-tui instances
started within milliseconds of each other: 10 of 10 failed, and a running instance lost its
shell with the server). Taking starts in turn would avoid that one race, but one server would
still be one fate: any crash of it, this bug or the next, ends every instance's shell at once.
A server of its own per instance (socket ``agent-tui-<id>`` beside the base ``agent-tui``)
starts in a few milliseconds and costs one small process, and no instance can disturb
another's. Only a session the person fixes by name (``[tmux] session``), which they chose to
share, lives on the base socket, and starting it is serialised by a lock file there.

At every start the servers on our sockets are looked at. A session whose agent-tui process is
gone (``Owner``) and that was not kept is a leftover: whatever still runs in its panes'
sessions is stopped, detached jobs included, then the session is killed, and the person is
told what was swept. A kept session of the same workspace that nobody holds is taken back
(``choose_session``), its shell, directory and history as they were left; at quit an
instance's sessions end unless its own is kept (``ending_sessions``). The same look works over
SSH and in a container, through the host backend, which is how a remote leftover of a dropped
connection is swept on the next connection.
"""

from __future__ import annotations

import os
import shlex
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tui.exec.backend import ExecutionBackend
from tui.exec.local import LocalBackend
from tui.exec.tmux.control import ControlClient
from tui.exec.tmux.server import (
    Place,
    ServerSession,
    kill,
    kill_sessions,
    list_server,
    remove_if_dead,
    server_creator,
    stop_panes,
)
from tui.exec.tmux.sessions import Owner, fresh_session_name, instance_id
from tui.security.confinement import OWN_COMMAND


@dataclass
class Server:
    """One of our sockets and the sessions on it."""

    socket: str
    sessions: list[ServerSession] = field(default_factory=list)
    creator: Owner | None = None
    """The agent-tui that started the server, asked only when a session lacks its marks."""


@dataclass(frozen=True)
class Choice:
    """The session an instance will use, and what to tell the person about it."""

    name: str
    reattached: bool = False
    notice: str | None = None


@dataclass(frozen=True)
class Instance:
    """Where this instance's session lives, and what the start found to tell the person."""

    socket: str
    choice: Choice
    notices: list[str]


def instance_socket(base: str, taken: set[str]) -> str:
    """``agent-tui-3f2a9c1b``: a socket of its own, beside the base one."""
    while True:
        name = f"{base}-{instance_id()}{instance_id()}"
        if name not in taken:
            return name


async def open_instance(
    host: ExecutionBackend,
    base: str,
    env: Mapping[str, str] | None,
    *,
    owner: str,
    workspace: str,
    fixed: str | None = None,
) -> Instance:
    """Sweep leftovers, then take this workspace's kept session if one waits, else a new
    server of its own. ``fixed`` (a ``[tmux] session`` the person named, to share) lives on
    the base socket and is used as is."""
    servers = await survey(host, base, env)
    notices = await sweep(host, servers, owner=owner, base=base, env=env)
    if fixed:
        return Instance(base, Choice(fixed), notices)
    for server in servers:
        kept = _kept_choice(server.sessions, owner, workspace)
        if kept is not None:
            return Instance(server.socket, kept, notices)
    socket = instance_socket(base, {server.socket for server in servers})
    return Instance(socket, Choice(fresh_session_name(workspace, set())), notices)


async def choose_session(
    place: Place,
    *,
    owner: str,
    workspace: str,
    fixed: str | None = None,
) -> Choice:
    """On one server: our kept, unheld session of ``workspace`` if there is one, else a fresh
    name. ``fixed`` (a ``[tmux] session`` the person set) is used as is."""
    if fixed:
        return Choice(fixed)
    listed = await list_server(place)
    kept = _kept_choice(listed, owner, workspace)
    if kept is not None:
        return kept
    return Choice(fresh_session_name(workspace, {info.name for info in listed}))


def _kept_choice(sessions: list[ServerSession], owner: str, workspace: str) -> Choice | None:
    """The newest kept session of ours for ``workspace`` that nobody holds, to take back."""
    for info in sorted(sessions, key=lambda s: s.created, reverse=True):
        if info.owner == owner and info.workspace == workspace and info.kept and not _held(info):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created))
            notice = (
                f"re-attached the kept session {info.name} from {when} (its shell, "
                "directory and history as they were left); /pane close lets it close "
                "when you quit"
            )
            return Choice(info.name, reattached=True, notice=notice)
    return None


def _held(info: ServerSession) -> bool:
    """An agent-tui holds the session: a control client is attached and the agent-tui that
    marked it last is not known to be gone (a SIGKILLed one's client can linger attached)."""
    return info.held and (info.agent is None or info.agent.alive() is not False)


async def survey(host: ExecutionBackend, base: str, env: Mapping[str, str] | None) -> list[Server]:
    """Every server on our sockets (the base one and ``base-*``) with its sessions."""
    servers = []
    for socket_name in await our_sockets(host, base, env):
        place = Place(host, socket_name, env=env)
        sessions = await list_server(place)
        if not sessions and socket_name != base:
            await remove_if_dead(place)  # tmux leaves the file of a server that ended
            continue
        creator = None
        if socket_name != base and any(not i.owner or i.agent is None for i in sessions):
            creator = await server_creator(place)
        servers.append(Server(socket_name, sessions, creator))
    return servers


async def our_sockets(
    host: ExecutionBackend, base: str, env: Mapping[str, str] | None
) -> list[str]:
    if isinstance(host, LocalBackend):
        folder = os.path.dirname(Place(host, base, env=env).socket_path())
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        return sorted(
            name
            for name in names
            if (name == base or name.startswith(base + "-")) and _is_socket(folder, name)
        )
    script = (
        'd="${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)"; '
        f'for f in "$d"/{shlex.quote(base)} "$d"/{shlex.quote(base)}-*; do '
        '[ -S "$f" ] && basename "$f"; done; true'
    )
    result = await host.run(script, timeout=30, confinement=OWN_COMMAND)
    return sorted({line.strip() for line in result.stdout.splitlines() if line.strip()})


def _is_socket(folder: str, name: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(os.path.join(folder, name)).st_mode)
    except OSError:
        return False


def leftovers(server: Server, *, owner: str, shared: bool) -> list[ServerSession]:
    """The sessions of ``server`` whose agent-tui process is gone, and not kept.

    The process mark decides, not whether a control client is attached: the client of a
    SIGKILLed agent-tui can linger attached. A session marked by an agent-tui on another
    machine is never judged from here (it may be alive and about to reconnect).

    On an instance's own server every session is that instance's (those its tools created
    carry no mark of their own), so they go together, and a kept one spares them all. On
    the ``shared`` base socket each session is judged by itself.
    """
    ours = [info for info in server.sessions if info.owner == owner]
    if not shared:
        if any(info.kept for info in server.sessions):
            return []
        if len(ours) == len(server.sessions):
            agents = {info.agent for info in ours if info.agent is not None}
            if agents and all(agent.alive() is False for agent in agents):
                return ours
        # A start killed before it marked its session: the server names who started it.
        creator = server.creator
        if creator is None or creator.alive() is not False:
            return []
        unmarked_or_dead = all(
            info.owner in ("", owner) and (info.agent is None or info.agent.alive() is False)
            for info in server.sessions
        )
        return list(server.sessions) if unmarked_or_dead else []
    return [
        info
        for info in ours
        if not info.kept and info.agent is not None and info.agent.alive() is False
    ]


async def sweep(
    host: ExecutionBackend,
    servers: list[Server],
    *,
    owner: str,
    base: str,
    env: Mapping[str, str] | None,
) -> list[str]:
    """Stop and kill every leftover; one notice per server swept (what ran there too)."""
    notices = []
    for server in servers:
        doomed = leftovers(server, owner=owner, shared=server.socket == base)
        if not doomed:
            continue
        place = Place(host, server.socket, env=env)
        names = [info.name for info in doomed]
        pid = next((info.server_pid for info in server.sessions if info.server_pid), None)
        stopped = await stop_panes(place, names)
        await kill(place, names, everything=len(doomed) == len(server.sessions), server_pid=pid)
        server.sessions = [info for info in server.sessions if info not in doomed]
        agent = next((info.agent for info in doomed if info.agent), None) or server.creator
        who = f" (agent-tui {agent.describe()}, no longer running)" if agent else ""
        ran = f"; stopped what still ran there: {', '.join(stopped)}" if stopped else ""
        notices.append(
            f"swept {len(names)} tmux session(s) left by an agent-tui that ended without "
            f"closing them{who}: {', '.join(names)}{ran}"
        )
    return notices


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
    stops what runs in their panes first: ``server.stop_panes``.)"""
    doomed = await ending_sessions(place, owner, names)
    await kill_sessions(place, doomed, client=client)
    return doomed


__all__ = [
    "Choice",
    "Instance",
    "Server",
    "choose_session",
    "end_sessions",
    "ending_sessions",
    "instance_socket",
    "leftovers",
    "open_instance",
    "our_sockets",
    "survey",
    "sweep",
]

"""The agent's tmux server on its host: where it is, its control clients, ending what it holds.

``Place`` is a server as the host reaches it: the host backend, the socket (``tmux -L``), the
config and the client's environment. On this machine the server is read and told through
libtmux (blocking: in a thread); on a container or SSH host, where only the host backend can
reach tmux, through the tmux command line run there, and through the control client for a
session already attached.

**Control clients** (``ClientPool``): tmux sends a control client ``%output`` only for panes of
the session it is attached to, so each managed session gets a ``tmux -C`` of its own, started
through the host's ``spawn``. The pool attaches to a session (or creates it, saying why: the
server had stopped, or the session was gone), refuses a session that is not tagged with our
owner, and keeps the clients by session name. A server shared by instances (a ``[tmux]
session`` the person named) is attached to and created in turns: tmux 3.3a's server crashes
when several control clients create sessions on it at once, so that is done holding an
exclusive ``flock`` on a file beside the socket (``start_turn``), for milliseconds, released
by the kernel if the holder dies.

**Ending sessions.** Killing a tmux session sends its panes' shells SIGHUP, and a shell passes
it on to its jobs, but whatever left the shell's jobs (``(sleep 300 &)``, ``nohup``, a
daemonising server) lives on. Each pane's shell is a session leader, so its session holds all
of that: ``stop_panes`` stops every process in those sessions first, so a closed or swept
session leaves nothing running (only a ``setsid`` escapes). A server's socket file goes when
its last session does (``forget_server``): tmux 3.3a leaves it behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import random
import shlex
import socket
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.exec import procs
from tui.exec.backend import ExecutionBackend
from tui.exec.local import LocalBackend
from tui.exec.streams import KILL_GRACE
from tui.exec.tmux.control import ControlClient, ControlClosed, TmuxCommandError, quote
from tui.exec.tmux.sessions import (
    CREATOR_VARIABLE,
    HOST_OPTION,
    KEPT_OPTION,
    OWNER_OPTION,
    PID_OPTION,
    PLACEHOLDER,
    START_OPTION,
    WORKSPACE_OPTION,
    Owner,
    load_libtmux,
    session_owner,
)
from tui.exec.tmux_pane import NotOurs
from tui.security.confinement import OWN_COMMAND

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
        "#{pid}",
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
        """A ``tmux`` command line on the socket, never nested in the person's own tmux, and
        naming this agent-tui to a server it starts (``CREATOR_VARIABLE``).

        ``-u``: a client that does not believe its locale is UTF-8 (an SSH login or a container
        exec with no ``LANG``) gets every reply sanitised, tabs and non-ASCII turned into
        ``_``, which breaks the tab-separated formats read here and mangles workspace paths.
        """
        argv = ["env", "-u", "TMUX", "-u", "TMUX_PANE", f"{CREATOR_VARIABLE}={Owner.me().token()}"]
        argv += ["tmux", "-u", "-L", self.socket_name]
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
    server_pid: int | None = None
    """The tmux server's, on its host."""


async def server_creator(place: Place) -> Owner | None:
    """The agent-tui that started the server on ``place``; None when it does not say."""
    script = f"{shlex.join(place.argv('show-environment', '-g', CREATOR_VARIABLE))} 2>/dev/null"
    result = await place.host.run(script + "; true", timeout=30, confinement=OWN_COMMAND)
    name, _, value = result.stdout.strip().partition("=")
    return Owner.from_token(value) if name == CREATOR_VARIABLE else None


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
        if len(parts) != 9:
            continue
        name, owner, workspace, kept, created, host, pid, start, server = parts
        found.append(
            ServerSession(
                name,
                owner,
                workspace,
                kept == "1",
                int(created) if created.isdigit() else 0,
                name in held,
                Owner.parse(host, pid, start),
                int(server) if server.isdigit() else None,
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


# -- stopping what runs in a session, forgetting a server ---------------------------------------

_PANES = "#{session_name}\t#{pane_pid}"


async def stop_panes(place: Place, sessions: list[str]) -> list[str]:
    """Stop everything running in the panes of ``sessions``: each pane's shell is a session
    leader, so its session holds whatever the commands started, detached jobs too (only a
    ``setsid`` escapes). Returns what was running, as ``sleep 300 (pid 1234)``."""
    wanted = set(sessions)
    pids = []
    for line in await _tmux_lines(place, "list-panes", "-a", "-F", _PANES):
        name, _, pid = line.partition("\t")
        if name in wanted and pid.isdigit():
            pids.append(int(pid))
    if not pids:
        return []
    if place.local:
        found = await asyncio.to_thread(procs.in_sessions, pids)
        ran = await asyncio.to_thread(procs.left_by_commands, found, pids)
        await procs.stop(found, grace=KILL_GRACE)
        return [proc.describe() for proc in ran]
    return await _stop_remote(place.host, pids)


async def _stop_remote(host: ExecutionBackend, sids: list[int]) -> list[str]:
    listed = " ".join(str(sid) for sid in sids)
    script = (
        f'for s in {listed}; do ps -o pid=,args= -s "$s" 2>/dev/null; done; '
        f'for s in {listed}; do pkill -TERM -s "$s" 2>/dev/null; done; sleep {KILL_GRACE}; '
        f'for s in {listed}; do pkill -KILL -s "$s" 2>/dev/null; done; true'
    )
    result = await host.run(script, timeout=30, confinement=OWN_COMMAND)
    running = []
    for line in result.stdout.splitlines():
        pid, _, args = line.strip().partition(" ")
        if pid.isdigit() and int(pid) not in sids:
            running.append(f"{' '.join(args.split())[:60]} (pid {pid})")
    return running


SERVER_END_WAIT = 2.0
"""Seconds a server told ``kill-server`` has to end before it is killed."""
REMOTE_SOCKETS = '"${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)"'  # a host's tmux sockets, as its shell sees


async def kill(
    place: Place, names: list[str], *, everything: bool, server_pid: int | None = None
) -> None:
    """End the sessions ``names``, or the whole server (its pid read before its panes were
    stopped: a server whose last pane ended is already ending, and answers nothing)."""
    if everything:
        await _kill_server(place, server_pid)
        return
    for name in names:
        await _tmux_lines(place, "kill-session", "-t", f"={name}")


async def _kill_server(place: Place, pid: int | None) -> None:
    """``kill-server``; the server is gone before its socket file goes. tmux 3.3a's server, told
    to end (or left with no session), waits for each client to take its exit, refusing all
    connections meanwhile; a SIGKILLed agent-tui's control client can linger and never take it:
    the server is killed if not ended in ``SERVER_END_WAIT`` s (its client then ends too)."""
    if not place.local:
        await place.host.run(_remote_kill_server(place, pid), timeout=30, confinement=OWN_COMMAND)
        return
    server = None if pid is None else await asyncio.to_thread(procs.read, pid)
    await _tmux_lines(place, "kill-server")
    if server is not None and f" -L {place.socket_name} " in f" {server.command} ":
        await procs.stop([server], grace=SERVER_END_WAIT)
    remove_stale(place)


def _remote_kill_server(place: Place, pid: int | None) -> str:
    """``_kill_server`` as a host's shell does it; the command line in ``/proc`` must still
    name the socket, so a pid reused meanwhile is left alone."""
    script = f"{shlex.join(place.argv('kill-server'))} 2>/dev/null"
    remove = f"rm -f {REMOTE_SOCKETS}/{shlex.quote(place.socket_name)}"  # tmux leaves it
    if pid is None:
        return f"{script}; {remove}; true"
    tries = int(SERVER_END_WAIT / 0.1)
    named = shlex.quote(f" -L {place.socket_name} ")
    return (
        f"{script}; i=0; while [ -d /proc/{pid} ] && [ $i -lt {tries} ]; do sleep 0.1; "
        f"i=$((i+1)); done; if [ -d /proc/{pid} ] && tr '\\000' ' ' < /proc/{pid}/cmdline "
        f"| grep -qF -- {named}; then kill -KILL {pid}; fi; {remove}; true"
    )


async def _tmux_lines(place: Place, *args: str) -> list[str]:
    """A tmux command on ``place``'s socket, its output lines ([] when it fails)."""
    argv = place.argv(*args)
    if place.local:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(place.env) if place.env is not None else None,
        )
        out, _ = await process.communicate()
        return out.decode(errors="replace").splitlines() if process.returncode == 0 else []
    result = await place.host.run(
        shlex.join(argv) + " 2>/dev/null", timeout=30, confinement=OWN_COMMAND
    )
    return result.stdout.splitlines() if result.exit_code == 0 else []


def remove_stale(place: Place) -> None:
    """The socket file of a server that is gone: tmux 3.3a leaves it behind when it exits
    with its last session, and a server killed by a signal does too."""
    with contextlib.suppress(OSError):
        os.unlink(place.socket_path())


async def forget_server(place: Place) -> None:
    """After an instance's last session ended: its server's socket file goes too, here or on
    the remote host, so no file per instance piles up."""
    if await list_server(place):
        return
    if place.local:
        remove_stale(place)
        return
    remove = f"rm -f {REMOTE_SOCKETS}/{shlex.quote(place.socket_name)}"
    await place.host.run(remove, timeout=30, confinement=OWN_COMMAND)


async def remove_if_dead(place: Place) -> None:
    """The socket file of a server that no longer answers; never that of one that is up (an
    instance starting this very moment has a server with no session yet)."""
    if place.local:
        if await asyncio.to_thread(_refused, place.socket_path()):
            remove_stale(place)
        return
    folder = '"${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)"'
    check = shlex.join(place.argv("server-info"))
    await place.host.run(
        f"{check} >/dev/null 2>&1 || rm -f {folder}/{shlex.quote(place.socket_name)}",
        timeout=30,
        confinement=OWN_COMMAND,
    )


def _refused(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return True
        except OSError:
            return False
    return False


# -- the control clients ----------------------------------------------------------------------


@contextlib.asynccontextmanager
async def start_turn(socket_path: str) -> AsyncIterator[None]:
    """Hold the start lock of the server at ``socket_path`` (this machine only)."""
    folder = os.path.dirname(socket_path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(f"{socket_path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        yield  # no lock file possible (a read-only folder): start as before
        return
    try:
        await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


SessionOutput = Callable[[str, str, bytes], None]
"""``(session, pane id, data)``: a ``%output`` heard by the client of ``session``."""
SessionNotification = Callable[[str, str, str], None]
"""``(session, name, args)``: a notification heard by the client of ``session``."""

_SERVER_DOWN = (
    "no server running",
    "error connecting",
    "no sessions",
    # A server still shutting down when the attach met it.
    "exited unexpectedly",
    "lost server",
)


class ClientPool:
    """Control clients by session on one tmux server (socket) of the host.

    Args:
        host: Where tmux runs (``spawn``).
        socket_name: The tmux server (``tmux -L``).
        config: ``tmux -f`` file for a server we start.
        env: Environment for the tmux client (and so a server it starts, and its panes).
        owner: The tag a session must carry to be attached to.
        width, height: Size of sessions we create while nobody is attached.
        default_cwd: Where a session we create starts.
        on_output, on_notification: Where every client's events go.
    """

    def __init__(
        self,
        host: ExecutionBackend,
        *,
        socket_name: str,
        config: str | None,
        env: Mapping[str, str] | None,
        owner: str,
        width: int,
        height: int,
        default_cwd: str | None,
        on_output: SessionOutput,
        on_notification: SessionNotification,
        take_turns: bool = False,
    ) -> None:
        self.host = host
        self.take_turns = take_turns
        """Attach or create only while holding the server's start lock (a server shared by
        instances: ``start_turn``)."""
        self.socket_name = socket_name
        self.config = config
        self.env = dict(env) if env is not None else None
        self.owner = owner
        self.width = width
        self.height = height
        self.default_cwd = default_cwd
        self._on_output = on_output
        self._on_notification = on_notification
        self._clients: dict[str, ControlClient] = {}
        self._connect_locks: dict[str, asyncio.Lock] = {}

    @property
    def place(self) -> Place:
        """The server as the host reaches it (host, socket, config, environment)."""
        return Place(self.host, self.socket_name, self.config, self.spawn_env())

    def spawn_env(self) -> dict[str, str] | None:
        """The client's environment, never nested in the person's own tmux."""
        if self.env is None:
            return None
        env = {k: v for k, v in self.env.items() if k not in ("TMUX", "TMUX_PANE")}
        env.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
        return env

    def open_client(self, session: str) -> ControlClient | None:
        """The open client of ``session``; None when there is none."""
        client = self._clients.get(session)
        return client if client is not None and client.is_open else None

    def any_open(self) -> ControlClient | None:
        """Some open client: every command reaches the same server."""
        for client in self._clients.values():
            if client.is_open:
                return client
        return None

    def known(self, session: str) -> ControlClient | None:
        """The client kept for ``session``, open or not."""
        return self._clients.get(session)

    def pop(self, session: str) -> ControlClient | None:
        """Forget the client of ``session`` (its session went away); the client itself."""
        return self._clients.pop(session, None)

    async def client(self, session: str) -> ControlClient:
        """An open client attached to ``session``; NotOurs when there is no such session."""
        client = self.open_client(session)
        if client is not None:
            return client
        client, _, _ = await self.connect(session, create=False)
        return client

    async def connect(self, session: str, *, create: bool) -> tuple[ControlClient, bool, str]:
        """A control client attached to ``session``: (client, created, why it was created)."""
        existing = self.open_client(session)
        if existing is not None:
            return existing, False, ""
        lock = self._connect_locks.setdefault(session, asyncio.Lock())
        async with lock:
            existing = self.open_client(session)
            if existing is not None:
                return existing, False, ""
            if self.take_turns and self.place.local:
                async with start_turn(self.place.socket_path()):
                    return await self._connect(session, create=create)
            return await self._connect(session, create=create)

    async def _connect(self, session: str, *, create: bool) -> tuple[ControlClient, bool, str]:
        """Attach to ``session``, or create it (and the server with it) when ``create``."""
        why = ""
        created = False
        try:
            client = await self._spawn(session, "attach-session", "-t", f"={session}")
        except ControlClosed as error:
            if not create:
                raise NotOurs(f"no tmux session {session} ({error.msg})") from None
            down = any(text in error.msg for text in _SERVER_DOWN)
            why = (
                f"the tmux server (socket {self.socket_name}) had stopped"
                if down
                else f"the shared session {session} was gone"
            )
            args = ["new-session", "-s", session, "-x", str(self.width), "-y"]
            args += [str(self.height)]
            if self.default_cwd:
                args += ["-c", self.default_cwd.replace("#", "##")]
            client = await self._spawn_new_session(session, args)
            created = True
        if not created and await session_owner(client, session) != self.owner:
            await client.close()
            raise NotOurs(
                f"tmux session {session} on socket {self.socket_name} exists but is not "
                f"agent-tui's (no {OWNER_OPTION} {self.owner}); pick another session name"
            )
        self._clients[session] = client
        return client, created, why

    async def _spawn(self, session: str, *args: str) -> ControlClient:
        return await ControlClient.connect(
            self.host,
            self.place.argv("-C", *args),
            env=self.spawn_env(),
            label=f"tmux {session}",
            on_output=lambda pane, data: self._on_output(session, pane, data),
            on_notification=lambda name, args: self._on_notification(session, name, args),
        )

    async def _spawn_new_session(self, session: str, args: list[str]) -> ControlClient:
        """``new-session``, again if it met the server a failed attach had just started.

        ``attach-session`` starts a server, finds no session and leaves; that server exits
        (``exit-empty``) and a client connecting at that moment hears "server exited
        unexpectedly". The next attempt starts a fresh server. Two agents starting at once on
        one socket can do this to each other repeatedly, so attempts back off with jitter.
        """
        attempts = 6
        for attempt in range(attempts):
            try:
                return await self._spawn(session, *args, PLACEHOLDER)
            except ControlClosed as error:
                if "exited unexpectedly" not in error.msg and "lost server" not in error.msg:
                    raise
                if attempt == attempts - 1:
                    raise
            await asyncio.sleep(0.02 * (attempt + 1) + random.uniform(0, 0.03))
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """Detach every client."""
        clients = list(self._clients.values())
        self._clients.clear()
        for client in clients:
            await client.close()

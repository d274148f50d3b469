"""The control clients: one ``tmux -C`` per session we manage, started through the host.

tmux sends a control client ``%output`` only for panes of the session it is attached to, so
each managed session gets a client of its own. ``ClientPool`` attaches to a session (or
creates it, saying why: the server had stopped, or the session was gone), refuses a session
that is not tagged with our owner, and keeps the clients by session name. Every client's
output and notifications go to the two sinks it was given, tagged with the session.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Callable, Mapping

from tui.exec.backend import ExecutionBackend
from tui.exec.tmux import lifecycle
from tui.exec.tmux.control import ControlClient, ControlClosed
from tui.exec.tmux.sessions import OWNER_OPTION, PLACEHOLDER, NotOurs, session_owner
from tui.exec.tmux.start_lock import start_turn

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
        instances: ``start_lock``)."""
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
    def place(self) -> lifecycle.Place:
        """The server as ``lifecycle`` reaches it (host, socket, config, environment)."""
        return lifecycle.Place(self.host, self.socket_name, self.config, self.spawn_env())

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

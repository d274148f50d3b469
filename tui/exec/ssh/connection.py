"""One SSH connection to one host: opened lazily, reopened once after a drop, and said so.

Why it is built this way:

* **One connection, many channels.** Opening an SSH connection costs a TCP handshake, a key
  exchange and authentication (≈130 ms on localhost, seconds across the world); a channel
  on an open connection costs one round trip. So the connection is opened lazily, under a
  lock, and every command, SFTP call and spawned process is a channel on it: the role
  OpenSSH's ControlMaster plays.
* **Drops are survived once, and said.** A call that finds the connection dead reconnects
  once and the next result's notices say "reconnected … after the connection dropped";
  commands that were running when it dropped are killed after the reconnect (sshd would
  leave them running). A host that cannot be reached is a :class:`BackendError` with the
  reason, never a traceback.
* **Signals travel on a second channel.** Closing a command's channel would not stop it
  (sshd only closes the pipes), so ``kill -s SIG -- -PGID`` runs beside it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncssh

from tui.exec.backend import BackendError
from tui.exec.ssh.host_keys import KnownHosts, host_key_refusal
from tui.exec.ssh.target import DEFAULT_PORT, SSHTarget

log = logging.getLogger(__name__)

KEEPALIVE_INTERVAL = 30.0
"""Seconds between keepalives, so a silently dead connection is noticed while idle."""


class _Client(asyncssh.SSHClient):
    """Remembers the host key asyncssh refused and whether the connection has gone."""

    def __init__(self) -> None:
        self.offered_key: asyncssh.SSHKey | None = None
        self.offered_addr: str = ""
        self.lost = False

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        """Called only for a key known_hosts does not trust: note it for the error, refuse."""
        self.offered_key = key
        self.offered_addr = addr
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True


@dataclass
class Link:
    """One open connection and what hangs off it; replaced wholesale on reconnect."""

    conn: asyncssh.SSHClientConnection
    client: _Client
    sftp: asyncssh.SFTPClient | None = None
    home: str | None = None
    login_bash: bool = False
    """The login shell is bash: commands can be ``eval``-ed in it (learnt from a header)."""
    no_sftp: bool = False
    """The server refused the SFTP subsystem: files go through shell commands."""

    @property
    def alive(self) -> bool:
        return not self.client.lost

    def mark_lost(self) -> None:
        """The connection is known dead: the next call reconnects."""
        self.client.lost = True


@dataclass
class _Orphan:
    """A command whose connection dropped under it: its group is killed after a reconnect."""

    pgid: int
    started: float


class Connection:
    """The live link to one host, and the notices its reconnects and fallbacks leave behind.

    Args:
        target: Where to connect.
        identity_file: A private key to offer (already expanded); unset offers the agent's
            and default keys.
        known_hosts: The known_hosts file; unset uses the ssh config's.
        ssh_config: OpenSSH client config files to read; unset reads ``~/.ssh/config``.
        connect_timeout: Seconds for the connection, and for opening each channel on it.
    """

    def __init__(
        self,
        target: SSHTarget,
        *,
        identity_file: str | None,
        known_hosts: str | None,
        ssh_config: Sequence[str] | None,
        connect_timeout: float,
    ) -> None:
        self.target = target
        self.connect_timeout = connect_timeout
        self._identity_file = identity_file
        self._known_hosts = KnownHosts(known_hosts)
        self._ssh_config = list(ssh_config) if ssh_config is not None else None
        self._link: Link | None = None
        self._was_dropped = False
        self._lock = asyncio.Lock()
        self._options: asyncssh.SSHClientConnectionOptions | None = None
        self._orphans: list[_Orphan] = []
        self._pending_notices: list[str] = []
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def display(self) -> str:
        """``user@host:port`` as resolved through the ssh config, for error messages."""
        options = self._options
        if options is None:
            return str(self.target)
        resolved = f"{options.username}@{options.host}:{options.port}"
        if options.host != self.target.host:
            return f"{self.target.host} ({resolved})"
        return resolved

    # -- notices ------------------------------------------------------------------------------

    def defer(self, notices: list[str]) -> None:
        """Keep ``notices`` for the next command result the person sees."""
        self._pending_notices.extend(notices)

    def take_notices(self) -> list[str]:
        """The notices kept so far, handed over once."""
        notices, self._pending_notices = self._pending_notices, []
        return notices

    # -- the link -----------------------------------------------------------------------------

    async def link(self, notices: list[str]) -> Link:
        """The live connection, opened on first use or reopened (once) after a drop."""
        link = self._link
        if link is not None and link.alive:
            return link
        async with self._lock:
            if self._closed:
                raise BackendError(f"the SSH backend for {self.display} is closed")
            link = self._link
            if link is not None and link.alive:
                return link
            if link is not None:
                self._link = None
                self._was_dropped = True  # kept until a reconnect succeeds, to say so then
                link.conn.abort()
            link = await self._connect()
            self._link = link
            if self._was_dropped:
                self._was_dropped = False
                notices.append(f"reconnected to {self.display} after the connection dropped")
            if self._orphans:
                await self._kill_orphans(link, notices)
            return link

    async def _connect(self) -> Link:
        options = await self._prepare_options()
        client = _Client()
        try:
            conn = await asyncssh.connect(
                self.target.host,
                options=options,
                client_factory=lambda: client,
                known_hosts=await asyncio.to_thread(self._known_hosts.existing),
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            host, port = self._host_spec()
            recorded = await asyncio.to_thread(
                self._known_hosts.recorded, host, client.offered_addr, port
            )
            raise host_key_refusal(
                self.display,
                host,
                port,
                self._known_hosts.file,
                client.offered_key,
                exc.reason,
                recorded,
            ) from None
        except asyncssh.PermissionDenied:
            raise BackendError(self._auth_failed()) from None
        except (asyncssh.Error, OSError, ValueError) as exc:
            raise BackendError(self._unreachable(exc)) from None
        return Link(conn=conn, client=client)

    async def _prepare_options(self) -> asyncssh.SSHClientConnectionOptions:
        """Resolve the ssh config once (aliases, user, port, keys); built off the event loop."""
        if self._options is not None:
            return self._options
        kwargs: dict[str, Any] = {
            "host": self.target.host,
            "connect_timeout": self.connect_timeout,
            "keepalive_interval": KEEPALIVE_INTERVAL,
        }
        if self._ssh_config is not None:
            kwargs["config"] = self._ssh_config
        if self.target.port is not None:
            kwargs["port"] = self.target.port
        if self.target.user is not None:
            kwargs["username"] = self.target.user
        if self._identity_file is not None:
            kwargs["client_keys"] = [self._identity_file]
        try:
            options: asyncssh.SSHClientConnectionOptions = (
                await asyncssh.SSHClientConnectionOptions.construct(**kwargs)
            )
        except (OSError, ValueError, asyncssh.Error) as exc:
            raise BackendError(f"cannot use the SSH settings for {self.target}: {exc}") from None
        self._options = options
        self._known_hosts.choose(options)
        return options

    async def sftp(self) -> tuple[Link, asyncssh.SFTPClient | None]:
        """The connection's SFTP client, started once; None when the server has no SFTP."""
        notices: list[str] = []
        link = await self.link(notices)
        self.defer(notices)
        if link.sftp is None and not link.no_sftp:
            async with self._lock:
                if link.sftp is None and not link.no_sftp:
                    link.sftp = await self._start_sftp(link)
        return link, link.sftp

    async def _start_sftp(self, link: Link) -> asyncssh.SFTPClient | None:
        try:
            return await asyncio.wait_for(link.conn.start_sftp_client(), self.connect_timeout)
        except asyncssh.ChannelOpenError as exc:
            if exc.code != asyncssh.OPEN_REQUEST_SESSION_FAILED:
                raise BackendError(f"{self.display}: cannot start SFTP: {exc.reason}") from None
        except (asyncssh.Error, OSError, TimeoutError) as exc:
            raise BackendError(f"{self.display}: cannot start SFTP: {exc}") from None
        link.no_sftp = True
        self._pending_notices.append(
            f"{self.display} has no SFTP subsystem: files are read and written through shell "
            "commands (writes are not atomic)"
        )
        return None

    # -- messages -----------------------------------------------------------------------------

    def _host_spec(self) -> tuple[str, int]:
        options = self._options
        host = (options.host_key_alias or options.host) if options else self.target.host
        port = options.port if options else (self.target.port or DEFAULT_PORT)
        return host, port

    def _auth_failed(self) -> str:
        who = self._options.username if self._options else self.target.user
        keys = f"the key {self._identity_file}" if self._identity_file else "every key offered"
        return (
            f"{self.display} refused {keys} for user {who!r}. Set [ssh].identity_file, add the "
            "key to ssh-agent (ssh-add), or add its public key to the remote "
            "~/.ssh/authorized_keys."
        )

    def _unreachable(self, exc: BaseException) -> str:
        prefix = f"cannot reach {self.display}"
        if isinstance(exc, TimeoutError):
            return f"{prefix}: no answer within {self.connect_timeout:g} s"
        if isinstance(exc, ConnectionRefusedError):
            return f"{prefix}: connection refused (is sshd running on that port?)"
        if isinstance(exc, socket.gaierror):
            return f"{prefix}: unknown host name ({exc.strerror})"
        if isinstance(exc, asyncssh.DisconnectError):
            return f"{prefix}: the server closed the connection ({exc.reason})"
        if isinstance(exc, OSError):
            return f"{prefix}: {(exc.strerror or str(exc)).lower()}"
        return f"{prefix}: {exc}"

    def dropped_message(self, exc: Exception) -> str:
        """The connection failed under a call: say so, and that the next call reconnects."""
        return f"lost the connection to {self.display} ({reason(exc)}); the next command reconnects"

    # -- remote process groups ----------------------------------------------------------------

    def orphaned(self, pgid: int, started: float) -> None:
        """A command lost its connection while running: kill its group after the reconnect."""
        self._orphans.append(_Orphan(pgid, started))

    async def _kill_orphans(self, link: Link, notices: list[str]) -> None:
        """Kill groups left by a dropped connection, if their leader is the same process.

        A pid can be reused (after a reboot, say), so a group is killed only when its leader
        has been alive at least as long as the command could have been.
        """
        now = time.perf_counter()
        checks = " ".join(
            f"{orphan.pgid}:{max(0, int(now - orphan.started) - 1)}" for orphan in self._orphans
        )
        self._orphans.clear()
        script = (
            f"for o in {checks}; do p=${{o%:*}} a=${{o#*:}}; "
            'e=$(ps -o etimes= -p "$p" 2>/dev/null | tr -d " "); '
            '[ -n "$e" ] && [ "$e" -ge "$a" ] && kill -s KILL -- "-$p" 2>/dev/null && echo "$p"; '
            "done; true"
        )
        try:
            result = await asyncio.wait_for(
                link.conn.run(script, check=False), self.connect_timeout
            )
        except (asyncssh.Error, OSError, TimeoutError) as exc:
            notices.append(f"could not stop commands left by the dropped connection: {exc}")
            return
        killed = str(result.stdout or "").split()
        if killed:
            notices.append(
                "stopped what the interrupted command left running "
                f"(remote process group {', '.join(killed)})"
            )

    async def signal_group(self, pgid: int, sig: str) -> None:
        """``kill -SIG -- -PGID`` on a second channel; a gone group or connection is fine."""
        link = self._link
        if link is None or not link.alive:
            return
        try:
            await asyncio.wait_for(
                link.conn.run(f"kill -s {sig} -- -{pgid} 2>/dev/null", check=False),
                self.connect_timeout,
            )
        except (asyncssh.Error, OSError, TimeoutError) as exc:
            log.warning("could not signal remote process group %s: %s", pgid, exc)

    def kill_later(self, pgid: int) -> None:
        """SIGKILL a group from a background task (the caller cannot await any more)."""
        task = asyncio.get_running_loop().create_task(self.signal_group(pgid, "KILL"))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        """Finish pending kills, then close the connection. It cannot be reopened."""
        self._closed = True
        if self._background:
            await asyncio.wait(set(self._background), timeout=self.connect_timeout)
        link, self._link = self._link, None
        if link is not None:
            if link.sftp is not None:
                link.sftp.exit()
            link.conn.close()
            try:
                await asyncio.wait_for(link.conn.wait_closed(), self.connect_timeout)
            except TimeoutError:
                link.conn.abort()


def reason(exc: Exception) -> str:
    """asyncssh's reason for a failure, else the exception's own words, else its type."""
    text = getattr(exc, "reason", None)
    return str(text or exc or type(exc).__name__)


__all__ = ["Connection", "Link", "reason"]

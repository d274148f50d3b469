"""Run commands and move files on a remote host over one SSH connection.

Why it is built this way:

* **One connection, many channels.** Opening an SSH connection costs a TCP handshake, a key
  exchange and authentication (≈130 ms on localhost, seconds across the world); a channel on an
  open connection costs one round trip. So the backend opens one connection lazily, under a
  lock, and every command, SFTP call and spawned process is a channel on it: the role
  OpenSSH's ControlMaster plays.
* **Host keys are verified, never accepted.** An unknown key is refused with its SHA256
  fingerprint and the exact command that trusts it; a key that differs from the recorded one is
  refused as a possible man-in-the-middle. Verification cannot be switched off from an
  ssh config (``UserKnownHostsFile none`` would make asyncssh skip it): we always pass a file.
* **The remote process group is ours to kill.** sshd starts each session's shell in a new
  session (``setsid``), so the shell's pid is the process group of everything the command
  starts. The command line prints that pid in a marked header line (never shown), and a
  timeout or cancel sends ``kill -s TERM -- -PGID`` over a second channel, then ``KILL`` after
  a grace period: ``sleep 300 &`` dies with its shell, as locally. Closing the channel would
  not do it: sshd only closes the pipes.
* **Two command forms, one of them fast.** The first command on a connection goes through a
  portable ``/bin/sh`` wrapper (any login shell, fish included) that also reports the login
  shell. When that is bash, later commands are ``eval``-ed in the login bash itself: one
  process instead of three (sh, env, bash), which puts a round trip within a few percent of
  bare ``conn.run`` (``bench/ssh.py``).
* **The environment is the remote's, plus the policy's.** The policy reduces *this* machine's
  environment; its ``HOME``, ``PATH`` or ``USER`` would be wrong on another host, so those few
  names keep the remote login's values; every other exported variable is dropped (``env -i``,
  or an in-process ``unset`` loop in bash) and the policy's are set. Variables travel inside
  the command line because sshd drops ``env`` requests unless ``AcceptEnv`` allows them.
* **Drops are survived once, and said.** A call that finds the connection dead reconnects once
  and puts "reconnected … after the connection dropped" in the result's notices; commands that
  were running when it dropped are killed after the reconnect (sshd would leave them running).
  A host that cannot be reached is a :class:`BackendError` with the reason, never a traceback.
* Output is captured by the same code as in the local backend (``tui.exec.streams``),
  decoded incrementally per stream, so a UTF-8 character split across SSH packets arrives
  whole; the wait, kill and drain sequence is shared too.
* Files go over SFTP, written to a temporary name and renamed over the target
  (``posix-rename@openssh.com``), so readers never see half a file. A server without SFTP
  falls back to ``CommandBackend``'s shell file I/O, with a notice.
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import logging
import os
import posixpath
import re
import secrets
import shlex
import signal
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import asyncssh

from tui.exec.backend import (
    BackendError,
    ChunkSink,
    CommandBackend,
    ExecResult,
    InteractiveProcess,
)
from tui.exec.streams import KILL_GRACE, REAP_LIMIT, OutputCollector, resolve, wait_for_end

if TYPE_CHECKING:
    from tui.config import SshSettings

log = logging.getLogger(__name__)

DEFAULT_PORT = 22
KEEPALIVE_INTERVAL = 30.0
"""Seconds between keepalives, so a silently dead connection is noticed while idle."""

REMOTE_OWNED_ENV = (
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PATH",
    "PWD",
    "MAIL",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
)
"""Names that describe the machine they are set on: the remote login's values win."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

HEADER_MARK = "atui-pgid:"
"""Starts the header line, so output a login script prints before it is not mistaken for it."""

_ENTER_CWD = (
    'if [ -n "$d" ] && ! cd -- "$d" 2>/dev/null; then'
    f' if [ ! -e "$d" ]; then echo {HEADER_MARK}!missing;'
    f' elif [ ! -d "$d" ]; then echo {HEADER_MARK}!notdir;'
    f" else echo {HEADER_MARK}!denied; fi; exit 126; fi"
)
"""Enter ``$d`` (empty: stay in the home), or print why not as the header line and stop."""

_WRAPPER = "\n".join(
    [
        "d=$1 m=$2 c=$3; shift 3",
        _ENTER_CWD,
        f'echo "{HEADER_MARK}$$ ${{SHELL-}}"',
        "if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi",
        'if [ "$m" = k ]; then exec "$s" -c "$c"; fi',
        "exec env -i "
        + " ".join(f'${{{name}+"{name}=${name}"}}' for name in REMOTE_OWNED_ENV)
        + ' "$@" "$s" -c "$c"',
    ]
)
"""The portable form, run by ``/bin/sh`` whatever the login shell is (fish, csh …): enter the
cwd, print the process group id and the login shell, then ``exec`` bash (or sh) so the pid,
and so the group, stay the same. Arguments: cwd, ``k`` (keep the login environment) or ``e``
(``env -i`` with the remote-owned names plus ``NAME=value`` arguments), the command."""

_WRAPPER_PREFIX = "exec /bin/sh -c " + shlex.quote(_WRAPPER) + " atui-ssh "

_BASH_KEEP = "|".join((*REMOTE_OWNED_ENV, "SHLVL"))
_BASH_SCRUB = (
    "for _atui_n in "
    + " ".join(f"${{!{c}*}}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
    + f"; do case $_atui_n in {_BASH_KEEP}) ;; *) [[ ${{!_atui_n@a}} == *x* ]]"
    ' && unset -v "$_atui_n";; esac; done 2>/dev/null; unset -v _atui_n'
)
"""Bash ≥ 4.4 only: drop every exported variable but the remote-owned ones, in-process (what
``env -i`` does, without spawning ``env`` and another bash)."""

_INTERNAL: contextvars.ContextVar[bool] = contextvars.ContextVar("ssh_internal", default=False)
"""Set while the backend runs commands for itself: those must not swallow pending notices."""

_CWD_ERRORS = {
    "!missing": "does not exist",
    "!notdir": "is not a directory",
    "!denied": "cannot be entered (permission denied)",
}


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class SSHTarget:
    """Where to connect: ``[user@]host[:port]``, an ``ssh://`` URL or an ssh config alias."""

    host: str
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> SSHTarget:
        """Accepts ``host``, ``user@host``, ``user@host:2222``, ``[::1]:2222``, ``ssh://…``.

        Raises:
            ValueError: the text is not a target.
        """
        raw = text.strip()
        if raw.startswith("ssh://"):
            raw = raw[len("ssh://") :].rstrip("/")
        user: str | None = None
        if "@" in raw:
            user, raw = raw.rsplit("@", 1)
            if not user:
                raise ValueError(f"empty user name in SSH target {text!r}")
        host, port = _split_host_port(raw, text)
        if not host or any(ch.isspace() for ch in host):
            raise ValueError(f"not an SSH target: {text!r} (expected user@host[:port])")
        return cls(host=host, user=user, port=port)

    @property
    def short(self) -> str:
        """``user@host`` (or the alias): what a person recognises in an approval prompt."""
        return f"{self.user}@{self.host}" if self.user else self.host

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.user + '@' if self.user else ''}{host}{port}"


def _split_host_port(raw: str, text: str) -> tuple[str, int | None]:
    if raw.startswith("["):
        host, _, rest = raw[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise ValueError(f"not an SSH target: {text!r}")
    elif raw.count(":") == 1:
        host, port_text = raw.split(":")
    else:
        host, port_text = raw, ""  # a bare IPv6 address has several colons and no port
    if not port_text:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad port {port_text!r} in SSH target {text!r}")
    return host, int(port_text)


# --------------------------------------------------------------------------- the connection


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
class _Link:
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


@dataclass
class _Orphan:
    """A command whose connection dropped under it: its group is killed after a reconnect."""

    pgid: int
    started: float


# --------------------------------------------------------------------------- one command


class _CommandSession(OutputCollector, asyncssh.SSHClientSession[bytes]):
    """Collects and streams one command's output; separates its header, exit and close.

    Everything here runs in asyncssh callbacks and must never block. The first stdout line is
    the wrapper's header (the process group id, or a cwd error) and is never shown. Capture,
    notices and the live sink are the shared ``OutputCollector``'s.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, on_chunk: ChunkSink | None, link: _Link
    ) -> None:
        super().__init__(on_chunk)
        self.header: asyncio.Future[str] = loop.create_future()
        self.ended: asyncio.Future[None] = loop.create_future()
        """Exit status or signal received, or the channel closed without one."""
        self.closed: asyncio.Future[None] = loop.create_future()
        self.exit_code: int | None = None
        self.lost: Exception | None = None
        self._head = bytearray()
        self._link = link

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self.emit("stderr", self.stderr.feed(data))
            return
        if not self.header.done():
            self._head += data
            data = self._take_header()
        if data:
            self.emit("stdout", self.stdout.feed(data))

    def _take_header(self) -> bytes:
        """Consume lines up to the header; lines before it (a chatty ``.bashrc``) are output.

        Returns the bytes after the header, or nothing while it has not arrived.
        """
        while True:
            line, newline, rest = self._head.partition(b"\n")
            if not newline:
                return b""
            self._head = bytearray(rest)
            text = line.decode("utf-8", "replace")
            if text.startswith(HEADER_MARK):
                self._read_header(text[len(HEADER_MARK) :])
                rest_bytes = bytes(self._head)
                self._head.clear()
                return rest_bytes
            self.emit("stdout", self.stdout.feed(bytes(line) + b"\n"))

    def _read_header(self, text: str) -> None:
        """``PGID`` (bash form), ``PGID LOGIN_SHELL`` (portable form) or a cwd error."""
        words = text.split()
        if len(words) == 2 and words[0].isdigit():
            self._link.login_bash = posixpath.basename(words[1]) == "bash"
        self.header.set_result(words[0] if words else "")

    def exit_status_received(self, status: int) -> None:
        self.exit_code = status
        resolve(self.ended)

    def exit_signal_received(
        self, signal_name: str, core_dumped: bool, msg: str, lang: str
    ) -> None:
        try:
            self.exit_code = -signal.Signals[f"SIG{signal_name}"].value
        except KeyError:
            self.exit_code = -1
        resolve(self.ended)

    def eof_received(self) -> bool:
        if self._head:  # output without a header line: show it rather than lose it
            self.emit("stdout", self.stdout.feed(bytes(self._head)))
            self._head.clear()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc
        if not self.header.done():
            self.header.set_result("")
        resolve(self.ended)
        resolve(self.closed)

    @property
    def pgid(self) -> int | None:
        if self.header.done() and self.header.result().isdigit():
            return int(self.header.result())
        return None


def _factory(session: _CommandSession) -> Callable[[], _CommandSession]:
    """asyncssh wants a session factory; ours is made before the channel, to keep a handle."""
    return lambda: session


# --------------------------------------------------------------------------- the backend


class SSHBackend(CommandBackend):
    """Commands, files and interactive processes on one remote host, over one connection.

    Files go over SFTP; a server without the SFTP subsystem gets ``CommandBackend``'s
    shell-based file I/O instead (not atomic), with a notice.

    Args:
        target: ``user@host[:port]``, an ``ssh://`` URL or an alias from the ssh config.
        identity_file: A private key to offer; unset offers the agent's and default keys.
        known_hosts: The known_hosts file; unset uses the ssh config's, else
            ``~/.ssh/known_hosts``.
        ssh_config: OpenSSH client config files to read (``Host`` aliases, ``User``,
            ``IdentityFile`` …); unset reads ``~/.ssh/config`` when it exists.
        connect_timeout: Seconds for the connection (TCP, key exchange, authentication), and
            for opening each channel on it.
        default_cwd: Remote working directory when ``run`` gets none; default the login home.
        drain_timeout: Seconds to keep reading after the command exited while a background
            process still holds its output.
    """

    SUPPORTS_SPAWN = True

    def __init__(
        self,
        target: str | SSHTarget,
        *,
        identity_file: str | None = None,
        known_hosts: str | None = None,
        ssh_config: Sequence[str] | None = None,
        connect_timeout: float = 10.0,
        default_cwd: str | None = None,
        drain_timeout: float = 2.0,
    ) -> None:
        self.target = target if isinstance(target, SSHTarget) else SSHTarget.parse(target)
        self._identity_file = os.path.expanduser(identity_file) if identity_file else None
        self._known_hosts = known_hosts
        self._ssh_config = list(ssh_config) if ssh_config is not None else None
        self._connect_timeout = connect_timeout
        self._default_cwd = default_cwd
        self._drain_timeout = drain_timeout
        self._link: _Link | None = None
        self._was_dropped = False
        self._lock = asyncio.Lock()
        self._options: asyncssh.SSHClientConnectionOptions | None = None
        self._known_hosts_paths: list[str] = []
        self._orphans: list[_Orphan] = []
        self._pending_notices: list[str] = []
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False

    @classmethod
    def from_settings(cls, settings: SshSettings, **kwargs: Any) -> SSHBackend:
        """The backend the ``[ssh]`` config section describes."""
        if not settings.host:
            raise BackendError("[ssh].host is not set: give user@host[:port] or an ssh alias")
        return cls(
            settings.host,
            identity_file=settings.identity_file,
            known_hosts=settings.known_hosts,
            connect_timeout=settings.connect_timeout,
            **kwargs,
        )

    @property
    def actor(self) -> str:
        return f"ssh:{self.target.short}"

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

    # -- connection ---------------------------------------------------------------------------

    async def _connection(self, notices: list[str]) -> _Link:
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

    async def _connect(self) -> _Link:
        options = await self._prepare_options()
        client = _Client()
        try:
            conn = await asyncssh.connect(
                self.target.host,
                options=options,
                client_factory=lambda: client,
                known_hosts=await asyncio.to_thread(self._known_hosts_arg),
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            host, port = self._host_spec()
            recorded = await asyncio.to_thread(self._recorded_keys, host, client.offered_addr, port)
            raise self._host_key_error(client, exc, recorded) from None
        except asyncssh.PermissionDenied:
            raise BackendError(self._auth_failed()) from None
        except (asyncssh.Error, OSError, ValueError) as exc:
            raise BackendError(self._unreachable(exc)) from None
        return _Link(conn=conn, client=client)

    async def _prepare_options(self) -> asyncssh.SSHClientConnectionOptions:
        """Resolve the ssh config once (aliases, user, port, keys); built off the event loop."""
        if self._options is not None:
            return self._options
        kwargs: dict[str, Any] = {
            "host": self.target.host,
            "connect_timeout": self._connect_timeout,
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
        self._known_hosts_paths = self._choose_known_hosts(options)
        return options

    def _choose_known_hosts(self, options: asyncssh.SSHClientConnectionOptions) -> list[str]:
        """The setting, else the config's files, else ``~/.ssh/known_hosts``; never none."""
        if self._known_hosts:
            return [str(Path(self._known_hosts).expanduser())]
        configured = options.known_hosts
        if isinstance(configured, (list, tuple)) and configured:
            return [str(Path(str(path)).expanduser()) for path in configured]
        if isinstance(configured, str) and configured:
            return [str(Path(configured).expanduser())]
        return [str(Path("~/.ssh/known_hosts").expanduser())]

    def _known_hosts_arg(self) -> list[str] | bytes:
        """Existing files only (asyncssh fails on a missing one); ``b""`` trusts nothing."""
        existing = [path for path in self._known_hosts_paths if Path(path).is_file()]
        return existing or b""

    # -- connection errors ---------------------------------------------------------------------

    def _host_spec(self) -> tuple[str, int]:
        options = self._options
        host = (options.host_key_alias or options.host) if options else self.target.host
        port = options.port if options else (self.target.port or DEFAULT_PORT)
        return host, port

    def _host_key_error(
        self,
        client: _Client,
        exc: asyncssh.HostKeyNotVerifiable,
        recorded: list[asyncssh.SSHKey],
    ) -> BackendError:
        """Unknown: show the fingerprint and how to trust it. Changed: refuse loudly."""
        host, port = self._host_spec()
        file = self._known_hosts_paths[0] if self._known_hosts_paths else "~/.ssh/known_hosts"
        key = client.offered_key
        if key is None:
            return BackendError(
                f"refusing {self.display}: its host key cannot be verified ({exc.reason}).",
                title="Host key not trusted",
            )
        pattern = host if port == DEFAULT_PORT else f"[{host}]:{port}"
        offered = f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"
        keyscan = (
            f"ssh-keyscan -p {port} -t {_keyscan_type(key)} {shlex.quote(host)} >> "
            f"{shlex.quote(file)}"
        )
        if recorded:
            was = ", ".join(
                f"{old.get_algorithm()} {old.get_fingerprint('sha256')}" for old in recorded
            )
            return BackendError(
                f"REFUSED: the host key of {self.display} has CHANGED.\n"
                f"  offered now:      {offered}\n"
                f"  trusted in {file}: {was}\n"
                "Someone may be intercepting the connection (man-in-the-middle), or the host "
                "was reinstalled. Do not trust the new key until its owner confirms the "
                "fingerprint above. If the change is legitimate:\n"
                f"  ssh-keygen -R {shlex.quote(pattern)} -f {shlex.quote(file)}\n"
                f"  {keyscan}",
                title="Host key CHANGED",
            )
        return BackendError(
            f"refusing {self.display}: its host key is not in {file}.\n"
            f"  offered: {offered}\n"
            "Check this fingerprint with the host's owner (on the host: "
            "ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), then trust it with\n"
            f"  {keyscan}\n"
            "or point [ssh].known_hosts at a known_hosts file that lists it.",
            title="Unknown host key",
        )

    def _recorded_keys(self, host: str, addr: str, port: int) -> list[asyncssh.SSHKey]:
        files = self._known_hosts_arg()
        if not files:
            return []
        try:
            match = asyncssh.match_known_hosts(
                files, host, addr, port if port != DEFAULT_PORT else None
            )
        except (OSError, ValueError):
            return []
        return list(match[0])

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
            return f"{prefix}: no answer within {self._connect_timeout:g} s"
        if isinstance(exc, ConnectionRefusedError):
            return f"{prefix}: connection refused (is sshd running on that port?)"
        if isinstance(exc, socket.gaierror):
            return f"{prefix}: unknown host name ({exc.strerror})"
        if isinstance(exc, asyncssh.DisconnectError):
            return f"{prefix}: the server closed the connection ({exc.reason})"
        if isinstance(exc, OSError):
            return f"{prefix}: {(exc.strerror or str(exc)).lower()}"
        return f"{prefix}: {exc}"

    # -- commands -----------------------------------------------------------------------------

    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
    ) -> ExecResult:
        if cancel is not None and cancel.is_set():
            return ExecResult(exit_code=None, cancelled=True)
        return await self._execute(command, cwd, env, timeout, on_chunk, cancel, None)

    async def run_with_stdin(self, command: str, data: bytes) -> ExecResult:
        """``command`` with ``data`` on its stdin, output collected (for completeness)."""
        return await self._execute(command, None, None, None, None, None, data)

    async def _execute(
        self,
        command: str,
        cwd: str | None,
        env: Mapping[str, str] | None,
        timeout: float | None,
        on_chunk: ChunkSink | None,
        cancel: asyncio.Event | None,
        stdin: bytes | None,
    ) -> ExecResult:
        workdir = cwd if cwd is not None else self._default_cwd
        started = time.perf_counter()
        internal = _INTERNAL.get()
        notices = [] if internal else self._take_notices()
        channel, session = await self._open(command, workdir, env, on_chunk, notices)
        if internal:  # a reconnect noticed here is for the next command the person sees
            self._pending_notices.extend(notices)
        if stdin:
            channel.write(stdin)
        channel.write_eof()
        try:
            timed_out, cancelled = await wait_for_end(
                session,
                session.ended,
                session.closed,
                timeout=timeout,
                cancel=cancel,
                kill=lambda: self._kill_session(session),
                drain_timeout=self._drain_timeout,
            )
            self._raise_for_start(session, workdir, started)
            session.finish_streams()
            return ExecResult(
                exit_code=None if session.killing else session.exit_code,
                stdout=session.stdout.text,
                stderr=session.stderr.text,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                timed_out=timed_out,
                cancelled=cancelled,
                notices=session.notices,
            )
        except BaseException:
            # Cancelled mid-run (or worse): there may be no chance to await, so the kill runs
            # as a background task and the channel is closed now.
            if not session.closed.done() and session.pgid is not None:
                self._kill_later(session.pgid)
            raise
        finally:
            session.detach()
            channel.close()

    def _command_line(
        self,
        command: str,
        workdir: str | None,
        env: Mapping[str, str] | None,
        login_bash: bool = False,
    ) -> str:
        """The one string sshd hands the login shell.

        When the login shell is known to be bash, the command is ``eval``-ed in it: one bash
        instead of three processes (sh, env, bash), ≈1.5 ms less per command. Otherwise, and
        on the first command of a connection, the portable ``/bin/sh`` wrapper runs it.
        """
        assignments = [
            shlex.quote(f"{name}={value}")
            for name, value in (env or {}).items()
            if name not in REMOTE_OWNED_ENV and _ENV_NAME.match(name)
        ]
        portable = _WRAPPER_PREFIX + " ".join(
            [
                shlex.quote(workdir or ""),
                "k" if env is None else "e",
                shlex.quote(command),
                *assignments,
            ]
        )
        if not login_bash:
            return portable
        # POSIX syntax, run before bash-only lines are even parsed: anything but bash ≥ 4.4
        # (a login shell that changed since we learnt it) takes the portable form.
        steps = [f"case ${{BASH_VERSION-}} in [5-9]*|4.[4-9]*) ;; *) {portable};; esac"]
        if workdir:
            steps.append(f"d={shlex.quote(workdir)}; {_ENTER_CWD}; unset -v d")
        steps.append(f'echo "{HEADER_MARK}$$"')
        if env is not None:
            steps.append(_BASH_SCRUB)
            if assignments:
                steps.append("export " + " ".join(assignments))
        steps.append(f"eval {shlex.quote(command)}")
        return "\n".join(steps)

    async def _open(
        self,
        command: str,
        workdir: str | None,
        env: Mapping[str, str] | None,
        on_chunk: ChunkSink | None,
        notices: list[str],
    ) -> tuple[asyncssh.SSHClientChannel[bytes], _CommandSession]:
        """Open a channel running ``line``; a connection found dead is reopened once.

        Only a failed channel *open* is retried: the command was not sent yet, so it cannot
        run twice. A connection lost after the exec request is an error.
        """
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            link = await self._connection(notices)
            session = _CommandSession(loop, on_chunk, link)
            line = self._command_line(command, workdir, env, link.login_bash)
            try:
                channel, _ = await asyncio.wait_for(
                    link.conn.create_session(_factory(session), line, encoding=None),
                    self._connect_timeout,
                )
            except asyncssh.ChannelOpenError as exc:
                if exc.code != asyncssh.OPEN_CONNECT_FAILED:
                    raise BackendError(
                        f"{self.display} refused to run a command: {exc.reason}"
                    ) from None
                link.client.lost = True
                if attempt == 2:
                    raise BackendError(self._dropped_message(exc)) from None
                continue
            except TimeoutError:
                link.client.lost = True
                raise BackendError(
                    f"{self.display} did not answer within {self._connect_timeout:g} s; "
                    "the next command reconnects"
                ) from None
            except (asyncssh.Error, OSError) as exc:
                link.client.lost = True
                raise BackendError(self._dropped_message(exc)) from None
            for notice in notices:
                session.notice(notice)
            return channel, session
        raise AssertionError("unreachable")

    def _dropped_message(self, exc: Exception) -> str:
        return (
            f"lost the connection to {self.display} ({_reason(exc)}); the next command reconnects"
        )

    async def _kill_session(self, session: _CommandSession) -> None:
        """SIGTERM the remote group, give it ``KILL_GRACE`` seconds, then SIGKILL it."""
        session.killing = True
        await asyncio.wait({session.header}, timeout=self._connect_timeout)
        pgid = session.pgid
        if pgid is None:
            return  # it never started (or already ended): closing the channel is enough
        await self._signal_group(pgid, "TERM")
        await asyncio.wait({session.closed}, timeout=KILL_GRACE)
        # Always: a member that ignores TERM and closed its output would not hold the channel.
        await self._signal_group(pgid, "KILL")
        await asyncio.wait({session.ended}, timeout=REAP_LIMIT)

    async def _signal_group(self, pgid: int, sig: str) -> None:
        """``kill -SIG -- -PGID`` on a second channel; a gone group or connection is fine."""
        link = self._link
        if link is None or not link.alive:
            return
        try:
            await asyncio.wait_for(
                link.conn.run(f"kill -s {sig} -- -{pgid} 2>/dev/null", check=False),
                self._connect_timeout,
            )
        except (asyncssh.Error, OSError, TimeoutError) as exc:
            log.warning("could not signal remote process group %s: %s", pgid, exc)

    def _kill_later(self, pgid: int) -> None:
        task = asyncio.get_running_loop().create_task(self._signal_group(pgid, "KILL"))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _raise_for_start(
        self, session: _CommandSession, workdir: str | None, started: float
    ) -> None:
        """Turn a command that never ran, or lost its connection, into a BackendError."""
        header = session.header.result() if session.header.done() else ""
        if header in _CWD_ERRORS:
            raise BackendError(
                f"Working directory {workdir!r} {_CWD_ERRORS[header]} on {self.display}."
            )
        if session.lost is not None and session.exit_code is None and not session.killing:
            if session.pgid is not None:
                self._orphans.append(_Orphan(session.pgid, started))
            raise BackendError(
                f"lost the connection to {self.display} while the command ran "
                f"({_reason(session.lost)}); its outcome is unknown. The next command "
                "reconnects and stops what it left running."
            )
        if not header and not session.killing:
            detail = session.stderr.text.strip() or f"exit status {session.exit_code}"
            raise BackendError(
                f"the remote shell on {self.display} did not start the command: {detail}"
            )

    async def _kill_orphans(self, link: _Link, notices: list[str]) -> None:
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
                link.conn.run(script, check=False), self._connect_timeout
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

    def _take_notices(self) -> list[str]:
        notices, self._pending_notices = self._pending_notices, []
        return notices

    # -- files --------------------------------------------------------------------------------

    async def _sftp(self) -> tuple[_Link, asyncssh.SFTPClient | None]:
        """The connection's SFTP client, started once; None when the server has no SFTP."""
        notices: list[str] = []
        link = await self._connection(notices)
        self._pending_notices.extend(notices)
        if link.sftp is None and not link.no_sftp:
            async with self._lock:
                if link.sftp is None and not link.no_sftp:
                    link.sftp = await self._start_sftp(link)
        return link, link.sftp

    async def _start_sftp(self, link: _Link) -> asyncssh.SFTPClient | None:
        try:
            return await asyncio.wait_for(link.conn.start_sftp_client(), self._connect_timeout)
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

    async def _shell_path(self, path: str) -> str:
        """``~/x`` for the shell fallback, which quotes paths (so ``~`` would not expand)."""
        if path != "~" and not path.startswith("~/"):
            return path
        home = (await self.run('printf %s "$HOME"')).stdout
        return posixpath.join(home, path[2:])

    async def _remote_path(self, link: _Link, sftp: asyncssh.SFTPClient, path: str) -> str:
        """``~`` is the remote home; relative paths start at ``default_cwd`` (else the home)."""
        if path == "~" or path.startswith("~/"):
            if link.home is None:
                link.home = await sftp.realpath(".")
            return posixpath.join(link.home, path[2:])
        if self._default_cwd is not None and not posixpath.isabs(path):
            return posixpath.join(self._default_cwd, path)
        return path

    async def read_file(self, path: str) -> bytes:
        link, sftp = await self._sftp()
        if sftp is None:
            token = _INTERNAL.set(True)
            try:
                return await super().read_file(await self._shell_path(path))
            finally:
                _INTERNAL.reset(token)
        remote = await self._remote_path(link, sftp, path)
        try:
            async with sftp.open(remote, "rb") as handle:
                return cast(bytes, await handle.read())
        except asyncssh.SFTPError as exc:
            raise await self._file_error(sftp, exc, remote, path) from None
        except (asyncssh.Error, OSError) as exc:
            raise BackendError(f"{self.display}: reading {path} failed: {exc}") from None

    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        link, sftp = await self._sftp()
        if sftp is None:
            token = _INTERNAL.set(True)
            try:
                path = await self._shell_path(path)
                return await super().write_file(path, data, make_parents=make_parents)
            finally:
                _INTERNAL.reset(token)
        remote = await self._remote_path(link, sftp, path)
        try:
            await self._write_atomic(sftp, remote, data, make_parents)
        except asyncssh.SFTPError as exc:
            raise await self._file_error(sftp, exc, remote, path) from None
        except (asyncssh.Error, OSError) as exc:
            if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
                raise
            raise BackendError(f"{self.display}: writing {path} failed: {exc}") from None

    async def _write_atomic(
        self, sftp: asyncssh.SFTPClient, path: str, data: bytes, make_parents: bool
    ) -> None:
        """Write a temporary file next to the target and rename it over the target.

        As locally: a symlink's target is updated, an existing file keeps its mode, and a
        file nobody may write stays protected (a rename alone would bypass its mode).
        """
        path, mode = await self._existing(sftp, path)
        directory = posixpath.dirname(path) or "."
        if make_parents:
            await sftp.makedirs(directory, exist_ok=True)
        temp = posixpath.join(directory, f".{posixpath.basename(path)}.{secrets.token_hex(6)}.tmp")
        try:
            async with sftp.open(temp, "xb") as handle:
                await handle.write(data)
                if mode is not None:
                    await handle.chmod(mode)
                try:
                    await handle.fsync()
                except asyncssh.SFTPOpUnsupported:
                    pass
            await self._rename_over(sftp, temp, path)
        except BaseException:
            try:
                await sftp.remove(temp)
            except (asyncssh.Error, OSError):
                pass
            raise

    async def _existing(self, sftp: asyncssh.SFTPClient, path: str) -> tuple[str, int | None]:
        """The real path to write and the mode to keep (None for a new file)."""
        try:
            attrs = await sftp.lstat(path)
        except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath):
            return path, None
        if attrs.type == asyncssh.FILEXFER_TYPE_SYMLINK:
            path = await sftp.realpath(path)
            try:
                attrs = await sftp.stat(path)
            except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath):
                return path, None
        if attrs.type == asyncssh.FILEXFER_TYPE_DIRECTORY:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        mode = (attrs.permissions or 0) & 0o7777
        if attrs.permissions is not None and not mode & 0o222:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return path, mode if attrs.permissions is not None else None

    async def _rename_over(self, sftp: asyncssh.SFTPClient, temp: str, path: str) -> None:
        try:
            await sftp.posix_rename(temp, path)
        except asyncssh.SFTPOpUnsupported:
            # Plain SFTPv3 rename refuses to replace: not atomic, but the best there is.
            if await sftp.exists(path):
                await sftp.remove(path)
            await sftp.rename(temp, path)

    async def _file_error(
        self, sftp: asyncssh.SFTPClient, exc: asyncssh.SFTPError, remote: str, path: str
    ) -> OSError | BackendError:
        if isinstance(exc, (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath)):
            return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        if isinstance(exc, (asyncssh.SFTPPermissionDenied, asyncssh.SFTPWriteProtect)):
            return PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        if isinstance(exc, asyncssh.SFTPFileIsADirectory):
            return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if isinstance(exc, asyncssh.SFTPConnectionLost):
            return BackendError(f"lost the connection to {self.display} during a file transfer")
        try:
            if await sftp.isdir(remote):  # OpenSSH opens a directory, then fails to read it
                return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        except (asyncssh.Error, OSError):
            pass
        return PermissionError(errno.EIO, f"{exc.reason}", path)

    # -- interactive processes -----------------------------------------------------------------

    async def spawn(
        self, argv: list[str], *, env: Mapping[str, str] | None = None
    ) -> InteractiveProcess:
        """``argv`` on the remote host with byte pipes, stderr merged into stdout (as locally),
        in ``default_cwd``. Its process group is known, so ``close`` can always stop it."""
        if not argv:
            raise BackendError("nothing to start: empty argv")
        notices: list[str] = []
        link = await self._connection(notices)
        self._pending_notices.extend(notices)
        # Merged on the host, in order, and only after the header: login-shell noise on
        # stderr (a locale warning, say) cannot be mistaken for the header or the output.
        command = "exec 2>&1; exec " + shlex.join(argv)
        line = self._command_line(command, self._default_cwd, env, link.login_bash)
        try:
            process = await asyncio.wait_for(
                link.conn.create_process(line, encoding=None, stderr=asyncssh.DEVNULL),
                self._connect_timeout,
            )
        except asyncssh.ChannelOpenError as exc:
            if exc.code == asyncssh.OPEN_CONNECT_FAILED:
                link.client.lost = True
            raise BackendError(f"{self.display}: cannot start {argv[0]!r}: {exc.reason}") from None
        except (asyncssh.Error, OSError, TimeoutError) as exc:
            link.client.lost = True
            raise BackendError(self._dropped_message(exc)) from None
        text = await self._spawn_header(process)
        if not text.isdigit():
            process.close()
            if text in _CWD_ERRORS:
                raise BackendError(
                    f"Working directory {self._default_cwd!r} {_CWD_ERRORS[text]} "
                    f"on {self.display}."
                )
            raise BackendError(f"{self.display}: cannot start {argv[0]!r} (no shell answered)")
        return SSHProcess(self, process, int(text))

    async def _spawn_header(self, process: asyncssh.SSHClientProcess[bytes]) -> str:
        """The header's first word; lines a login script printed before it are dropped."""
        deadline = asyncio.get_running_loop().time() + self._connect_timeout
        try:
            async with asyncio.timeout_at(deadline):
                while line := await process.stdout.readline():
                    text = line.decode("utf-8", "replace")
                    if text.startswith(HEADER_MARK):
                        words = text[len(HEADER_MARK) :].split()
                        return words[0] if words else ""
        except (asyncssh.Error, OSError, TimeoutError):
            pass
        return ""

    async def close(self) -> None:
        """Finish pending kills, then close the connection. The backend cannot be reused."""
        self._closed = True
        if self._background:
            await asyncio.wait(set(self._background), timeout=self._connect_timeout)
        link, self._link = self._link, None
        if link is not None:
            if link.sftp is not None:
                link.sftp.exit()
            link.conn.close()
            try:
                await asyncio.wait_for(link.conn.wait_closed(), self._connect_timeout)
            except TimeoutError:
                link.conn.abort()


class SSHProcess(InteractiveProcess):
    """A remote process with byte pipes over one channel, stopped as a group on close."""

    def __init__(
        self, backend: SSHBackend, process: asyncssh.SSHClientProcess[bytes], pgid: int
    ) -> None:
        self._backend = backend
        self._process = process
        self._closed = False
        self.pgid = pgid

    async def write(self, data: bytes) -> None:
        if self._closed or self._process.returncode is not None:
            raise BackendError("the interactive process has ended")
        try:
            self._process.stdin.write(data)
            await self._process.stdin.drain()
        except (asyncssh.Error, OSError) as exc:
            raise BackendError(f"the interactive process has ended ({exc})") from None

    async def read(self, size: int = 65536) -> bytes:
        try:
            return bytes(await self._process.stdout.read(size))
        except (asyncssh.Error, OSError):
            return b""

    async def close(self) -> None:
        """EOF first (tmux -C exits on it); TERM, then KILL, the group if it lingers."""
        if self._closed:
            return
        self._closed = True
        process = self._process
        try:
            process.stdin.write_eof()
        except (asyncssh.Error, OSError):
            pass
        for sig in ("TERM", "KILL"):
            try:
                await asyncio.wait_for(process.wait_closed(), KILL_GRACE)
                break
            except TimeoutError:
                await self._backend._signal_group(self.pgid, sig)
        process.close()

    @property
    def returncode(self) -> int | None:
        return self._process.returncode


# --------------------------------------------------------------------------- helpers


def _keyscan_type(key: asyncssh.SSHKey) -> str:
    """``ssh-keyscan -t`` spells key types its own way."""
    algorithm = key.get_algorithm()
    return {
        "ssh-ed25519": "ed25519",
        "ssh-rsa": "rsa",
        "ssh-dss": "dsa",
        "sk-ssh-ed25519@openssh.com": "ed25519-sk",
    }.get(algorithm, "ecdsa" if algorithm.startswith("ecdsa") else algorithm)


def _reason(exc: Exception) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc or type(exc).__name__)


__all__ = ["REMOTE_OWNED_ENV", "SSHBackend", "SSHProcess", "SSHTarget"]

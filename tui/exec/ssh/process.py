"""Long-lived remote processes with byte pipes (a tmux control client, say), over one channel.

Why it is built this way: the process is started by the same command line as every command,
so its process group is known from the header before anyone writes to it, and ``close``
can always stop it: EOF first (``tmux -C`` exits on it), then TERM and KILL to the group,
because closing the channel alone would leave it running on the host.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping

import asyncssh

from tui.exec.backend import BackendError, InteractiveProcess
from tui.exec.ssh.command_line import CWD_ERRORS, HEADER_MARK, command_line
from tui.exec.ssh.connection import Connection
from tui.exec.streams import KILL_GRACE


async def start_process(
    connection: Connection,
    argv: list[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | None,
) -> SSHProcess:
    """``argv`` on the remote host with byte pipes, stderr merged into stdout (as locally).

    Raises:
        BackendError: nothing to start, the connection failed, the working directory is
            unusable, or no shell answered.
    """
    if not argv:
        raise BackendError("nothing to start: empty argv")
    notices: list[str] = []
    link = await connection.link(notices)
    connection.defer(notices)
    # Merged on the host, in order, and only after the header: login-shell noise on
    # stderr (a locale warning, say) cannot be mistaken for the header or the output.
    command = "exec 2>&1; exec " + shlex.join(argv)
    line = command_line(command, cwd, env, link.login_bash)
    try:
        process = await asyncio.wait_for(
            link.conn.create_process(line, encoding=None, stderr=asyncssh.DEVNULL),
            connection.connect_timeout,
        )
    except asyncssh.ChannelOpenError as exc:
        if exc.code == asyncssh.OPEN_CONNECT_FAILED:
            link.mark_lost()
        raise BackendError(
            f"{connection.display}: cannot start {argv[0]!r}: {exc.reason}"
        ) from None
    except (asyncssh.Error, OSError, TimeoutError) as exc:
        link.mark_lost()
        raise BackendError(connection.dropped_message(exc)) from None
    text = await _header(process, connection.connect_timeout)
    if not text.isdigit():
        process.close()
        if text in CWD_ERRORS:
            raise BackendError(
                f"Working directory {cwd!r} {CWD_ERRORS[text]} on {connection.display}."
            )
        raise BackendError(f"{connection.display}: cannot start {argv[0]!r} (no shell answered)")
    return SSHProcess(connection, process, int(text))


async def _header(process: asyncssh.SSHClientProcess[bytes], timeout: float) -> str:
    """The header's first word; lines a login script printed before it are dropped."""
    deadline = asyncio.get_running_loop().time() + timeout
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


class SSHProcess(InteractiveProcess):
    """A remote process with byte pipes over one channel, stopped as a group on close."""

    def __init__(
        self, connection: Connection, process: asyncssh.SSHClientProcess[bytes], pgid: int
    ) -> None:
        self._connection = connection
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
                await self._connection.signal_group(self.pgid, sig)
        process.close()

    @property
    def returncode(self) -> int | None:
        return self._process.returncode


__all__ = ["SSHProcess", "start_process"]

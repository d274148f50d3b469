"""Run one command on the remote host and supervise it until it ends, times out or is cancelled.

Why it is built this way:

* **A channel is retried only before the command is sent.** A failed channel *open* on a
  connection found dead is retried once on a fresh one: the command was not sent, so it
  cannot run twice. A connection lost after the exec request is an error whose outcome is
  unknown, and the group it left is killed after the reconnect.
* **The remote process group is killed, not the channel.** sshd only closes the pipes when
  a channel closes, so a timeout or cancel sends ``kill -s TERM -- -PGID`` over a second
  channel, then ``KILL`` after a grace period: ``sleep 300 &`` dies with its shell, as
  locally. The wait, kill and drain sequence is the local backend's (``wait_for_end``).
* **Notices reach the person, once.** A reconnect or a fallback noticed while the backend
  runs a command for itself is kept for the next command the person sees.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import asyncssh

from tui.exec.backend import BackendError, ChunkSink, ExecResult
from tui.exec.ssh.channel import CommandSession, session_factory
from tui.exec.ssh.command_line import CWD_ERRORS, command_line
from tui.exec.ssh.connection import Connection, reason
from tui.exec.streams import KILL_GRACE, REAP_LIMIT, wait_for_end

_INTERNAL: contextvars.ContextVar[bool] = contextvars.ContextVar("ssh_internal", default=False)
"""Set while the backend runs commands for itself: those must not swallow pending notices."""


@contextmanager
def internal_commands() -> Iterator[None]:
    """Commands run inside are the backend's own: they leave pending notices for the next."""
    token = _INTERNAL.set(True)
    try:
        yield
    finally:
        _INTERNAL.reset(token)


class RemoteRunner:
    """Runs commands as channels on one connection.

    Args:
        connection: The host's connection.
        default_cwd: Remote working directory when a command gets none; None is the home.
        drain_timeout: Seconds to keep reading after the command exited while a background
            process still holds its output.
    """

    def __init__(
        self, connection: Connection, *, default_cwd: str | None, drain_timeout: float
    ) -> None:
        self._connection = connection
        self._default_cwd = default_cwd
        self._drain_timeout = drain_timeout

    async def execute(
        self,
        command: str,
        cwd: str | None,
        env: Mapping[str, str] | None,
        timeout: float | None,
        on_chunk: ChunkSink | None,
        cancel: asyncio.Event | None,
        stdin: bytes | None,
    ) -> ExecResult:
        """Run ``command`` to its end; see ``ExecutionBackend.run`` for the arguments."""
        workdir = cwd if cwd is not None else self._default_cwd
        started = time.perf_counter()
        internal = _INTERNAL.get()
        notices = [] if internal else self._connection.take_notices()
        channel, session = await self._open(command, workdir, env, on_chunk, notices)
        if internal:  # a reconnect noticed here is for the next command the person sees
            self._connection.defer(notices)
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
                self._connection.kill_later(session.pgid)
            raise
        finally:
            session.detach()
            channel.close()

    async def _open(
        self,
        command: str,
        workdir: str | None,
        env: Mapping[str, str] | None,
        on_chunk: ChunkSink | None,
        notices: list[str],
    ) -> tuple[asyncssh.SSHClientChannel[bytes], CommandSession]:
        """Open a channel running ``line``; a connection found dead is reopened once.

        Only a failed channel *open* is retried: the command was not sent yet, so it cannot
        run twice. A connection lost after the exec request is an error.
        """
        connection = self._connection
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            link = await connection.link(notices)
            session = CommandSession(loop, on_chunk, link)
            line = command_line(command, workdir, env, link.login_bash)
            try:
                channel, _ = await asyncio.wait_for(
                    link.conn.create_session(session_factory(session), line, encoding=None),
                    connection.connect_timeout,
                )
            except asyncssh.ChannelOpenError as exc:
                if exc.code != asyncssh.OPEN_CONNECT_FAILED:
                    raise BackendError(
                        f"{connection.display} refused to run a command: {exc.reason}"
                    ) from None
                link.mark_lost()
                if attempt == 2:
                    raise BackendError(connection.dropped_message(exc)) from None
                continue
            except TimeoutError:
                link.mark_lost()
                raise BackendError(
                    f"{connection.display} did not answer within "
                    f"{connection.connect_timeout:g} s; the next command reconnects"
                ) from None
            except (asyncssh.Error, OSError) as exc:
                link.mark_lost()
                raise BackendError(connection.dropped_message(exc)) from None
            for notice in notices:
                session.notice(notice)
            return channel, session
        raise AssertionError("unreachable")

    async def _kill_session(self, session: CommandSession) -> None:
        """SIGTERM the remote group, give it ``KILL_GRACE`` seconds, then SIGKILL it."""
        session.killing = True
        await asyncio.wait({session.header}, timeout=self._connection.connect_timeout)
        pgid = session.pgid
        if pgid is None:
            return  # it never started (or already ended): closing the channel is enough
        await self._connection.signal_group(pgid, "TERM")
        await asyncio.wait({session.closed}, timeout=KILL_GRACE)
        # Always: a member that ignores TERM and closed its output would not hold the channel.
        await self._connection.signal_group(pgid, "KILL")
        await asyncio.wait({session.ended}, timeout=REAP_LIMIT)

    def _raise_for_start(
        self, session: CommandSession, workdir: str | None, started: float
    ) -> None:
        """Turn a command that never ran, or lost its connection, into a BackendError."""
        display = self._connection.display
        header = session.header.result() if session.header.done() else ""
        if header in CWD_ERRORS:
            raise BackendError(f"Working directory {workdir!r} {CWD_ERRORS[header]} on {display}.")
        if session.lost is not None and session.exit_code is None and not session.killing:
            if session.pgid is not None:
                self._connection.orphaned(session.pgid, started)
            raise BackendError(
                f"lost the connection to {display} while the command ran "
                f"({reason(session.lost)}); its outcome is unknown. The next command "
                "reconnects and stops what it left running."
            )
        if not header and not session.killing:
            detail = session.stderr.text.strip() or f"exit status {session.exit_code}"
            raise BackendError(f"the remote shell on {display} did not start the command: {detail}")


__all__ = ["RemoteRunner", "internal_commands"]

"""Run commands and move files on a remote host over one SSH connection.

Why it is built this way: the backend is the ``ExecutionBackend`` face of a few collaborators,
each with one job and the reasons for it in its own module:

* ``connection.Connection``: one connection, opened lazily and reopened once after a drop
  (every command, SFTP call and spawned process is a channel on it); it signals remote
  process groups and keeps the notices a reconnect or a fallback leaves.
* ``host_keys``: host keys are verified, never accepted; refusals say how to trust a key.
* ``command_line``: the string sshd hands the login shell (cwd, environment, process group).
* ``runner.RemoteRunner``: one command, supervised to its end, timeout or cancel.
* ``files.SftpFiles``: atomic SFTP file I/O. A server without SFTP falls back to
  ``CommandBackend``'s shell file I/O, with a notice.
* ``process``: long-lived interactive processes (tmux control mode rides on them).
"""

from __future__ import annotations

import asyncio
import os
import posixpath
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tui.exec.backend import (
    BackendError,
    ChunkSink,
    CommandBackend,
    ExecResult,
    InteractiveProcess,
    cancelled_early,
)
from tui.exec.sandbox.remote import run_confined
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.ssh.connection import Connection
from tui.exec.ssh.files import SftpFiles
from tui.exec.ssh.process import start_process
from tui.exec.ssh.runner import RemoteRunner, internal_commands
from tui.exec.ssh.target import SSHTarget
from tui.security.confinement import OUTSIDE, Confinement

if TYPE_CHECKING:
    from tui.config import SshSettings


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
        label: The name the person knows the host by (a fleet's inventory name), for
            ``actor``; unset: ``user@host`` as typed.
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
        label: str | None = None,
    ) -> None:
        self.target = target if isinstance(target, SSHTarget) else SSHTarget.parse(target)
        self.label = label
        self._default_cwd = default_cwd
        self.sandbox: Sandbox | None = None
        """The host's own sandbox (``RemoteSandbox``), set once its probe found bwrap working."""
        self._connection = Connection(
            self.target,
            identity_file=os.path.expanduser(identity_file) if identity_file else None,
            known_hosts=known_hosts,
            ssh_config=ssh_config,
            connect_timeout=connect_timeout,
        )
        self._runner = RemoteRunner(
            self._connection, default_cwd=default_cwd, drain_timeout=drain_timeout
        )
        self._files = SftpFiles(self._connection, default_cwd=default_cwd)

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
        return f"ssh:{self.label or self.target.short}"

    @property
    def display(self) -> str:
        """``user@host:port`` as resolved through the ssh config, for error messages."""
        return self._connection.display

    def start_in(self, cwd: str) -> None:
        """Where commands, relative paths and processes start from now on (a fleet host's
        workspace, learnt on the connection it is then kept on)."""
        self._default_cwd = cwd
        self._runner._default_cwd = cwd
        self._files._default_cwd = cwd

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
        confinement: Confinement | None = None,
    ) -> ExecResult:
        if (early := cancelled_early(cancel)) is not None:
            return early
        workdir = cwd if cwd is not None else self._default_cwd

        async def execute(line: str) -> ExecResult:
            return await self._runner.execute(line, cwd, env, timeout, on_chunk, cancel, None)

        return await run_confined(self.sandbox, command, confinement, workdir, execute)

    async def run_with_stdin(self, command: str, data: bytes) -> ExecResult:
        """``command`` with ``data`` on its stdin, output collected (for completeness)."""
        return await self._runner.execute(command, None, None, None, None, None, data)

    # -- files --------------------------------------------------------------------------------

    async def read_file(self, path: str) -> bytes:
        link, sftp = await self._connection.sftp()
        if sftp is None:
            with internal_commands():
                return await super().read_file(await self._shell_path(path))
        return await self._files.read(link, sftp, path)

    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        link, sftp = await self._connection.sftp()
        if sftp is None:
            with internal_commands():
                path = await self._shell_path(path)
                return await super().write_file(path, data, make_parents=make_parents)
        await self._files.write(link, sftp, path, data, make_parents)

    async def _shell_path(self, path: str) -> str:
        """``~/x`` for the shell fallback, which quotes paths (so ``~`` would not expand)."""
        if path != "~" and not path.startswith("~/"):
            return path
        home = (await self.run('printf %s "$HOME"', confinement=OUTSIDE)).stdout
        return posixpath.join(home, path[2:])

    # -- interactive processes -----------------------------------------------------------------

    async def spawn(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str] | None = None,
        confinement: Confinement | None = None,
        own_program: bool = False,
    ) -> InteractiveProcess:
        """``argv`` on the remote host with byte pipes, stderr merged into stdout (as locally),
        in ``default_cwd``. Its process group is known, so ``close`` can always stop it.
        Confined like ``run`` unless ``own_program`` (agent-tui's tmux control client)."""
        if self.sandbox is not None and not own_program:
            argv = await self.sandbox.wrap(argv, confinement, cwd=self._default_cwd)
        return await start_process(self._connection, argv, env=env, cwd=self._default_cwd)

    async def close(self) -> None:
        """Finish pending kills, then close the connection. The backend cannot be reused."""
        await self._connection.close()


__all__ = ["SSHBackend"]

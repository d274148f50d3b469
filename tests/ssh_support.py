"""Helpers shared by the SSH backend tests: a chunk recorder, remote liveness checks, and an
in-process asyncssh server for the fast tests.

Why an in-process server as well as a real sshd: it starts in milliseconds with nothing
installed, so most behaviour (streaming, decoding, kills, SFTP, host keys, drops) is checked on
every machine; the real-sshd tests then check what only OpenSSH does.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import asyncssh

from tests.waiting import until
from tui.exec.ssh.backend import SSHBackend

DEADLINE = 10.0
"""Generous upper bound for anything that should happen 'soon' on a loaded CI machine."""


async def remote_alive(backend: SSHBackend, pid: int) -> bool:
    """``kill -0`` over another command; a zombie counts as dead (nobody may reap it here:
    pid 1 of a container or VM is not always an init that reaps orphans)."""
    result = await backend.run(
        f"kill -0 {pid} 2>/dev/null || exit 1; s=$(cat /proc/{pid}/stat 2>/dev/null) || exit 1; "
        'case "${s##*) }" in Z*|X*) exit 1;; esac',
        timeout=DEADLINE,
    )
    return result.exit_code == 0


async def assert_remote_dead(backend: SSHBackend, pids: list[int]) -> None:
    """Fail unless every pid is dead within ``DEADLINE`` seconds (checked over SSH)."""

    async def all_dead() -> bool:
        return not [pid for pid in pids if await remote_alive(backend, pid)]

    await until(all_dead, f"remote processes {pids} to die", DEADLINE)


def read_pids(path: Path) -> list[int]:
    return [int(word) for word in path.read_text().split()]


# --------------------------------------------------------------------------- in-process server


class InProcessServer:
    """An asyncssh server on 127.0.0.1 that runs each command with ``LOGIN_SHELL -c`` in a new
    session, like sshd (``SHELL`` says which), and serves SFTP on the local file system.

    Unlike sshd it reports the exit status only after the output pipes close, and it runs
    commands as the test's own user.
    """

    def __init__(
        self,
        root: Path,
        login_shell: str = "/bin/bash",
        *,
        sftp: bool = True,
        login_noise: str = "",
    ) -> None:
        self.root = root
        self.login_shell = login_shell
        self.sftp = sftp
        self.login_noise = login_noise
        """Shell code run before each command, like a chatty ``.bashrc``."""
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key_path = root / "client_key"
        self.known_hosts = root / "known_hosts"
        self.connections: list[asyncssh.SSHServerConnection] = []
        self.accepted = 0
        self.children: list[asyncio.subprocess.Process] = []
        self._server: asyncssh.SSHAcceptor | None = None
        self.port = 0

    async def start(self) -> InProcessServer:
        client_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key.write_private_key(str(self.client_key_path))
        self._server = await asyncssh.create_server(
            self._make_server,
            "127.0.0.1",
            0,
            server_host_keys=[self.host_key],
            authorized_client_keys=asyncssh.import_authorized_keys(
                client_key.export_public_key("openssh").decode()
            ),
            process_factory=self._run_command,
            sftp_factory=self.sftp,
            encoding=None,
            allow_scp=False,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self.trust(self.host_key)
        return self

    @property
    def target(self) -> str:
        return f"{os.environ.get('USER', 'root')}@127.0.0.1:{self.port}"

    def trust(self, key: asyncssh.SSHKey, path: Path | None = None) -> None:
        """Write a known_hosts file that trusts ``key`` for this server."""
        algorithm, blob = key.export_public_key("openssh").decode().split()[:2]
        (path or self.known_hosts).write_text(f"[127.0.0.1]:{self.port} {algorithm} {blob}\n")

    def backend(self, **kwargs: object) -> SSHBackend:
        options: dict[str, object] = {
            "identity_file": str(self.client_key_path),
            "known_hosts": str(self.known_hosts),
            "ssh_config": [],
            "connect_timeout": 5.0,
        }
        options.update(kwargs)
        return SSHBackend(self.target, **options)  # type: ignore[arg-type]

    def drop_connections(self) -> None:
        """Cut every client connection, as a crashed server or a dead network would."""
        for conn in self.connections:
            conn.abort()
        self.connections.clear()

    def _make_server(self) -> asyncssh.SSHServer:
        server = self

        class _Server(asyncssh.SSHServer):
            def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
                server.accepted += 1
                server.connections.append(conn)

        return _Server()

    async def _run_command(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        child = await asyncio.create_subprocess_exec(
            self.login_shell,
            "-c",
            self.login_noise + (process.command or ""),
            env={**os.environ, "SHELL": self.login_shell},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        self.children.append(child)
        feeding = asyncio.ensure_future(_feed(process.stdin, child.stdin))
        try:
            await asyncio.gather(
                _pump(child.stdout, process.stdout), _pump(child.stderr, process.stderr)
            )
            code = await child.wait()
        finally:
            feeding.cancel()
        try:
            if code < 0:
                process.exit_with_signal(signal.Signals(-code).name[3:])
            else:
                process.exit(code)
        except (asyncssh.Error, OSError):
            pass

    async def close(self) -> None:
        """Kill every command's group (a dropped client leaves them running, as sshd does)."""
        for child in self.children:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for child in self.children:
            await child.wait()
            for pipe in (child.stdout, child.stderr):
                if pipe is not None:
                    await pipe.read()
        self.drop_connections()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


async def _pump(reader: asyncio.StreamReader | None, writer: asyncssh.SSHWriter[bytes]) -> None:
    """Copy one output pipe to the channel; a closed channel just stops the copy."""
    assert reader is not None
    while chunk := await reader.read(65536):
        try:
            writer.write(chunk)
            await writer.drain()
        except (asyncssh.Error, OSError):
            return


async def _feed(reader: asyncssh.SSHReader[bytes], writer: asyncio.StreamWriter | None) -> None:
    assert writer is not None
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (asyncssh.Error, OSError):
        pass
    finally:
        writer.close()

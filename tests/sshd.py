"""A throwaway OpenSSH server on 127.0.0.1, shared by the SSH tests and ``bench/ssh.py``.

Why a real ``sshd`` and not only asyncssh's server: login shells, ``setsid`` per session,
exit-status before the output is drained, ``internal-sftp`` and what happens to commands when
the server dies are OpenSSH behaviours, and the backend exists to talk to OpenSSH.

The server runs as a dedicated unprivileged user (``atui-test``, created when missing), with a
host key, ``authorized_keys``, pid file and config in a fresh temporary folder, so it touches
nothing of the machine's own SSH set-up; its sessions get ``HISTFILE=/dev/null``, so the
user's shells write no history into the home that every test process shares. Everything it
needs is checked up front and reported as :class:`SshdUnavailable` with a reason a test can
``skip`` on.

    with SshServer.start() as server:
        server.target          # "atui-test@127.0.0.1:PORT"
        server.client_key      # private key file the user accepts
        server.known_hosts     # a known_hosts file that trusts this server
"""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import asyncssh

DEFAULT_USER = "atui-test"
START_DEADLINE = 10.0
"""Seconds for sshd to accept connections: it normally takes under half a second."""


class SshdUnavailable(RuntimeError):
    """This machine cannot run the test sshd; the message says why (for ``pytest.skip``)."""


def find_sshd() -> str | None:
    """sshd must be called by absolute path (it re-executes itself); it is often off PATH."""
    found = shutil.which("sshd")
    if found:
        return os.path.abspath(found)
    for candidate in ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def ensure_user(name: str) -> pwd.struct_passwd:
    """Create the unprivileged login user once; ``useradd`` leaves it locked, so unlock it.

    ``usermod -p '*'`` sets a password hash nothing matches: the account is usable with keys
    but never with a password.
    """
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    if os.geteuid() != 0:
        raise SshdUnavailable(f"user {name!r} does not exist and creating it needs root")
    for tool in ("useradd", "usermod"):
        if shutil.which(tool) is None:
            raise SshdUnavailable(f"{tool} is not installed, cannot create user {name!r}")
    # Test processes running side by side may all find the user missing: one creates it, the
    # others wait (useradd refuses outright while another holds /etc/passwd's lock).
    with open(Path(tempfile.gettempdir(), f"agent-tui-test-user-{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
        _check(["useradd", "--create-home", "--shell", "/bin/bash", name], f"useradd {name}")
        _check(["usermod", "-p", "*", name], f"usermod -p '*' {name}")
    return pwd.getpwnam(name)


def _check(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        # Another test process may have created the user at the same moment.
        if argv[0] == "useradd" and done.returncode == 9:
            return
        raise SshdUnavailable(f"{what} failed: {done.stderr.strip() or done.returncode}")


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now on ``host`` (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def wait_for_port(host: str, port: int, deadline: float, process: subprocess.Popen[bytes]) -> None:
    """Poll until ``host:port`` accepts a TCP connection; fail early if sshd died."""
    while True:
        if process.poll() is not None:
            raise SshdUnavailable(f"sshd exited with status {process.returncode} at start-up")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise SshdUnavailable(f"sshd did not accept connections on {host}:{port}") from None
            time.sleep(0.01)


@dataclass
class SshServer:
    """One running sshd and the files a client needs to reach it."""

    root: Path
    user: str
    port: int
    sshd: str
    host: str = "127.0.0.1"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    shared_client_key: Path | None = None
    """A client key many servers accept (a fleet's): its public half is authorized here."""

    # -- paths -------------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self.root / "sshd_config"

    @property
    def host_key_path(self) -> Path:
        return self.root / "host_ed25519"

    @property
    def pid_file(self) -> Path:
        return self.root / "sshd.pid"

    @property
    def authorized_keys(self) -> Path:
        return self.root / "authorized_keys"

    @property
    def client_key(self) -> Path:
        return self.shared_client_key or self.root / "client_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def log_path(self) -> Path:
        return self.root / "sshd.log"

    @property
    def scratch(self) -> Path:
        """A folder both the test process and the login user can read and write."""
        return self.root / "scratch"

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def host_key(self) -> asyncssh.SSHKey:
        return asyncssh.read_public_key(str(self.host_key_path) + ".pub")

    # -- life cycle --------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        user: str = DEFAULT_USER,
        *,
        host: str = "127.0.0.1",
        client_key: Path | None = None,
    ) -> SshServer:
        """Prepare a fresh folder, keys and config, start sshd and wait until it accepts.

        Args:
            user: The login user (created when missing).
            host: The loopback address to listen on (``127.0.0.N``: one per fleet host).
            client_key: A private key file to authorize instead of a fresh one (a fleet's
                hosts all accept one key, as an ops person's do).
        """
        sshd = find_sshd()
        if sshd is None:
            raise SshdUnavailable("OpenSSH sshd is not installed (apt-get install openssh-server)")
        if os.geteuid() != 0:
            raise SshdUnavailable("starting sshd for another user needs root")
        ensure_user(user)
        # Not under pytest's tmp dirs: those are 0700 and sshd reads authorized_keys as `user`.
        root = Path(tempfile.mkdtemp(prefix="atui-sshd-"))
        root.chmod(0o755)
        server = cls(
            root=root,
            user=user,
            port=free_port(host),
            sshd=sshd,
            host=host,
            shared_client_key=client_key,
        )
        try:
            server._write_files()
            server._launch()
        except BaseException:
            server.stop()
            raise
        return server

    def _write_files(self) -> None:
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        host_key.write_private_key(str(self.host_key_path))
        host_key.write_public_key(str(self.host_key_path) + ".pub")
        self.host_key_path.chmod(0o600)
        if self.shared_client_key is not None:
            client_key = asyncssh.read_private_key(str(self.shared_client_key))
        else:
            client_key = asyncssh.generate_private_key("ssh-ed25519", comment="atui-test-client")
            client_key.write_private_key(str(self.client_key))
            self.client_key.chmod(0o600)
        self.authorized_keys.write_bytes(client_key.export_public_key("openssh"))
        self.authorized_keys.chmod(0o644)
        self.write_known_hosts(self.known_hosts, host_key)
        self.scratch.mkdir()
        self.scratch.chmod(0o777)
        info = pwd.getpwnam(self.user)
        os.chown(self.scratch, info.pw_uid, info.pw_gid)
        self.config_path.write_text(self._config_text())

    def write_known_hosts(self, path: Path, key: asyncssh.SSHKey) -> None:
        """A known_hosts file trusting ``key`` for this server (``[host]:port`` form)."""
        line = key.export_public_key("openssh").decode().split()
        path.write_text(f"[{self.host}]:{self.port} {line[0]} {line[1]}\n")

    def _config_text(self) -> str:
        return "\n".join(
            [
                f"Port {self.port}",
                f"ListenAddress {self.host}",
                f"HostKey {self.host_key_path}",
                f"PidFile {self.pid_file}",
                f"AuthorizedKeysFile {self.authorized_keys}",
                f"AllowUsers {self.user}",
                "UsePAM no",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "StrictModes no",
                "MaxSessions 50",
                "MaxStartups 100:30:200",
                "PrintMotd no",
                "PrintLastLog no",
                "Subsystem sftp internal-sftp",
                # The user's home is shared by every test process: shells that rewrote
                # ~/.bash_history there would race the sandboxes that hide it (bwrap fails to
                # mount over a file gone mid-rewrite).
                "SetEnv HISTFILE=/dev/null",
                "LogLevel ERROR",
                "",
            ]
        )

    def _launch(self) -> None:
        """``-D`` keeps sshd in the foreground so it stays our child and can be reaped."""
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # privilege separation dir
        checked = subprocess.run(
            [self.sshd, "-t", "-f", str(self.config_path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if checked.returncode != 0:
            raise SshdUnavailable(f"sshd -t rejected the config: {checked.stderr.strip()}")
        self.pid_file.unlink(missing_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [self.sshd, "-D", "-e", "-f", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for_port(self.host, self.port, time.monotonic() + START_DEADLINE, self.process)

    def restart(self) -> None:
        """Start again on the same port with the same keys (after ``stop`` or ``kill_hard``)."""
        self._launch()

    def listener_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return self.process.pid if self.process and self.process.poll() is None else None

    def stop(self) -> None:
        """Stop the listener by the pid in its PidFile (connections it forked end with it)."""
        self._signal_all(signal.SIGTERM, listener_only=True)
        self._reap()

    def kill_hard(self) -> None:
        """SIGKILL the listener and every per-connection sshd: a crash, as a client sees it.

        The users' commands are left alone, as they are when a real sshd dies.
        """
        self._signal_all(signal.SIGKILL, listener_only=False)
        self._reap()

    def _signal_all(self, sig: signal.Signals, *, listener_only: bool) -> None:
        pid = self.listener_pid()
        if pid is None:
            return
        targets = [pid] if listener_only else [pid, *sshd_descendants(pid)]
        for target in targets:
            try:
                os.kill(target, sig)
            except ProcessLookupError:
                pass

    def _reap(self) -> None:
        if self.process is not None:
            try:
                self.process.wait(timeout=START_DEADLINE)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.pid_file.unlink(missing_ok=True)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def cleanup(self) -> None:
        """Stop the server, end its connections, kill what tests left, remove the folder."""
        pid = self.listener_pid()
        children = sshd_descendants(pid) if pid is not None else []
        self.stop()
        for child in [*children, *self.leftovers()]:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)

    def leftovers(self) -> list[int]:
        """The login user's processes that came through this server (a failed test's orphans).

        Matched by this server's port in ``SSH_CONNECTION`` or this folder in the command line,
        so another test run sharing the user is left alone.
        """
        uid = pwd.getpwnam(self.user).pw_uid
        marker_env = f" {self.port}\0".encode()
        found: list[int] = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    cmdline = handle.read()
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    environ = handle.read()
            except OSError:
                continue
            connection = [v for v in environ.split(b"\0") if v.startswith(b"SSH_CONNECTION=")]
            if str(self.root).encode() in cmdline or (
                connection and (connection[0] + b"\0").endswith(marker_env)
            ):
                found.append(int(entry))
        return found

    def __enter__(self) -> SshServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()


def sshd_descendants(root_pid: int) -> list[int]:
    """Every descendant of ``root_pid`` that is an sshd process, from ``/proc``."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                raw = handle.read()
        except OSError:
            continue
        name = raw[raw.find("(") + 1 : raw.rfind(")")]
        parent = int(raw.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
        names[int(entry)] = name
    found: list[int] = []
    stack = [root_pid]
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child)
            if names.get(child, "").startswith("sshd"):
                found.append(child)
    return found

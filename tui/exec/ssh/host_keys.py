"""Host keys are verified, never accepted: which known_hosts files, and the refusal to show.

Why it is built this way: an unknown key is refused with its SHA256 fingerprint and the
exact command that trusts it; a key that differs from the recorded one is refused as a
possible man-in-the-middle. Verification cannot be switched off from an ssh config
(``UserKnownHostsFile none`` would make asyncssh skip it): we always pass a file, and when
none exists we pass ``b""``, which trusts nothing.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import asyncssh

from tui.exec.backend import BackendError
from tui.exec.ssh.target import DEFAULT_PORT


class KnownHosts:
    """The known_hosts files one backend checks host keys against.

    Args:
        setting: ``[ssh].known_hosts``; unset uses the ssh config's files, else
            ``~/.ssh/known_hosts``.
    """

    def __init__(self, setting: str | None) -> None:
        self._setting = setting
        self.paths: list[str] = []
        """Chosen by ``choose`` once the ssh config is resolved; the first one is named in
        refusals as the file to add a key to."""

    def choose(self, options: asyncssh.SSHClientConnectionOptions) -> None:
        """The setting, else the config's files, else ``~/.ssh/known_hosts``; never none."""
        if self._setting:
            self.paths = [str(Path(self._setting).expanduser())]
            return
        configured = options.known_hosts
        if isinstance(configured, (list, tuple)) and configured:
            self.paths = [str(Path(str(path)).expanduser()) for path in configured]
        elif isinstance(configured, str) and configured:
            self.paths = [str(Path(configured).expanduser())]
        else:
            self.paths = [str(Path("~/.ssh/known_hosts").expanduser())]

    def existing(self) -> list[str] | bytes:
        """Existing files only (asyncssh fails on a missing one); ``b""`` trusts nothing."""
        existing = [path for path in self.paths if Path(path).is_file()]
        return existing or b""

    @property
    def file(self) -> str:
        """The file a person should add a trusted key to."""
        return self.paths[0] if self.paths else "~/.ssh/known_hosts"

    def recorded(self, host: str, addr: str, port: int) -> list[asyncssh.SSHKey]:
        """The keys these files trust for ``host`` (or its address) on ``port``."""
        files = self.existing()
        if not files:
            return []
        try:
            match = asyncssh.match_known_hosts(
                files, host, addr, port if port != DEFAULT_PORT else None
            )
        except (OSError, ValueError):
            return []
        return list(match[0])


def host_key_refusal(
    display: str,
    host: str,
    port: int,
    file: str,
    key: asyncssh.SSHKey | None,
    reason: str,
    recorded: list[asyncssh.SSHKey],
) -> BackendError:
    """Unknown: show the fingerprint and how to trust it. Changed: refuse loudly.

    Args:
        display: The host as the person knows it, for the message.
        host: The name keys are recorded under (``HostKeyAlias`` or the host).
        port: The port connected to.
        file: The known_hosts file to name in the commands shown.
        key: The key the server offered, when asyncssh let us see it.
        reason: asyncssh's own words, for when no key was seen.
        recorded: The keys already trusted for that host (empty: the host is unknown).
    """
    if key is None:
        return BackendError(
            f"refusing {display}: its host key cannot be verified ({reason}).",
            title="Host key not trusted",
        )
    pattern = host if port == DEFAULT_PORT else f"[{host}]:{port}"
    offered = f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"
    keyscan = (
        f"ssh-keyscan -p {port} -t {_keyscan_type(key)} {shlex.quote(host)} >> {shlex.quote(file)}"
    )
    if recorded:
        was = ", ".join(
            f"{old.get_algorithm()} {old.get_fingerprint('sha256')}" for old in recorded
        )
        return BackendError(
            f"REFUSED: the host key of {display} has CHANGED.\n"
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
        f"refusing {display}: its host key is not in {file}.\n"
        f"  offered: {offered}\n"
        "Check this fingerprint with the host's owner (on the host: "
        "ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), then trust it with\n"
        f"  {keyscan}\n"
        "or point [ssh].known_hosts at a known_hosts file that lists it.",
        title="Unknown host key",
    )


def _keyscan_type(key: asyncssh.SSHKey) -> str:
    """``ssh-keyscan -t`` spells key types its own way."""
    algorithm = key.get_algorithm()
    return {
        "ssh-ed25519": "ed25519",
        "ssh-rsa": "rsa",
        "ssh-dss": "dsa",
        "sk-ssh-ed25519@openssh.com": "ed25519-sk",
    }.get(algorithm, "ecdsa" if algorithm.startswith("ecdsa") else algorithm)


__all__ = ["KnownHosts", "host_key_refusal"]

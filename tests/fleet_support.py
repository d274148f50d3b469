"""A fleet of real OpenSSH servers for the fleet tests and ``bench/fleet.py``.

Twenty ``sshd`` processes, each on its own loopback address (127.0.0.2 … 127.0.0.21) with its
own host key, all letting the unprivileged ``atui-test`` user in with one client key, as an
ops person's hosts let their key in. An Ansible inventory (INI) names them with groups,
``children`` and ranges (``web[01:12]``); most hosts get their address and port from
``host_vars/`` files, a few only from an ``~/.ssh/config`` alias (``Host db3``) and a ``Host``
pattern (``Host db*``), as they resolve for one host.
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from tests.sshd import DEFAULT_USER, SshdUnavailable, SshServer

WEB = [f"web{n:02d}" for n in range(1, 13)]
DB = [f"db{n}" for n in range(1, 5)]
CACHE = ["cache-a", "cache-b", "cache-c", "cache-d"]
NAMES = [*WEB, *DB, *CACHE]
ALIASED = {"db3", "db4"}
"""Hosts the inventory names with no address: ``~/.ssh/config`` says where they are."""

INVENTORY = """\
# The fleet of the tests: ranges, groups, children, group vars.
[web]
{web}

[db]
{db}

[cache]
{cache}

[prod:children]
web
db

[staging:children]
cache

[all:vars]
ansible_user={user}
"""


@dataclass
class FleetLab:
    """The running servers and the files a client needs to reach them."""

    root: Path
    servers: dict[str, SshServer]
    client_key: Path
    known_hosts: Path
    inventory: Path
    home: Path
    """A ``$HOME`` whose ``.ssh/config`` holds the aliases (the tests point HOME here)."""
    workspace: str
    """A folder the login user owns: every host's workspace (``--workspace``)."""
    stopped: set[str] = field(default_factory=set)

    def config_toml(self, extra: str = "") -> str:
        return (
            f'[ssh]\nidentity_file = "{self.client_key}"\n'
            f'known_hosts = "{self.known_hosts}"\nconnect_timeout = 5\n\n{extra}'
        )

    def address(self, name: str) -> str:
        return self.servers[name].host

    def kill(self, name: str) -> None:
        """SIGKILL one host's sshd and its connections (a crash as a client sees it)."""
        self.servers[name].kill_hard()
        self.stopped.add(name)

    def revive(self) -> None:
        """Start again every server a test killed, on the same address, port and key."""
        for name in sorted(self.stopped):
            self.servers[name].restart()
        self.stopped.clear()

    def cleanup(self) -> None:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda server: server.cleanup(), self.servers.values()))
        shutil.rmtree(self.workspace, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)


def start_lab(count: int = 20) -> FleetLab:
    """Start ``count`` servers (at most 20) and write the inventory, keys and ssh config."""
    root = Path(tempfile.mkdtemp(prefix="atui-fleet-"))
    root.chmod(0o755)
    key = asyncssh.generate_private_key("ssh-ed25519", comment="atui-fleet-client")
    client_key = root / "client_ed25519"
    key.write_private_key(str(client_key))
    client_key.chmod(0o644)  # each sshd reads its authorized_keys as the login user
    names = NAMES[:count]
    servers: dict[str, SshServer] = {}

    def start(index_name: tuple[int, str]) -> tuple[str, SshServer]:
        index, name = index_name
        server = SshServer.start(host=f"127.0.0.{index + 2}", client_key=client_key)
        return name, server

    with ThreadPoolExecutor(8) as pool:
        try:
            for name, server in pool.map(start, enumerate(names)):
                servers[name] = server
        except BaseException:
            for server in servers.values():
                server.cleanup()
            raise
    client_key.chmod(0o600)
    lab = FleetLab(
        root=root,
        servers=servers,
        client_key=client_key,
        known_hosts=root / "known_hosts",
        inventory=root / "inventory" / "hosts.ini",
        home=root / "home",
        workspace=_workspace(),
    )
    _write_files(lab)
    return lab


def _workspace() -> str:
    info = pwd.getpwnam(DEFAULT_USER)
    folder = Path(info.pw_dir) / f"atui-fleet-{os.getpid()}-{os.urandom(3).hex()}"
    folder.mkdir(mode=0o755)
    os.chown(folder, info.pw_uid, info.pw_gid)
    return str(folder)


def known_hosts_lines(lab: FleetLab, names: Iterator[str] | list[str]) -> str:
    lines = []
    for name in names:
        server = lab.servers[name]
        algorithm, blob = server.host_key.export_public_key("openssh").decode().split()[:2]
        lines.append(f"[{server.host}]:{server.port} {algorithm} {blob}")
        if name in ALIASED:
            lines.append(f"[{name}]:{server.port} {algorithm} {blob}")
    return "\n".join(lines) + "\n"


def _write_files(lab: FleetLab) -> None:
    lab.known_hosts.write_text(known_hosts_lines(lab, list(lab.servers)))
    folder = lab.inventory.parent
    (folder / "host_vars").mkdir(parents=True)
    started = set(lab.servers)
    web = len([n for n in WEB if n in started])
    db = len([n for n in DB if n in started])
    cache = "abcd"[: len([n for n in CACHE if n in started])]
    lab.inventory.write_text(
        INVENTORY.format(
            user=DEFAULT_USER,
            web=f"web[01:{web:02d}]" if web else "",
            db=f"db[1:{db}]" if db else "",
            cache=f"cache-[a:{cache[-1]}]" if cache else "",
        )
    )
    aliases = []
    for name, server in lab.servers.items():
        if name in ALIASED:
            aliases.append(f"Host {name}\n    HostName {server.host}\n    Port {server.port}\n")
            continue
        (folder / "host_vars" / f"{name}.yml").write_text(
            f"ansible_host: {server.host}\nansible_port: {server.port}\n"
        )
    ssh = lab.home / ".ssh"
    ssh.mkdir(parents=True)
    # A Host pattern, as people write them: every db host's user comes from here too.
    aliases.append(f"Host db*\n    User {DEFAULT_USER}\n")
    (ssh / "config").write_text("\n".join(aliases))


__all__ = ["ALIASED", "CACHE", "DB", "NAMES", "WEB", "FleetLab", "known_hosts_lines", "start_lab"]


def lab_for_module(count: int) -> Iterator[FleetLab]:
    """A module fixture's body: ``count`` hosts, skipped with the reason where sshd cannot
    run, cleaned up after the module."""
    import pytest

    try:
        running = start_lab(count)
    except SshdUnavailable as error:
        pytest.skip(str(error))
    try:
        yield running
    finally:
        running.cleanup()

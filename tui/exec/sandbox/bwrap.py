"""The one function that turns a confinement into a ``bwrap`` argv, and finding ``bwrap``.

Every local spawn that runs a program for the agent goes through ``bwrap_argv``: commands,
the tmux pane's shell, hooks, MCP stdio servers, the Python REPL. What the walls are:

* ``--ro-bind / /`` then fresh ``/dev``, ``/proc`` (own PID namespace: no other process, no
  ``/proc/<agent>/mem``) with ``/proc/sys`` read-only (as root, bwrap leaves sysctls such as
  ``kernel.core_pattern`` writable: a program the kernel would run as root), and tmpfs over
  ``/tmp``, ``/var/tmp``, ``/run``;
* the workspace bound back (read-write in the workspace columns, with its control files
  bound read-only over it), secret places and agent-tui's own folders covered, every Unix
  socket covered by ``/dev/null``;
* ``--unshare-all`` (no network but the sandbox's own loopback, own IPC, UTS, PID),
  ``--cap-drop ALL`` (as root bwrap would otherwise keep every capability inside, enough to
  unmount the covers), ``--die-with-parent`` (nothing outlives the agent) and, for commands
  without a terminal, ``--new-session`` (no TIOCSTI into anyone's terminal).

``bwrap`` itself is looked up outside the workspace, by absolute path: a repository could
ship its own ``bwrap`` (Codex learned this).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from tui.exec.sandbox.places import ALWAYS_PRIVATE, Places
from tui.security.confinement import Confinement

PROXY_SOCKET = "/run/agent-tui/proxy.sock"
"""Where the host-policy proxy's socket appears inside a sandbox with network."""
PROXY_PORT = 3128
"""The relay's port on the sandbox's own loopback."""
TRUSTED_DIRS = ("/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/sbin")


def find_bwrap(workspace: Path | None = None, path: str | None = None) -> str | None:
    """The ``bwrap`` to use: a system folder first, then ``PATH`` outside the workspace.

    A relative ``PATH`` entry, or one inside the workspace (after symlinks), is skipped.
    """
    candidates = [os.path.join(d, "bwrap") for d in TRUSTED_DIRS]
    for entry in (path if path is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if entry and os.path.isabs(entry):
            candidates.append(os.path.join(entry, "bwrap"))
    inside = os.path.realpath(workspace) if workspace is not None else None
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if inside is not None and (real == inside or real.startswith(inside + os.sep)):
            continue
        if os.path.isfile(real) and os.access(real, os.X_OK):
            return real
    return None


NO_USERNS = ["--unshare-user", "--disable-userns"]
"""No user namespace inside: a nested one is where a process could gain capabilities again
(bubblewrap 0.8 and later; ``probe_no_userns`` says whether this one has it)."""


async def probe_no_userns(bwrap: str) -> bool:
    """True when this ``bwrap`` can forbid user namespaces inside (``NO_USERNS``)."""
    return await probe(bwrap, NO_USERNS) is None


async def probe(bwrap: str, extra: Sequence[str] = ()) -> str | None:
    """None when ``bwrap`` can build our walls here; else what failed, in its own words."""
    true = shutil.which("true") or "/bin/true"
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--ro-bind", "/proc/sys", "/proc/sys", "--tmpfs", "/tmp"]
    argv += ["--unshare-all", *extra, "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            "--",
            true,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(process.communicate(), timeout=10)
    except (OSError, TimeoutError) as exc:
        return f"{bwrap} could not start: {exc}"
    if process.returncode != 0:
        said = err.decode(errors="replace").strip().splitlines()
        return f"{bwrap} cannot make namespaces here: {said[-1] if said else 'no reason given'}"
    return None


def bwrap_argv(
    bwrap: str,
    confinement: Confinement,
    command: Sequence[str],
    *,
    workspace: Path,
    cwd: str | None,
    places: Places,
    proxy_socket: str | None = None,
    relay: Sequence[str] = (),
    terminal: bool = False,
    setenv: Mapping[str, str] | None = None,
    empty_file: str = "/dev/null",
    no_userns: bool = False,
    status_fd: int | None = None,
) -> list[str]:
    """The argv that runs ``command`` inside ``confinement``'s walls.

    Args:
        bwrap: ``find_bwrap``'s answer.
        confinement: The walls (never ``outside``: that runs without this function).
        command: The program and its arguments.
        workspace: The workspace (readable always, writable in the workspace columns).
        cwd: Where the command starts (it must exist inside; None: the workspace).
        places: ``find_places``'s answer for this spawn.
        proxy_socket: The host-policy proxy's socket outside (network columns only).
        relay: The relay's argv prefix (``python -I -S relay.py``) run before ``command``.
        terminal: The command holds a terminal the person watches (a tmux pane's shell): keep
            the session, so job control works (that terminal's reader is tmux, the only
            other user of it is the same sandbox).
        setenv: Variables set inside.
        empty_file: An empty read-only file bound over hidden files and sockets (an empty
            ``~/.npmrc`` reads as no settings, where ``/dev/null`` on a ``nodev`` mount would
            make the program fail).
        no_userns: Forbid user namespaces inside (``NO_USERNS``, where bwrap can).
        status_fd: bwrap's ``--json-status-fd``: an ``exit-code`` line there means the walls
            were built and the command ran (``setup_failed``).
    """
    if confinement.outside:
        raise ValueError("an outside command is not wrapped")
    # /proc/sys read-only: uid 0 without any capability may still write sysctls it owns, and
    # kernel.core_pattern names a program the kernel runs as root, outside every namespace.
    argv = [bwrap]
    if status_fd is not None:
        argv += ["--json-status-fd", str(status_fd)]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--ro-bind", "/proc/sys", "/proc/sys"]
    for private in places.private:
        argv += ["--tmpfs", private]
    for own in places.own_install:  # agent-tui's own Python and code, read-only
        argv += ["--ro-bind-try", own, own]
    space = str(workspace)
    write = confinement.files == "workspace"
    argv += ["--bind" if write else "--ro-bind", space, space]
    for extra in places.writable if write else ():
        argv += ["--bind", extra, extra]
    if write:
        for path in places.protected:
            argv += ["--ro-bind", path, path]
    if cwd and cwd != space and not cwd.startswith(space + "/") and _under_private(cwd):
        # A start folder in /tmp would vanish under the private tmp: bring it back, read-only.
        argv += ["--ro-bind-try", cwd, cwd]
    for path in places.hidden_dirs:
        argv += ["--tmpfs", path]
    for path in places.readable_again:  # inside a cover, before it turns read-only
        argv += ["--ro-bind", path, path]
    for path in places.hidden_files:
        argv += ["--ro-bind", empty_file, path]
    for path in places.hidden_dirs:
        argv += ["--remount-ro", path]
    env = dict(setenv or {})
    env.setdefault("TMPDIR", "/tmp")
    if confinement.network == "proxy" and proxy_socket is not None:
        argv += ["--dir", os.path.dirname(PROXY_SOCKET), "--bind", proxy_socket, PROXY_SOCKET]
        env.update(proxy_environment())
    argv += ["--unshare-all", *(NO_USERNS if no_userns else ()), "--cap-drop", "ALL"]
    argv.append("--die-with-parent")
    if not terminal:
        argv.append("--new-session")
    # Where the doors are (the tmux server's socket, an ssh-agent, the session bus): unset,
    # besides being covered. TMUX_PANE only names the pane and stays.
    for name in ("TMUX", "SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS"):
        argv += ["--unsetenv", name]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    argv += ["--chdir", cwd or space, "--"]
    if confinement.network == "proxy" and proxy_socket is not None and relay:
        argv += [*relay, PROXY_SOCKET, str(PROXY_PORT), "--"]
    return argv + list(command)


def proxy_environment() -> dict[str, str]:
    """What points programs inside at the relay: HTTP(S) proxies and SOCKS for the rest.

    The sandbox's own loopback stays direct (a test server the command starts itself).
    """
    http = f"http://127.0.0.1:{PROXY_PORT}"
    socks = f"socks5h://127.0.0.1:{PROXY_PORT}"
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[name] = http
    env["ALL_PROXY"] = env["all_proxy"] = socks
    env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
    return env


def _under_private(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in ALWAYS_PRIVATE)


def setup_failed(status: bytes, exit_code: int | None) -> bool:
    """Whether bwrap gave up building the walls, so the command never started.

    bwrap writes ``exit-code`` to its status fd only once the walls stood and the command
    ran; a place that vanished between ``find_places`` and the mount (a history file being
    rewritten) ends it with 1 and no such line. A command's own output cannot fake this.
    """
    return exit_code == 1 and b'"exit-code"' not in status

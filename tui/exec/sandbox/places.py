"""The places a sandbox hides or keeps read-only, found on the real file system at each spawn.

Hidden in every mode: the one list of secret places (``tui/security/secrets.py`` and
``[security] forbidden_paths``), agent-tui's own config and data (API key, grants, other
sessions' transcripts and saved outputs), and every Unix socket the kernel knows of — a socket
stays connectable on a read-only mount, and a socket is a door out (a tmux server, a Docker
daemon, an ssh-agent, systemd). Read-only inside a writable workspace: the control files
that decide what runs later (git hooks and config, the workspace's own agent settings).

Paths are looked up when a sandbox starts, not once at start-up: a secret place created
meanwhile is hidden from the next command on.
"""

from __future__ import annotations

import functools
import glob
import os
import posixpath
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ALWAYS_PRIVATE = ("/tmp", "/var/tmp", "/run", "/var/run")
"""Replaced by a fresh tmpfs in every sandbox: sockets and other users' files live there."""

CONTROL_NAMES = (
    ".agent-tui.toml",
    ".mcp.json",
    ".gitmodules",
    ".agent-tui",
    ".claude",
    ".agents",
    ".git/hooks",
    ".git/config",
    ".git/config.worktree",
    ".git/info",
)
"""Inside the workspace, kept read-only even where the workspace is writable: what git and
agent-tui run later is decided there (``.git/info`` holds ``attributes`` and ``exclude``)."""

_SKIP_PATTERN_ROOTS = ("/proc", "/dev")
"""Fresh in every sandbox: the patterns naming them match nothing of the host's inside."""


@dataclass
class Places:
    """What one sandbox hides and protects."""

    hidden_dirs: list[str] = field(default_factory=list)
    hidden_files: list[str] = field(default_factory=list)
    readable_again: list[str] = field(default_factory=list)
    """Folders inside a hidden one that are bound back read-only (the user's skills)."""
    protected: list[str] = field(default_factory=list)
    private: list[str] = field(default_factory=lambda: list(ALWAYS_PRIVATE))
    """Of ``ALWAYS_PRIVATE``, the real folders there (not symlinks) to cover with a tmpfs."""
    writable: list[str] = field(default_factory=list)
    """Of ``[sandbox] writable``, the folders that exist."""
    own_install: list[str] = field(default_factory=list)
    """Of agent-tui's own install (``own_install``), the folders a private one would cover."""


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _homes(home: str | None) -> tuple[str, ...]:
    """Every home folder there is now: ``/root``, each of ``/home/*`` and ``/Users/*``."""
    found = ["/root"]
    for parent in ("/home", "/Users"):
        try:
            found += sorted(entry.path for entry in os.scandir(parent) if entry.is_dir())
        except OSError:
            continue
    if home:
        found.append(home)
    return tuple(dict.fromkeys(found))


@functools.lru_cache(maxsize=16)
def _candidates(patterns: tuple[str, ...], homes: tuple[str, ...]) -> tuple[str, ...]:
    """Each secret pattern spelled out for ``homes``; wildcards left for ``glob``."""
    out: list[str] = []
    for pattern in patterns:
        bases = homes if pattern == "~" or pattern.startswith("~/") else ("",)
        for base in bases:
            path = posixpath.normpath(base + pattern[1:] if base else pattern)
            if path.startswith("/") and not _under(path, _SKIP_PATTERN_ROOTS):
                out.append(path)
    return tuple(dict.fromkeys(out))


def secret_places(patterns: Iterable[str], home: str | None) -> list[str]:
    """Every existing path the secret patterns name, real paths of symlinks included.

    One ``lstat`` a candidate: this runs at every spawn, inside the ~5 ms a sandbox may add.
    """
    found: list[str] = []
    for candidate in _candidates(tuple(patterns), _homes(home)):
        paths = glob.glob(candidate) if any(c in candidate for c in "*?[") else [candidate]
        for path in paths:
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            found.append(path)
            if stat.S_ISLNK(mode):
                found.append(os.path.realpath(path))
    return list(dict.fromkeys(found))


def unix_sockets() -> list[str]:
    """Paths of the Unix sockets bound in this network namespace (``/proc/net/unix``)."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        return []
    paths = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/") and not fields[7].startswith("/proc/"):
            paths.append(fields[7])
    return paths


def own_install() -> list[str]:
    """Where this agent-tui runs its own helpers from inside the walls: its Python (the
    environment it is installed in) and its package (the network relay's code).

    An install in ``/tmp`` (a quick ``python -m venv /tmp/try``, a checkout there) would be
    covered by the private ``/tmp`` with the rest, and the relay, the Python REPL and every
    hook run with this interpreter would fail to start; such folders are bound back
    read-only. An install anywhere else is on the read-only root already."""
    package = str(Path(__file__).resolve().parents[2])
    return list(dict.fromkeys([sys.prefix, os.path.dirname(sys.executable), package]))


def find_places(
    *,
    patterns: Iterable[str],
    home: str | None,
    own_dirs: Iterable[Path],
    readable_again: Iterable[Path],
    workspace: Path,
    extra_hidden: Iterable[str] = (),
    writable: Iterable[str] = (),
) -> Places:
    """Look up what to hide and protect now.

    Args:
        patterns: The secret places (``[security] forbidden_paths``).
        home: The home folder ``~`` means.
        own_dirs: agent-tui's config and data folders, hidden whole.
        readable_again: Folders inside those bound back read-only (user skills).
        workspace: Whose control files stay read-only.
        extra_hidden: More paths to hide (an ssh-agent socket named in the environment).
        writable: ``[sandbox] writable``: kept where they exist.
    """
    places = Places(
        private=[p for p in ALWAYS_PRIVATE if os.path.isdir(p) and not os.path.islink(p)],
        writable=[w for w in writable if os.path.isdir(w)],
    )
    private = list(ALWAYS_PRIVATE)
    places.own_install = [p for p in own_install() if _under(p, private) and os.path.isdir(p)]
    for path in [*secret_places(patterns, home), *(str(d) for d in own_dirs), *extra_hidden]:
        if _under(path, private) or not os.path.lexists(path):
            continue
        if os.path.isdir(path):
            places.hidden_dirs.append(path)
        else:
            places.hidden_files.append(path)
    hidden = places.hidden_dirs
    for socket_path in unix_sockets():
        inside = _under(socket_path, private) or _under(socket_path, hidden)
        if not inside and os.path.exists(socket_path):
            places.hidden_files.append(socket_path)
    # A place inside a hidden folder is hidden with it (and bwrap could not cover it again:
    # the folder's cover is read-only).
    dirs = sorted(set(places.hidden_dirs), key=len)
    places.hidden_dirs = [d for i, d in enumerate(dirs) if not _under(d, dirs[:i])]
    places.hidden_files = [
        f for f in dict.fromkeys(places.hidden_files) if not _under(f, places.hidden_dirs)
    ]
    places.readable_again = [str(p) for p in readable_again if p.is_dir()]
    for name in CONTROL_NAMES:
        control = workspace / name
        if control.exists():
            places.protected.append(str(control))
    return places

"""Where a warm process listens, and the key that says which runs it may take.

The client computes all of this before anything else is loaded, so only modules the
interpreter has already started, or that are written in C, are imported here: each import of
``pathlib``, ``json`` or ``dataclasses`` would cost more than a warm start saves on its own.
"""

from __future__ import annotations

import os
import stat
import sys

try:  # the interpreter's own SHA-256, without OpenSSL's start-up
    from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256

FORMAT = 1
"""Bumped whenever the protocol or the key changes."""
FOLDER = "warm"
"""Under the data folder; private to the user (0700)."""
SWITCH = "AGENT_TUI_AGENT__WARM_START"
"""``[agent] warm_start`` as a variable: read here, before the settings are."""
WINDOW = 600.0
"""Seconds: a run of the same kind as one this recent starts a warm process for the next."""
IDLE = 600.0
"""Seconds a warm process waits for a run before it ends."""
VOLATILE = frozenset({"_", "OLDPWD", "SHLVL"})
"""Variables a shell changes between two identical commands; nothing at import reads them."""
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE", "AUTH")
"""A variable whose name holds one of these is a secret to the warm process: it is started
with the value blanked, and the key counts only the name (runs bring their own values)."""
_FLAGS_NOT_KEYED = frozenset({"safe_path"})
"""The warm process is started with ``-P`` (nothing from its folder on the search path)."""


def secret_name(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def without_secrets(environ: os._Environ[str] | dict[str, str]) -> dict[str, str]:
    """The environment a warm process is started with: every secret's value blanked."""
    return {name: "" if secret_name(name) else value for name, value in environ.items()}


def switched_off(environ: os._Environ[str] | dict[str, str]) -> bool:
    """``AGENT_TUI_AGENT__WARM_START`` says no, as pydantic reads a false bool."""
    return environ.get(SWITCH, "").strip().lower() in ("0", "false", "f", "no", "n", "off")


def warm_folder(environ: os._Environ[str] | dict[str, str]) -> str:
    """``tui.locations.data_dir() / "warm"``, worked out without importing platformdirs (18 ms)
    on Linux, where its answer is the XDG one (a test holds the two together)."""
    override = environ.get("AGENT_TUI_DATA_DIR")
    if override:
        return os.path.join(override, FOLDER)
    if sys.platform == "linux":
        base = environ.get("XDG_DATA_HOME", "").strip() or os.path.expanduser("~/.local/share")
        return os.path.join(base, "agent-tui", FOLDER)
    from tui.locations import data_dir

    return str(data_dir() / FOLDER)


def private(path: str, *, make: bool = False) -> bool:
    """``path`` is a folder of this user's that no one else can write (made 0700 if asked)."""
    if make:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            return False
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(found.st_mode)
        and found.st_uid == os.getuid()
        and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def code_stamp() -> list[tuple[str, int, int]]:
    """The state of every module of agent-tui on disk: any edit or reinstall changes it."""
    import tui

    entries: list[tuple[str, int, int]] = []
    folders = [os.path.dirname(os.path.abspath(tui.__file__))]
    while folders:
        folder = folders.pop()
        with os.scandir(folder) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    folders.append(entry.path)
                elif entry.name.endswith(".py"):
                    found = entry.stat()
                    entries.append((entry.path, found.st_size, found.st_mtime_ns))
    return sorted(entries)


def _folder_times(search_path: list[str]) -> list[tuple[str, int | None]]:
    """Installing or removing a package changes its site folder's time."""
    times: list[tuple[str, int | None]] = []
    for entry in search_path:
        try:
            times.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            times.append((entry, None))
    return times


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _namespaces() -> list[str | None]:
    found: list[str | None] = []
    for kind in ("mnt", "pid", "net", "user", "uts", "ipc", "cgroup"):
        try:
            found.append(os.readlink(f"/proc/self/ns/{kind}"))
        except OSError:
            found.append(None)
    return found


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _limits() -> list[tuple[str, tuple[int, int]]]:
    import resource

    kinds = sorted(name for name in dir(resource) if name.startswith("RLIMIT_"))
    return [(name, resource.getrlimit(getattr(resource, name))) for name in kinds]


def key(search_path: list[str], cwd: str, environ: os._Environ[str] | dict[str, str]) -> str:
    """Everything that could make a fork of a warm process differ from a fresh start.

    ``search_path`` is ``sys.path`` without the script's own folder (the client's first entry,
    which the warm process started with ``-P`` does not have).
    """
    flags = sorted(
        (name, getattr(sys.flags, name))
        for name in dir(sys.flags)
        if not name.startswith("_") and name not in _FLAGS_NOT_KEYED
        if isinstance(getattr(sys.flags, name), int)
    )
    facts = (
        FORMAT,
        sys.executable,
        sys.version,
        list(search_path),
        _folder_times(search_path),
        flags,
        sorted(sys._xoptions.items(), key=repr),
        list(sys.warnoptions),
        (os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())),
        cwd,
        sorted((k, v) for k, v in without_secrets(environ).items() if k not in VOLATILE),
        _umask(),
        _limits(),
        _read("/proc/self/cgroup"),
        _namespaces(),
        code_stamp(),
    )
    return str(sha256(repr(facts).encode("utf-8", "surrogatepass")).hexdigest())


class Place:
    """The files of one key in the private ``warm/`` folder."""

    __slots__ = ("folder", "key", "lock", "refused", "seen", "socket", "status")

    def __init__(self, folder: str, key: str) -> None:
        self.folder = folder
        self.key = key
        stem = os.path.join(folder, key[:32])
        self.socket = stem + ".sock"
        self.seen = stem + ".seen"
        """Touched by every run of this key that was not handed over."""
        self.refused = stem + ".refused"
        """A warm process for this key found it could not serve it: none is started again."""
        self.lock = stem + ".lock"
        """Held by the one warm process of this key."""
        self.status = stem + ".json"
        """The warm process's pid and how many runs it took (JSON), for people and tests."""


OFF = "off"
"""In the warm folder while ``[agent] warm_start = false``: the client cannot read settings."""


def turned_off(folder: str) -> bool:
    return os.path.lexists(os.path.join(folder, OFF))


def turn_off(environ: os._Environ[str] | dict[str, str]) -> None:
    """``[agent] warm_start = false``: no run is handed over or starts a warm process any more,
    and every warm process ends (within a second of its socket going away)."""
    folder = warm_folder(environ)
    if not private(folder, make=True):
        return
    try:
        with open(os.path.join(folder, OFF), "a"):
            pass
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.endswith((".sock", ".seen")):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def turn_on(environ: os._Environ[str] | dict[str, str]) -> None:
    """``[agent] warm_start = true`` (the default) again: runs may start warm processes."""
    try:
        os.unlink(os.path.join(warm_folder(environ), OFF))
    except OSError:
        pass

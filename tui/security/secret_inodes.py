"""Hard links to secrets: a second name for a key file that no path rule can see.

``ln ~/.ssh/id_rsa notes.txt`` makes ``notes.txt`` the key itself, under a name nothing
forbids, with no symlink to follow. What gives it away is the inode: the same
``(st_dev, st_ino)`` as a file inside a secret place. Only a regular file with ``st_nlink > 1``
can be such a link, so the guard stats the resolved file and consults this index only then.

The index is the inodes of the files inside the secret places that exist on this machine,
walked once (bounded) and cached. A miss on a multiply-linked file walks again when the
places changed since (a new file changes its folder's mtime; the folders' mtimes are kept),
so a key created after the first walk is still recognised, while the many hard links of a
package store cost one ``stat`` per folder, not a walk each.
"""

from __future__ import annotations

import glob
import os
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from tui.security.secrets import expanded_patterns

MAX_INDEXED_FILES = 20_000
"""A bound on one walk: secret places are small; a huge one must not stall a call."""

_PSEUDO_ROOTS = ("proc", "sys", "dev")
"""Pseudo filesystems: their files cannot be hard-linked, and walking /proc never ends."""

Inode = tuple[int, int]
Stamp = dict[str, int | None]
"""The mtime of every folder that, when it changes, may hold a new secret file."""


@dataclass
class SecretInodes:
    """``(st_dev, st_ino)`` of every file in the secret places, to the path it was found at."""

    patterns: tuple[str, ...]
    home: str | None = None
    _index: dict[Inode, str] | None = field(default=None, init=False, repr=False)
    _stamp: Stamp = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def lookup(self, inode: Inode, *, refresh: bool = True) -> str | None:
        """The secret file with this inode, walking the places again once on a miss."""
        index = self._index if self._index is not None else self.refresh()
        found = index.get(inode)
        if found is None and refresh and _stamp(self._stamp) != self._stamp:
            found = self.refresh().get(inode)
        return found

    def refresh(self) -> dict[Inode, str]:
        with self._lock:
            places, watched = _places(self.patterns, self.home)
            self._index, self._stamp = _walk(places, watched)
            return self._index


def linked_secret(path: str, inodes: SecretInodes, *, refresh: bool = True) -> str | None:
    """The secret file ``path`` is a hard link to, or None (one ``stat`` in the common case)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_nlink <= 1:
        return None
    return inodes.lookup((info.st_dev, info.st_ino), refresh=refresh)


def _places(patterns: Iterable[str], home: str | None) -> tuple[list[str], list[str]]:
    """The places that may exist, and the folders whose change may bring a new one."""
    places: list[str] = []
    watched: list[str] = []
    for parts in expanded_patterns(tuple(patterns), home=home):
        if not parts or parts[0] in _PSEUDO_ROOTS:
            continue
        pattern = "/" + "/".join(parts)
        if glob.has_magic(pattern):
            literal = parts[: _first_magic(parts)]
            watched.append("/" + "/".join(literal))
            found = glob.glob(pattern, include_hidden=True)
        else:
            found = [pattern]
        places.extend(found)
        watched.extend(os.path.dirname(place) for place in found)
    return list(dict.fromkeys(places)), list(dict.fromkeys(watched))


def _first_magic(parts: tuple[str, ...]) -> int:
    return next(index for index, part in enumerate(parts) if glob.has_magic(part))


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return None


def _stamp(old: Stamp) -> Stamp:
    return {path: _mtime(path) for path in old}


def _walk(places: list[str], watched: list[str]) -> tuple[dict[Inode, str], Stamp]:
    index: dict[Inode, str] = {}
    stamp: Stamp = {path: _mtime(path) for path in [*watched, *places]}
    seen = 0
    for place in places:
        stack = [place]
        while stack and seen < MAX_INDEXED_FILES:
            current = stack.pop()
            seen += 1
            try:
                info = os.stat(current)  # follows a symlinked place, as a read would
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(info.st_mode):
                index.setdefault((info.st_dev, info.st_ino), current)
            elif stat.S_ISDIR(info.st_mode) and (current == place or not os.path.islink(current)):
                stamp[current] = info.st_mtime_ns
                try:
                    stack.extend(os.path.join(current, name) for name in os.listdir(current))
                except OSError:
                    continue
    return index, stamp

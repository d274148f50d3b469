"""Private folders in the temp folder, and the ones agent-tui processes that died left there.

A sandbox's empty file, the network proxy's socket, the panes' status files, a browser's
profile: each lives in a folder of its own under the temp folder, removed when agent-tui
closes what used it. A run that is killed (SIGKILL, an out-of-memory kill, a crash) cannot
remove anything, and a machine that runs agent-tui from scripts gathered thousands of them.

Each folder holds a lock its process keeps for as long as it lives (the kernel lets go of it
when the process ends, however it ends; process ids are reused and differ between
namespaces, a lock is neither). Removing a folder of one kind also removes the folders of
that kind whose lock nobody holds: at the end of a run, not at its start, which neither waits
for a walk of the temp folder nor counts that folder among what start-up read (a ``-p`` run's
first request is sent ahead only while those are unchanged: ``tui.agent.providers.ahead``).
The lock file is locked before it takes its name, so a folder is never seen unlocked while
its process is alive.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile

__all__ = ["private_folder", "remove_private_folder"]

LOCK = ".alive"
"""The lock file in each folder (locked by its process for as long as it lives)."""

_held: dict[str, tuple[int, str]] = {}
"""This process's folders: the descriptor of each one's lock, and its kind's prefix."""
_swept: set[str] = set()
"""The kinds whose leftovers this process already removed (once is enough)."""


def private_folder(kind: str) -> str:
    """A new folder only this user can enter, named ``agent-tui-{kind}-…``."""
    prefix = f"agent-tui-{kind}-"
    folder = tempfile.mkdtemp(prefix=prefix)
    pending = os.path.join(folder, ".locking")
    descriptor = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    os.rename(pending, os.path.join(folder, LOCK))
    _held[folder] = (descriptor, prefix)
    return folder


def remove_private_folder(folder: str) -> None:
    """Remove ``folder`` (made by ``private_folder``) and everything in it; then, once a
    process, the folders of its kind that processes now gone left behind."""
    held = _held.pop(folder, None)
    shutil.rmtree(folder, ignore_errors=True)
    if held is None:
        return
    descriptor, prefix = held
    with contextlib.suppress(OSError):
        os.close(descriptor)
    if prefix not in _swept:
        _swept.add(prefix)
        _remove_left_over(prefix)


def _remove_left_over(prefix: str) -> None:
    uid = os.getuid()
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix) or entry.path in _held:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid and _abandoned(entry.path):
            shutil.rmtree(entry.path, ignore_errors=True)


def _abandoned(folder: str) -> bool:
    """Whether nobody holds ``folder``'s lock (a folder without one is left alone: it may be
    a moment from its lock, or of an older agent-tui that made none)."""
    try:
        descriptor = os.open(os.path.join(folder, LOCK), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its process is alive
    finally:
        os.close(descriptor)
    return True

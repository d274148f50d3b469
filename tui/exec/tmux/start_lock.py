"""Taking turns at starting a shared tmux server's sessions, across processes.

tmux 3.3a's server crashes when several control clients create sessions on it at once. Each
instance has a server of its own (``instances``), so this only matters for the one session a
person names in ``[tmux] session``, which every instance shares on the base socket: attaching
to it, or creating it with the server, is done holding an exclusive ``flock`` on a file beside
the socket. Held for milliseconds; released by the kernel if the holder dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator


@contextlib.asynccontextmanager
async def start_turn(socket_path: str) -> AsyncIterator[None]:
    """Hold the start lock of the server at ``socket_path`` (this machine only)."""
    folder = os.path.dirname(socket_path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(f"{socket_path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        yield  # no lock file possible (a read-only folder): start as before
        return
    try:
        await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


__all__ = ["start_turn"]

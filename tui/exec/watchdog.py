"""The agent's end of the watchdog: nothing a local command started outlives agent-tui.

One watchdog process per agent process (``watchdog_main.py``), started on the first local
command. Each command's session id is written to it as the command starts; when this process
ends in any way, the kernel closes the pipe, and the watchdog stops whatever is still in those
sessions (background jobs, ``nohup x &``, double forks). See ``watchdog_main`` for why.

Cost: one Python start per agent, then one ``write`` of a few bytes per command, so the
``run_shell true`` hot path stays within a few microseconds of a bare subprocess.

Not covered: a process that leaves the session on purpose (``setsid``), and a SIGKILL that lands
in the microseconds between a command's spawn and its registration.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)

_SCRIPT = Path(__file__).with_name("watchdog_main.py")


class Watchdog:
    """A running watchdog: its process and the write end of its pipe (ours alone)."""

    def __init__(self, process: subprocess.Popen[bytes], fd: int) -> None:
        self.process = process
        self._fd = fd

    @classmethod
    def start(cls) -> Watchdog:
        """Start the watchdog (blocking: a fork and an exec; run it in a thread).

        The pipe's write end is not inheritable, so no command holds it open: end of file
        comes exactly when this process is gone.
        """
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_SCRIPT)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        os.set_blocking(write_end, False)
        return cls(process, write_end)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def watch(self, sid: int) -> None:
        """Have the watchdog stop session ``sid`` when this process ends (never blocks)."""
        try:
            os.write(self._fd, b"+%d\n" % sid)
        except OSError as error:  # a full pipe or a dead watchdog: say so, run on
            log.warning("the watchdog missed session %d: %s", sid, error)


_shared: Watchdog | None = None
_owner_pid = 0
_lock = threading.Lock()


def _ensure() -> Watchdog:
    global _shared, _owner_pid
    with _lock:
        if _shared is None or _owner_pid != os.getpid() or not _shared.alive:
            _shared = Watchdog.start()
            _owner_pid = os.getpid()
        return _shared


async def shared() -> Watchdog | None:
    """This process's watchdog, started on first use (and again if it died or we forked).

    None when it cannot start (no /proc, an interpreter that cannot run scripts): commands
    still run, and are still killed on cancel and timeout, but not after a crash.
    """
    if _shared is not None and _owner_pid == os.getpid() and _shared.alive:
        return _shared
    try:
        return await asyncio.to_thread(_ensure)
    except (OSError, subprocess.SubprocessError) as error:
        log.warning("cannot start the watchdog: %s", error)
        return None


__all__ = ["Watchdog", "shared"]

"""Which agent-tui process a tmux session belongs to, and whether that process still lives.

An agent-tui that dies without closing (SIGKILL, a crash, a lost SSH connection) leaves its
tmux session behind with its shell and whatever ran there. The next start must tell those
leftovers from the sessions of instances that are still running, and it must never guess
wrong the other way. So each instance writes who it is on its own session: this machine's
name, its pid and that process's start time (a pid alone may be reused). Here, on the machine
that runs agent-tui, a session whose recorded process is gone is a leftover. A session written
by an agent-tui on another machine cannot be judged here, and is left alone.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from tui.exec import procs

PID_OPTION = "@agent_tui_pid"
HOST_OPTION = "@agent_tui_host"
START_OPTION = "@agent_tui_start"


@dataclass(frozen=True)
class Owner:
    """One agent-tui process: the machine it runs on, its pid and its start time."""

    host: str
    pid: int
    start: int

    @classmethod
    def me(cls) -> Owner:
        own = procs.read(os.getpid())
        return cls(socket.gethostname(), os.getpid(), own.start if own is not None else 0)

    @classmethod
    def parse(cls, host: str, pid: str, start: str) -> Owner | None:
        """From the session's options; None when they are missing (an older agent-tui)."""
        if not host or not pid.isdigit() or not start.isdigit():
            return None
        return cls(host, int(pid), int(start))

    def alive(self) -> bool | None:
        """True or False on this machine; None when it ran on another one."""
        if self.host != socket.gethostname():
            return None
        current = procs.read(self.pid)
        return current is not None and current.start == self.start

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


__all__ = ["HOST_OPTION", "PID_OPTION", "START_OPTION", "Owner"]

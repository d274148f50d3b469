"""This machine's process table, read from ``/proc``: who is in a session, and stopping them.

Why sessions: a command started in its own session (``start_new_session``) keeps every
process it starts in that session, even those that move to another process group (a shell
with job control puts ``sleep 300 &`` in a group of its own). The session is the widest
boundary a process leaves only on purpose (``setsid``), so "what this command left behind"
is "who is still in its session".

Why pidfds: a pid read from ``/proc`` may be reused by the time we signal it. A pidfd opened
and checked against the process's start time names that one process for good, and it
becomes readable when the process exits, so waiting for it costs no polling.

Everything here reads files and may be called from a worker thread; only ``stop`` is a
coroutine, and it does its reading in threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Proc:
    """One process as ``/proc/<pid>/stat`` described it when it was read."""

    pid: int
    pgid: int
    sid: int
    start: int
    """Start time in clock ticks since boot: with the pid, it names one process for good."""
    command: str
    """Its command line, arguments joined by spaces (the name in brackets for kernel threads)."""

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.start)

    def describe(self) -> str:
        """``sleep 300 (pid 1234)``: what a person recognises, and the pid to act on."""
        return f"{_short(self.command)} (pid {self.pid})"


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """``(state, pgid, sid, start)`` of a live process, or None (gone, zombie, unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The name (field 2) may hold spaces and parentheses: the fields we want follow the last ")".
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return fields[0].decode(), int(fields[2]), int(fields[3]), int(fields[19])


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return "?"
    if raw:
        return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    try:
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return "[" + handle.read().strip().decode(errors="replace") + "]"
    except OSError:
        return "?"


def read(pid: int) -> Proc | None:
    """The live process ``pid`` (None when it is gone or a zombie)."""
    stat = _stat(pid)
    if stat is None:
        return None
    return Proc(pid, stat[1], stat[2], stat[3], _command(pid))


def sandbox_machinery(proc: Proc) -> bool:
    """bubblewrap's own processes, and the one it started (pid 2 of its process namespace):
    the walls around a pane's shell and that shell, not something a command left running."""
    if _program(proc.command) == "bwrap":
        return True
    parent, inner = None, None
    try:
        with open(f"/proc/{proc.pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"PPid:"):
                    parent = int(line.split()[1])
                elif line.startswith(b"NSpid:"):
                    inner = int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        return False
    return inner == 2 and parent is not None and _program(_command(parent)) == "bwrap"


def left_by_commands(found: list[Proc], shells: list[int]) -> list[Proc]:
    """``found`` (in the sessions of the pane shells ``shells``) less the shells themselves
    and the walls around them: what commands left running."""
    return [proc for proc in found if proc.pid not in shells and not sandbox_machinery(proc)]


def _program(command: str) -> str:
    return os.path.basename(command.split(" ", 1)[0])


def in_sessions(sids: Iterable[int], *, exclude: Iterable[int] = ()) -> list[Proc]:
    """Live processes whose session is one of ``sids``, in pid order, minus ``exclude``."""
    wanted = set(sids)
    skip = {*exclude, os.getpid()}
    found: list[Proc] = []
    if not wanted:
        return found
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in skip:
            continue
        stat = _stat(pid)
        if stat is not None and stat[2] in wanted:
            found.append(Proc(pid, stat[1], stat[2], stat[3], _command(pid)))
    found.sort(key=lambda proc: proc.pid)
    return found


def namespaces_below(pid: int) -> set[str]:
    """The process namespaces (``pid:[…]``) of ``pid``'s children other than this process's
    own: a sandbox's (bwrap puts its command in a namespace and a session of its own)."""
    own = _pid_namespace(os.getpid())
    found: set[str] = set()
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            kids = [int(word) for word in handle.read().split()]
    except (OSError, ValueError):
        return found
    for kid in kids:
        space = _pid_namespace(kid)
        if space is not None and space != own:
            found.add(space)
    return found


def in_namespaces(spaces: set[str]) -> list[int]:
    """Live processes (zombies are not) in any of the process namespaces ``spaces``."""
    if not spaces:
        return []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [
        int(name)
        for name in names
        if name.isdigit() and _pid_namespace(int(name)) in spaces and _stat(int(name)) is not None
    ]


def _pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


async def until_namespaces_empty(spaces: set[str], timeout: float) -> bool:
    """Wait (up to ``timeout`` s) until no process is left in ``spaces``; whether none is.

    The kernel kills a namespace's processes when its first one dies, but not at once: a
    command's processes can outlive its stopped sandbox by a moment, and what agent-tui says
    it stopped must be gone when it says so.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while await asyncio.to_thread(in_namespaces, spaces):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def _open(proc: Proc) -> int | None:
    """A pidfd for ``proc`` if it is still that very process; None when gone or reused."""
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:
        return None
    current = _stat(proc.pid)
    if current is None or current[3] != proc.start:
        os.close(fd)
        return None
    return fd


def _send(fds: dict[Proc, int], sig: signal.Signals) -> None:
    for fd in fds.values():
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(fd, sig)


async def _wait_exit(fds: dict[Proc, int], timeout: float) -> list[Proc]:
    """Wait until every process has exited or ``timeout`` passed; those still running."""
    loop = asyncio.get_running_loop()
    pending: dict[int, asyncio.Future[None]] = {}
    for fd in fds.values():
        future: asyncio.Future[None] = loop.create_future()
        pending[fd] = future
        loop.add_reader(fd, _resolve, future)
    try:
        if pending:
            await asyncio.wait(pending.values(), timeout=timeout)
    finally:
        for fd in pending:
            loop.remove_reader(fd)
    return [proc for proc, fd in fds.items() if not pending[fd].done()]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def stop(procs: Iterable[Proc], *, grace: float, reap: float = 2.0) -> list[Proc]:
    """SIGTERM ``procs``, SIGKILL those alive after ``grace`` s; those still running after.

    Only the very processes named are signalled (a reused pid is left alone), and the wait
    is on their pidfds: no polling. A zombie counts as stopped (its parent reaps it).
    """
    fds: dict[Proc, int] = {}
    for proc in procs:
        fd = await asyncio.to_thread(_open, proc)
        if fd is not None:
            fds[proc] = fd
    try:
        _send(fds, signal.SIGTERM)
        left = await _wait_exit(fds, grace)
        if not left:
            return []
        stubborn = {proc: fds[proc] for proc in left}
        _send(stubborn, signal.SIGKILL)
        return await _wait_exit(stubborn, reap)
    finally:
        for fd in fds.values():
            os.close(fd)


def stopped_notice(
    command: Proc | None,
    others: list[Proc],
    left: list[Proc],
    *,
    noun: tuple[str, str] = ("background process", "background processes"),
) -> str:
    """What a cancel stopped, in the words the tool block shows, and what resisted it.

    ``noun`` is how ``others`` are called (singular, plural): the local backend's are the
    command's background jobs; in a pane, where the shell stays, they are all it started.
    """
    parts: list[str] = []
    if command is not None:
        parts.append(f"the command (pid {command.pid})")
    if others:
        parts.append(
            f"{len(others)} {noun[0] if len(others) == 1 else noun[1]}: "
            + ", ".join(p.describe() for p in others)
        )
    text = "stopped: " + (" and ".join(parts) if parts else "nothing was left running")
    if left:
        text += "; still running despite SIGKILL: " + ", ".join(p.describe() for p in left)
    return text


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["Proc", "in_sessions", "read", "stop", "stopped_notice"]

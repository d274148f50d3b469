"""The watchdog process: outlives agent-tui just long enough to stop what it started.

Run as a script (``python -I -S watchdog_main.py``), never imported by the agent: it must
start fast and depend on nothing. Its stdin is a pipe whose only writer is the agent. The
agent writes ``+<sid>`` for each command it starts in a session of its own; end of file
means the agent is gone (exited, crashed or SIGKILLed: the kernel closes its pipe either way),
and then every process still in one of those sessions is stopped: SIGTERM, a short grace,
SIGKILL, again until the sessions are empty.

Why a separate process and not ``PR_SET_PDEATHSIG`` on each command: the death signal reaches
only the direct child, not the ``sleep 300 &`` it started, and a per-command supervisor costs a
Python start per tool call. This costs one start per agent and one small write per command.

It ignores SIGINT and SIGHUP and runs in a session of its own, so the Ctrl-C or the closed
terminal that ends the agent does not end it first. Sessions that emptied are forgotten from
time to time, so a session id the kernel hands out again later is never ours.
"""

from __future__ import annotations

import os
import select
import signal
import time

GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL."""
GIVE_UP = 5.0
"""Seconds of SIGKILL rounds before leaving (a process stuck in the kernel)."""
PRUNE_EVERY = 10.0
"""Seconds between sweeps that forget sessions with no process left."""


def members(sids: set[int]) -> dict[int, int]:
    """Live pids (zombies excluded) whose session is one of ``sids``, each with its session."""
    found: dict[int, int] = {}
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) > 3 and fields[0] not in (b"Z", b"X") and int(fields[3]) in sids:
            found[int(name)] = int(fields[3])
    return found


def signal_all(pids: dict[int, int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def stop_sessions(sids: set[int]) -> None:
    """SIGTERM everyone in ``sids``, then SIGKILL rounds until they are empty."""
    if not sids:
        return
    pids = members(sids)
    if not pids:
        return
    signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while pids and time.monotonic() < deadline:
        time.sleep(0.02)
        pids = members(sids)
    deadline = time.monotonic() + GIVE_UP
    while pids and time.monotonic() < deadline:
        signal_all(pids, signal.SIGKILL)
        time.sleep(0.02)
        pids = members(sids)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    sids: set[int] = set()
    pending = b""
    pruned = time.monotonic()
    while True:
        ready, _, _ = select.select([0], [], [], PRUNE_EVERY)
        if ready:
            data = os.read(0, 65536)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.startswith(b"+") and line[1:].isdigit():
                    sids.add(int(line[1:]))
        if time.monotonic() - pruned >= PRUNE_EVERY:
            sids &= set(members(sids).values())
            pruned = time.monotonic()
    stop_sessions(sids)


if __name__ == "__main__":
    main()

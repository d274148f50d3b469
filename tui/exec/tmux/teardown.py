"""Ending sessions: stop what runs in their panes, then kill them, here or on a remote host.

Killing a tmux session sends its panes' shells SIGHUP, and a shell passes it on to its jobs,
but whatever left the shell's jobs (``(sleep 300 &)``, ``nohup``, a daemonising server) lives
on. Each pane's shell is a session leader, so its session holds all of that: stopping every
process in those sessions first means a closed or swept session leaves nothing running (only a
``setsid`` escapes). Used at a normal close and when a dead instance's leftovers are swept.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import socket

from tui.exec import procs
from tui.exec.backend import ExecutionBackend
from tui.exec.streams import KILL_GRACE
from tui.exec.tmux.lifecycle import Place, list_server
from tui.security.confinement import OWN_COMMAND

_PANES = "#{session_name}\t#{pane_pid}"


async def stop_panes(place: Place, sessions: list[str]) -> list[str]:
    """Stop everything running in the panes of ``sessions``: each pane's shell is a session
    leader, so its session holds whatever the commands started, detached jobs too (only a
    ``setsid`` escapes). Returns what was running, as ``sleep 300 (pid 1234)``."""
    wanted = set(sessions)
    pids = []
    for line in await _tmux_lines(place, "list-panes", "-a", "-F", _PANES):
        name, _, pid = line.partition("\t")
        if name in wanted and pid.isdigit():
            pids.append(int(pid))
    if not pids:
        return []
    if place.local:
        found = await asyncio.to_thread(procs.in_sessions, pids)
        await procs.stop(found, grace=KILL_GRACE)
        return [proc.describe() for proc in found if proc.pid not in pids]
    return await _stop_remote(place.host, pids)


async def _stop_remote(host: ExecutionBackend, sids: list[int]) -> list[str]:
    listed = " ".join(str(sid) for sid in sids)
    script = (
        f'for s in {listed}; do ps -o pid=,args= -s "$s" 2>/dev/null; done; '
        f'for s in {listed}; do pkill -TERM -s "$s" 2>/dev/null; done; sleep {KILL_GRACE}; '
        f'for s in {listed}; do pkill -KILL -s "$s" 2>/dev/null; done; true'
    )
    result = await host.run(script, timeout=30, confinement=OWN_COMMAND)
    running = []
    for line in result.stdout.splitlines():
        pid, _, args = line.strip().partition(" ")
        if pid.isdigit() and int(pid) not in sids:
            running.append(f"{' '.join(args.split())[:60]} (pid {pid})")
    return running


async def kill(place: Place, names: list[str], *, everything: bool) -> None:
    if everything:
        await _tmux_lines(place, "kill-server")
        if place.local:
            remove_stale(place)
        return
    for name in names:
        await _tmux_lines(place, "kill-session", "-t", f"={name}")


async def _tmux_lines(place: Place, *args: str) -> list[str]:
    """A tmux command on ``place``'s socket, its output lines ([] when it fails)."""
    argv = place.argv(*args)
    if place.local:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(place.env) if place.env is not None else None,
        )
        out, _ = await process.communicate()
        return out.decode(errors="replace").splitlines() if process.returncode == 0 else []
    result = await place.host.run(
        shlex.join(argv) + " 2>/dev/null", timeout=30, confinement=OWN_COMMAND
    )
    return result.stdout.splitlines() if result.exit_code == 0 else []


def remove_stale(place: Place) -> None:
    """The socket file of a server that is gone: tmux 3.3a leaves it behind when it exits
    with its last session, and a server killed by a signal does too."""
    with contextlib.suppress(OSError):
        os.unlink(place.socket_path())


async def forget_server(place: Place) -> None:
    """After an instance's last session ended: its server's socket file goes too, here or on
    the remote host, so no file per instance piles up."""
    if await list_server(place):
        return
    if place.local:
        remove_stale(place)
        return
    folder = '"${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)"'
    await place.host.run(
        f"rm -f {folder}/{shlex.quote(place.socket_name)}", timeout=30, confinement=OWN_COMMAND
    )


async def remove_if_dead(place: Place) -> None:
    """The socket file of a server that no longer answers; never that of one that is up (an
    instance starting this very moment has a server with no session yet)."""
    if place.local:
        if await asyncio.to_thread(_refused, place.socket_path()):
            remove_stale(place)
        return
    folder = '"${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)"'
    check = shlex.join(place.argv("server-info"))
    await place.host.run(
        f"{check} >/dev/null 2>&1 || rm -f {folder}/{shlex.quote(place.socket_name)}",
        timeout=30,
        confinement=OWN_COMMAND,
    )


def _refused(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return True
        except OSError:
            return False
    return False


__all__ = ["forget_server", "kill", "remove_if_dead", "remove_stale", "stop_panes"]

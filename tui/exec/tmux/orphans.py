"""What a command typed into a local pane left running, found and stopped by session.

A pane's shell is a session leader (tmux starts it with ``setsid``) and, being interactive,
runs with job control: ``sleep 300 &`` gets a process group of its own, so Ctrl-C, which
reaches only the foreground group, leaves it running. Everything the command started stays
in the shell's session, though. So before a command is typed, the session's processes are
noted (``Baseline``); on cancel, after Ctrl-C, whatever joined the session since is stopped,
and never the shell itself nor a job the person started before (a take-over).

The same look at the session tells the next agent what an earlier one left running in a
pane it reuses: the pane survives the agent by design, its jobs with it.

Only for panes on this machine (a local host): a container's or SSH host's ``/proc`` is not
ours to read from here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tui.exec import procs
from tui.exec.streams import KILL_GRACE
from tui.exec.tmux.control import ControlClient, TmuxCommandError

NOUN = ("process the command started", "processes the command started")


@dataclass(frozen=True)
class Baseline:
    """The pane's shell and who was in its session before a command was typed."""

    shell_pid: int
    before: frozenset[tuple[int, int]]


async def shell_pid(client: ControlClient, pane_id: str) -> int | None:
    """The pid of the pane's shell (``#{pane_pid}``); None when tmux cannot say."""
    try:
        lines = await client.command(f"display-message -p -t {pane_id} '#{{pane_pid}}'")
    except (TmuxCommandError, ValueError):
        return None
    text = lines[0].strip() if lines else ""
    return int(text) if text.isdigit() else None


async def others(pid: int) -> list[procs.Proc]:
    """Everyone in the shell's session but the shell."""
    return await asyncio.to_thread(procs.in_sessions, [pid], exclude=[pid])


async def baseline(pid: int | None) -> Baseline | None:
    if pid is None:
        return None
    return Baseline(pid, frozenset(proc.key for proc in await others(pid)))


async def started_since(base: Baseline) -> list[procs.Proc]:
    """Processes that joined the shell's session after ``base`` was taken."""
    return [proc for proc in await others(base.shell_pid) if proc.key not in base.before]


async def stop_started(base: Baseline, seen: list[procs.Proc]) -> str:
    """Stop what the command started (``seen`` at the cancel, plus any found now).

    Returns the notice naming them all: those Ctrl-C already ended count as stopped too.
    """
    known = {proc.key for proc in seen}
    found = [*seen, *(p for p in await started_since(base) if p.key not in known)]
    left = await procs.stop(found, grace=KILL_GRACE) if found else []
    return procs.stopped_notice(None, found, left, noun=NOUN)


async def leftovers(pid: int | None) -> str | None:
    """``sleep 300 (pid 1234), …`` still running in the shell's session; None when none."""
    if pid is None:
        return None
    found = await others(pid)
    return ", ".join(proc.describe() for proc in found) or None

"""The panes the backend types into: where each one's shell stands, and what it runs.

A pane we type into is a ``ManagedPane``: its shell (kind, marker nonce, whether it needs the
``__atui_go;`` prefix), where its prompt stands (``PromptWatch``) and the ``Job`` it runs. Its
``%output`` is fed to it: the prompt watch, set-up watchers and the job's stream read it, and
the job's waiter wakes when the end marker arrives. ``PaneRegistry`` holds the managed panes
and forgets them when their pane, session or server goes away, failing the job that ran there
so no waiter hangs.

**Where the shell stands.** A pane is shared with a person: during a take-over they may leave
text unsent at the prompt, start a program, or press Enter in the middle of a ``for`` loop.
Typing the agent's command then would glue it onto their input and run something nobody
approved. So every marker the pane emits (``markers``) is watched, not only those of our own
commands: the last one says whether the shell is at its prompt (an end marker), running a
command (a start marker), or reading the rest of a half-typed command (a continuation marker).
End markers also carry the shell's working directory, which the approval and the path policy
need. Before typing, ``refusal`` names what holds the pane (None when the shell is free). Text
left on the prompt line is seen as echo after the prompt's own last marker (``in``, at the end
of PS1) and dropped with Ctrl-C (``discard_input``), which works in any line-editor mode; the
keys of ``control.clear_input`` also go before every command, for a prompt whose PS1 lost its
marker.

**What a command left running** (local panes). A pane's shell is a session leader (tmux
starts it with ``setsid``) and, being interactive, runs with job control: ``sleep 300 &`` gets
a process group of its own, so Ctrl-C, which reaches only the foreground group, leaves it
running. Everything the command started stays in the shell's session, though. So before a
command is typed, the session's processes are noted (``Baseline``); on cancel, after Ctrl-C,
whatever joined the session since is stopped, and never the shell itself nor a job the person
started before (a take-over). The same look tells the next agent what an earlier one left
running in a pane it reuses. A container's or SSH host's ``/proc`` is not ours to read from
here, so this is for panes on this machine only.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from tui.exec import procs
from tui.exec.backend import BackendError, ChunkSink
from tui.exec.streams import KILL_GRACE
from tui.exec.tmux.control import ControlClient, TmuxCommandError, quote
from tui.exec.tmux.markers import MAX_MARKER_BYTES, CommandStream, Marker, ShellKind, find_markers
from tui.security.confinement import Confinement

log = logging.getLogger(__name__)


# -- where the shell stands ----------------------------------------------------------------

ShellState = Literal["prompt", "running", "continuation"]
_DRAWING = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~]?)|[\x00-\x1f\x7f]"
)
"""Escape sequences and control bytes: what a line editor prints around its prompt."""


class PromptHeld(BackendError):
    """The pane's prompt is not free for a command (see the message for why and what to do)."""


FLOOD_WAIT_LIMIT = 30.0
"""The longest a Ctrl-C's fresh prompt is waited for while the pane still streams output."""
CTRL_C_TRIES = 3
"""Ctrl-Cs pressed before the prompt is called held. In parallel test runs a pane flooded by a
background job twice went quiet for the whole wait without drawing the first one's prompt (the
cause is not known); at a prompt another Ctrl-C only clears the line again, and gives the
prompt another chance. A prompt really held (a full-screen program) is said after three."""


@dataclass
class PromptWatch:
    """Follows one pane's markers as its output arrives (fed from ``%output``)."""

    nonce: str
    state: ShellState = "prompt"
    cwd: str | None = None
    """The shell's directory at its last prompt (None: never reported)."""
    last_id: int = 0
    at_input: bool = False
    """The prompt's last marker (``in``, the end of PS1) was drawn: input starts after it."""
    typed: bool = False
    """Something visible was echoed after the prompt: text someone typed (and maybe left)."""
    last_output: float = 0.0
    """When output last arrived (``time.monotonic``): a flooding pane draws its prompt late."""
    _carry: bytes = b""
    _fresh: asyncio.Event = field(default_factory=asyncio.Event)

    def feed(self, chunk: bytes) -> None:
        self.last_output = time.monotonic()
        window = self._carry + chunk
        seen = len(self._carry)
        self._carry = window[-MAX_MARKER_BYTES:]
        after = seen
        if b"__ATUI_" in window:
            for marker in find_markers(window, self.nonce):
                if marker.end > seen:  # a marker wholly in the carry was taken last time
                    self.take(marker)
                    after = marker.end
        if self.at_input and not self.typed and _DRAWING.sub(b"", window[after:]):
            self.typed = True

    def take(self, marker: Marker) -> None:
        self.at_input = self.typed = False
        if marker.kind == "ps2":
            self.state = "continuation"
        elif marker.kind == "go":
            self.state = "running"
        elif marker.kind == "in":
            self.state = "prompt"
            self.at_input = True
            self._fresh.set()
        else:
            self.state = "prompt"
            self.last_id = marker.id
            if marker.cwd is not None:
                self.cwd = marker.cwd

    def fresh_prompt(self) -> asyncio.Event:
        """Set when the next prompt has been drawn in full (its ``in`` marker)."""
        self._fresh = asyncio.Event()
        return self._fresh


def refusal(pane_id: str, watch: PromptWatch) -> str | None:
    """Why no command may be typed into ``pane_id`` now, and what to do; None when free."""
    if watch.state == "continuation":
        return (
            f"pane {pane_id} holds a half-typed command (its shell is waiting for the rest "
            "of a multi-line input a person started); the command was not typed. Finish or "
            f"drop it with tmux_send_keys target={pane_id} keys=['C-c'] (that discards their "
            "input: ask the user first), wait, or use another pane (tmux_create_pane)"
        )
    if watch.state == "running":
        return (
            f"pane {pane_id} is busy: its shell is running a command typed there (not by "
            "you); the command was not typed. Wait for it (tmux_capture_pane shows it), "
            f"stop it with tmux_send_keys target={pane_id} keys=['C-c'] if the user agrees, "
            "or use another pane (tmux_create_pane)"
        )
    return None


def moved(pane_id: str, watch: PromptWatch, expected: str | None) -> str | None:
    """Why a command approved to run in ``expected`` must not be typed: the shell moved
    since (a person's ``cd`` during the approval). None when it is still there."""
    if expected is None or watch.cwd is None or watch.cwd == expected:
        return None
    return (
        f"the shell in pane {pane_id} moved from {expected!r} to {watch.cwd!r} after the "
        "command was approved; it was not typed, since it would run somewhere else. Call "
        "again to have it judged where the shell is now, or pass cwd"
    )


async def discard_input(
    pane_id: str, watch: PromptWatch, send: Callable[[str], Awaitable[object]], timeout: float
) -> None:
    """Drop text someone left at the prompt with Ctrl-C, and wait for the fresh prompt.

    Ctrl-C discards the line whatever the line editor's mode (vi command mode ignores the
    emacs keys of ``clear_input``); the person sees their line end in ``^C``, as if they had
    pressed it. Raises ``PromptHeld`` when no fresh prompt comes.
    """
    # A job flooding the pane (``seq … >/dev/tty &``) puts megabytes between the Ctrl-C and
    # the prompt it brings: wait while output still arrives, up to FLOOD_WAIT_LIMIT in all.
    give_up = time.monotonic() + max(timeout, FLOOD_WAIT_LIMIT)
    for _ in range(CTRL_C_TRIES):
        fresh = watch.fresh_prompt()
        await send(f"send-keys -t {pane_id} C-c")
        while True:
            try:
                await asyncio.wait_for(fresh.wait(), timeout)
                return
            except TimeoutError:
                # A process that was kept off the processor wakes with output already read
                # but not yet handed to the watch: let it through before calling it quiet.
                await asyncio.sleep(0.05)
                if fresh.is_set():
                    return
                now = time.monotonic()
                if now >= give_up:
                    break
                if now - watch.last_output >= timeout:
                    break  # quiet and no prompt: press Ctrl-C again, while tries are left
        if time.monotonic() >= give_up:
            break
    raise PromptHeld(
        f"text was left at the prompt of pane {pane_id} and Ctrl-C brought no fresh "
        "prompt; the command was not typed. Look with tmux_capture_pane, or use another "
        "pane (tmux_create_pane)"
    )


# -- what a command left running (local panes) -------------------------------------------------

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


async def _others_in_session(pid: int) -> list[procs.Proc]:
    """Everyone in the shell's session but the shell."""
    return await asyncio.to_thread(procs.in_sessions, [pid], exclude=[pid])


async def take_baseline(pid: int | None) -> Baseline | None:
    if pid is None:
        return None
    return Baseline(pid, frozenset(proc.key for proc in await _others_in_session(pid)))


async def started_since(base: Baseline) -> list[procs.Proc]:
    """Processes that joined the shell's session after ``base`` was taken."""
    return [
        proc for proc in await _others_in_session(base.shell_pid) if proc.key not in base.before
    ]


async def stop_started(base: Baseline, seen: list[procs.Proc]) -> str:
    """Stop what the command started (``seen`` at the cancel, plus any found now).

    Returns the notice naming them all: those Ctrl-C already ended count as stopped too.
    """
    known = {proc.key for proc in seen}
    found = [*seen, *(p for p in await started_since(base) if p.key not in known)]
    left = await procs.stop(found, grace=KILL_GRACE) if found else []
    return procs.stopped_notice(None, found, left, noun=NOUN)


async def left_running(pid: int | None) -> str | None:
    """``sleep 300 (pid 1234), …`` still running in the shell's session; None when none (the
    sandbox's walls around the shell, and the shell inside them, are not counted)."""
    if pid is None:
        return None
    found = await asyncio.to_thread(procs.left_by_commands, await _others_in_session(pid), [pid])
    return ", ".join(proc.describe() for proc in found) or None


# -- the managed panes ------------------------------------------------------------------------


@dataclass
class Job:
    """A command typed into a pane, from its typing to its end marker."""

    pane_id: str
    command: str
    stream: CommandStream
    done: asyncio.Future[None]
    started: float = field(default_factory=time.monotonic)
    on_chunk: ChunkSink | None = None
    baseline: Baseline | None = None
    """Who was in the pane shell's session before (local panes): what a cancel spares."""


@dataclass
class ManagedPane:
    """A pane whose shell speaks the marker protocol, and what it is running."""

    pane_id: str
    session: str
    kind: ShellKind
    nonce: str
    prefix_start: bool = False
    """No ``PS0``/``preexec`` (POSIX sh, old bash): type ``__atui_go;`` before commands."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    job: Job | None = None
    last_job: Job | None = None
    shell_pid: int | None = None
    """The pane's shell, on a local host only (its session is swept on cancel)."""
    watchers: list[Callable[[bytes], None]] = field(default_factory=list)
    prompt: PromptWatch | None = None
    """Where the shell stands (prompt, running, half-typed input) and its directory."""
    confinement: Confinement | None = None
    """The sandbox walls its shell was started in (None: no sandbox, or not started by us)."""

    @property
    def typing_kind(self) -> ShellKind:
        """The shell kind to type commands for (``SH`` when starts need the prefix)."""
        return ShellKind.SH if self.prefix_start else self.kind

    def feed(self, data: bytes) -> None:
        """One ``%output`` chunk: to the prompt watch, the watchers and the running job."""
        if self.prompt is not None:
            self.prompt.feed(data)
        for watcher in list(self.watchers):
            watcher(data)
        job = self.job
        if job is None or job.done.done():
            return
        job.stream.feed(data)
        if job.on_chunk is not None:
            text = job.stream.take_live()
            if text:
                try:
                    job.on_chunk("stdout", text)
                except Exception:
                    log.exception("output sink failed; live output disabled")
                    job.on_chunk = None
        if job.stream.done:
            job.done.set_result(None)
            self.job = None
            self.last_job = job

    def fail(self, reason: str) -> None:
        """End the running job (if any) with ``reason``, and free the pane."""
        job = self.job
        if job is not None and not job.done.done():
            job.done.set_exception(BackendError(f"pane {self.pane_id}: {reason}"))
            job.done.exception()  # retrieved: a dispatched job may have no waiter
        self.job = None


@dataclass
class PaneStatus:
    """What tmux says about a pane right now."""

    in_mode: bool
    dead: bool
    command: str
    path: str
    session: str


async def pane_status(client: ControlClient, pane_id: str | None) -> PaneStatus | None:
    """The pane's mode, liveness, foreground command, session and directory; None if gone."""
    if pane_id is None:
        return None
    fields = "\t".join(
        f"#{{{name}}}"
        for name in (
            "pane_id",
            "pane_in_mode",
            "pane_dead",
            "pane_current_command",
            "session_name",
            "pane_current_path",
        )
    )
    try:
        lines = await client.command(f"display-message -p -t {pane_id} {quote(fields)}")
    except TmuxCommandError:
        return None
    # The directory comes last: its name may hold tabs and newlines (anyone can name a
    # folder), which then only lengthen the last field.
    parts = "\n".join(lines).split("\t", 5)
    # tmux 3.3 answers a display-message about a killed pane with empty fields, no error.
    if len(parts) != 6 or parts[0] != pane_id:
        return None
    return PaneStatus(parts[1] == "1", parts[2] == "1", parts[3], parts[5], parts[4])


class PaneRegistry:
    """The managed panes by id; forgets those whose pane, session or server went away."""

    def __init__(self) -> None:
        self._panes: dict[str, ManagedPane] = {}
        self._check_task: asyncio.Task[None] | None = None

    def get(self, pane_id: str) -> ManagedPane | None:
        return self._panes.get(pane_id)

    def __contains__(self, pane_id: object) -> bool:
        return pane_id in self._panes

    def __iter__(self) -> Iterator[ManagedPane]:
        return iter(list(self._panes.values()))

    def add(self, pane: ManagedPane) -> None:
        self._panes[pane.pane_id] = pane

    def pop(self, pane_id: str) -> ManagedPane | None:
        return self._panes.pop(pane_id, None)

    def session_panes(self, session: str) -> list[str]:
        """The ids of ``session``'s panes."""
        return [pane.pane_id for pane in self._panes.values() if pane.session == session]

    def forget_session(self, session: str, reason: str) -> None:
        """Fail the jobs of ``session``'s panes with ``reason`` and forget those panes."""
        for pane in [p for p in self._panes.values() if p.session == session]:
            pane.fail(reason)
            self._panes.pop(pane.pane_id, None)

    def check_closed(self, client_of: Callable[[str], ControlClient | None]) -> None:
        """After a window or layout closed: look (once at a time) for panes that are gone.

        ``client_of(session)``: the open control client of a session, or None.
        """
        if not any(p.job is not None for p in self._panes.values()):
            return
        if self._check_task is None or self._check_task.done():
            self._check_task = asyncio.ensure_future(self._check_jobs(client_of))

    async def _check_jobs(self, client_of: Callable[[str], ControlClient | None]) -> None:
        """Fail jobs whose pane is gone, and forget the pane."""
        for pane in list(self._panes.values()):
            client = client_of(pane.session)
            if client is None:
                continue
            try:
                status = await pane_status(client, pane.pane_id)
            except BackendError:
                continue
            if status is None or status.dead:
                pane.fail("the pane was closed while the command ran")
                self._panes.pop(pane.pane_id, None)

    def stop_checking(self) -> None:
        """Cancel a look for closed panes that is under way (the backend is closing)."""
        if self._check_task is not None:
            self._check_task.cancel()

    def close(self, reason: str) -> None:
        """Fail every job with ``reason`` and forget every pane."""
        for pane in list(self._panes.values()):
            pane.fail(reason)
        self._panes.clear()

"""The panes the backend has set up, and the command each one is running.

A pane we type into is ``ManagedPane``: its shell (kind, marker nonce, whether it needs the
``__atui_go;`` prefix), where its prompt stands (``prompt.PromptWatch``) and the ``Job`` it
runs. Its ``%output`` is fed to it (``feed``): the prompt watch, set-up watchers and the job's
stream read it, and the job's waiter wakes when the end marker arrives. ``PaneRegistry``
holds the managed panes and forgets them when their pane, session or server goes away,
failing the job that ran there so no waiter hangs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tui.exec.backend import BackendError, ChunkSink
from tui.exec.tmux import orphans
from tui.exec.tmux.control import ControlClient, TmuxCommandError, quote
from tui.exec.tmux.markers import CommandStream, ShellKind
from tui.exec.tmux.prompt import PromptWatch
from tui.security.confinement import Confinement

log = logging.getLogger(__name__)


@dataclass
class Job:
    """A command typed into a pane, from its typing to its end marker."""

    pane_id: str
    command: str
    stream: CommandStream
    done: asyncio.Future[None]
    started: float = field(default_factory=time.monotonic)
    on_chunk: ChunkSink | None = None
    baseline: orphans.Baseline | None = None
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

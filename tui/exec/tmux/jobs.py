"""The tmux backend's commands: a command's life in a pane, checked, typed, waited for, stopped.

Before anything is typed the pane must be alive, running its own shell (not a program, not a
nested shell), out of copy mode, free of another command of ours, at an empty prompt and in
the directory the command was approved in (``panes.refusal``/``moved``). Then the command is
pasted and Enter pressed, and its ``Job`` waits for the end marker that ``ManagedPane.feed``
sees in the pane's output. On timeout the command is left running, since a person may want
it, and the result says how to watch or stop it; on cancel Ctrl-C is pressed (up to three
times) and, on a local host, what the command started in the background is stopped too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from tui.exec.backend import BackendError, ChunkSink, ExecResult, cancelled_early
from tui.exec.sandbox.explain import sandbox_notes
from tui.exec.tmux.control import ControlClient, type_command
from tui.exec.tmux.guard import check_shared_shell
from tui.exec.tmux.markers import (
    CommandStream,
    ShellKind,
    command_text,
    detect_shell,
    shell_or_wrapper,
)
from tui.exec.tmux.panes import (
    Job,
    ManagedPane,
    discard_input,
    moved,
    pane_status,
    refusal,
    started_since,
    stop_started,
    take_baseline,
)
from tui.exec.tmux.shared import SharedShell
from tui.exec.tmux.shells import SETUP_TIMEOUT
from tui.security.confinement import Confinement

log = logging.getLogger(__name__)

CANCEL_GRACE = 2.0
"""Seconds to wait for the prompt after Ctrl-C before reporting the command still running."""
KEEP_LIMIT = 16 * 1024 * 1024
"""Bytes of a command's output kept for its result (the live output carries all of it)."""


class PaneJobs(SharedShell):
    """The tmux backend's commands; see the module docstring."""

    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
        confinement: Confinement | None = None,
        target: str | None = None,
        expect_cwd: str | None = None,
    ) -> ExecResult:
        """Type ``command`` into the shared pane (or ``target``) and wait for its prompt.

        ``env`` only matters when this call starts the tmux server: a pane's shell keeps
        its environment. ``cwd`` is a ``cd`` typed first, when the pane is elsewhere.
        On timeout the command keeps running; ``timed_out`` is set and a notice names the
        pane and how to stop or watch it. ``expect_cwd``: the directory the command was
        approved in; if the shell is elsewhere now, nothing is typed (BackendError).
        ``confinement``: the sandbox walls it was approved for; a command approved for walls
        other than the shared pane's runs in a window of those walls (shown in the mirror).
        """
        if (early := cancelled_early(cancel, merged_output=True)) is not None:
            return early
        check_shared_shell(command)
        started = time.perf_counter()
        notices = self._take_notices()
        pane = await self._pane_for_command(target, notices, env, confinement)
        cwd, expect_cwd = self._start_dir(pane.pane_id, target, cwd, expect_cwd)
        report_notices(notices, on_chunk)
        moment = time.monotonic()
        async with pane.lock:
            job = await self._start_job(pane, command, cwd, on_chunk, expect_cwd)
            result = await self._finish_job(pane, job, timeout, cancel, started, notices)
        if pane.confinement is not None and self.sandbox is not None:
            result.notices += sandbox_notes(
                pane.confinement,
                result.stdout,
                self.sandbox.refusals_since(moment),
                failed=result.exit_code not in (0, None),
            )
        return result

    async def dispatch(
        self,
        command: str,
        *,
        target: str | None = None,
        cwd: str | None = None,
        expect_cwd: str | None = None,
        confinement: Confinement | None = None,
    ) -> tuple[str, list[str]]:
        """Type ``command`` and return at once: ``(pane id, notices)``. It runs on alone."""
        check_shared_shell(command)
        notices = self._take_notices()
        pane = await self._pane_for_command(target, notices, None, confinement)
        cwd, expect_cwd = self._start_dir(pane.pane_id, target, cwd, expect_cwd)
        async with pane.lock:
            await self._start_job(pane, command, cwd, None, expect_cwd)
        return pane.pane_id, notices

    def _start_dir(
        self, pane_id: str, target: str | None, cwd: str | None, expect_cwd: str | None
    ) -> tuple[str | None, str | None]:
        """In a window of other walls, start where the shared shell stands (the directory the
        person approved), by a ``cd`` if need be, rather than check that window's own."""
        if target is not None or pane_id == self.default_pane or cwd is not None:
            return cwd, expect_cwd
        return expect_cwd or self.shell_cwd() or self.default_cwd, None

    def running_command(self, pane_id: str) -> str | None:
        """The command we typed into ``pane_id`` that has not reached its prompt yet."""
        pane = self._panes.get(pane_id)
        if pane is None or pane.job is None or pane.job.done.done():
            return None
        return pane.job.command

    def prompt_state(self, pane_id: str | None = None) -> str | None:
        """``prompt``, ``running`` or ``continuation`` (see ``panes.PromptWatch``)."""
        pane = self._panes.get(pane_id or self.default_pane or "")
        return pane.prompt.state if pane is not None and pane.prompt is not None else None

    def shell_cwd(self, pane_id: str | None = None) -> str | None:
        """The directory the shell of ``pane_id`` (default: the shared pane) last reported.

        It is where its next command runs: a person's ``cd`` during a take-over moves it
        too. None before the pane was set up, or when the shell cannot report it (POSIX sh).
        """
        pane = self._panes.get(pane_id or self.default_pane or "")
        return pane.prompt.cwd if pane is not None and pane.prompt is not None else None

    async def wait_for_prompt(self, pane_id: str, timeout: float) -> int | None:
        """Wait until the command we typed into ``pane_id`` is back at its prompt.

        Returns its exit code (None when nothing was running). Raises TimeoutError.
        """
        pane = self._panes.get(pane_id)
        if pane is None:
            return None
        job = pane.job or pane.last_job
        if job is None:
            return None
        await asyncio.wait_for(asyncio.shield(job.done), timeout)
        return job.stream.exit_code

    async def _start_job(
        self,
        pane: ManagedPane,
        command: str,
        cwd: str | None,
        on_chunk: ChunkSink | None,
        expect_cwd: str | None = None,
    ) -> Job:
        """Type ``command`` into ``pane`` (the caller holds its lock); its ``Job``."""
        client = await self._clients.client(pane.session)
        status = await pane_status(client, pane.pane_id)
        if status is None or status.dead:
            raise BackendError(f"pane {pane.pane_id} is gone")
        lost = pane.job
        if lost is not None and lost.stream.start is None and lost.stream.orphan_ends:
            # The shell came back to its prompt without ever starting it: the typed line was
            # discarded (a Ctrl-C flushes the terminal's input). Nothing runs: free the pane.
            pane.fail("the typed command was discarded before it started")
        if pane.job is not None and not pane.job.done.done():
            elapsed = time.monotonic() - pane.job.started
            raise BackendError(
                f"pane {pane.pane_id} is still running `{_short(pane.job.command)}` "
                f"(started {elapsed:.0f} s ago). Watch it with tmux_capture_pane, stop it with "
                "tmux_send_keys C-c, or use another pane (tmux_create_pane)"
            )
        if status.in_mode:
            await client.command(f"copy-mode -q -t {pane.pane_id}")
        running = detect_shell(status.command)
        if running is None and pane.confinement is not None and shell_or_wrapper(status.command):
            running = pane.kind
        if running is None:
            raise BackendError(
                f"pane {pane.pane_id} is running `{status.command}`, not its shell: typing "
                "a command there would go to that program. Use tmux_send_keys to talk to it "
                "(e.g. C-c or q), or another pane"
            )
        if running is not pane.kind and pane.kind is not ShellKind.SH:
            raise BackendError(
                f"pane {pane.pane_id} now runs a nested {status.command} inside its "
                f"{pane.kind.value}; end it first (tmux_send_keys C-d) or use another pane"
            )
        held = None
        if pane.prompt is not None:
            held = refusal(pane.pane_id, pane.prompt) or (
                None if cwd else moved(pane.pane_id, pane.prompt, expect_cwd)
            )
        if held is not None:
            raise BackendError(held)
        if pane.prompt is not None and pane.prompt.typed:
            await discard_input(pane.pane_id, pane.prompt, client.command, CANCEL_GRACE)
        if cwd and PurePosixPath(cwd) != PurePosixPath(status.path or "/"):
            await self._change_directory(client, pane, cwd)
        self._mark_used(pane.pane_id)
        job = Job(
            pane_id=pane.pane_id,
            command=command,
            stream=CommandStream(pane.nonce, keep_limit=KEEP_LIMIT),
            done=asyncio.get_running_loop().create_future(),
            on_chunk=on_chunk,
        )
        job.baseline = await take_baseline(pane.shell_pid)
        pane.job = job
        text = command_text(pane.typing_kind, command)
        try:
            await type_command(client, pane.pane_id, text, clear=True)
        except BaseException:
            pane.job = None
            raise
        return job

    async def _change_directory(self, client: ControlClient, pane: ManagedPane, cwd: str) -> None:
        job = Job(
            pane.pane_id,
            f"cd {cwd}",
            CommandStream(pane.nonce),
            asyncio.get_running_loop().create_future(),
        )
        pane.job = job
        text = command_text(pane.typing_kind, f"cd -- {_sh_quote(cwd)}")
        await type_command(client, pane.pane_id, text, clear=True)
        try:
            await asyncio.wait_for(asyncio.shield(job.done), SETUP_TIMEOUT)
        except TimeoutError:
            raise BackendError(f"pane {pane.pane_id} did not finish `cd {cwd}`") from None
        if job.stream.exit_code != 0:
            raise BackendError(f"cannot cd to {cwd!r} in pane {pane.pane_id}")

    async def _finish_job(
        self,
        pane: ManagedPane,
        job: Job,
        timeout: float | None,
        cancel: asyncio.Event | None,
        started: float,
        notices: list[str],
    ) -> ExecResult:
        """Wait for ``job`` to end, time out or be cancelled; its result with ``notices``."""
        cancel_wait = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        waits: set[asyncio.Future[Any]] = {job.done}
        if cancel_wait is not None:
            waits.add(cancel_wait)
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            cancelled = not job.done.done() and cancel is not None and cancel.is_set()
            if cancelled:
                await self._stop(pane, job, notices)
        except asyncio.CancelledError:
            if not job.done.done():
                task = asyncio.ensure_future(self._interrupt_quietly(pane.pane_id))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
            raise
        finally:
            if cancel_wait is not None:
                cancel_wait.cancel()
        if job.done.done() and job.done.exception() is not None:
            raise BackendError(str(job.done.exception()))
        stream = job.stream
        result = ExecResult(
            exit_code=stream.exit_code if job.done.done() and not cancelled else None,
            cwd=pane.prompt.cwd if pane.prompt else None,
            stdout=stream.output(),
            duration_ms=(time.perf_counter() - started) * 1000.0,
            merged_output=True,
            cancelled=cancelled,
            timed_out=not job.done.done() and not cancelled,
            notices=notices,
        )
        if stream.capped:
            notices.append(
                f"output kept to its first {KEEP_LIMIT:,} bytes in this result "
                f"({stream.received:,} received); the live output carried all of it"
            )
        if not job.done.done():
            how = "after Ctrl-C" if cancelled else f"after {timeout:g} s"
            notices.append(
                f"still running in pane {pane.pane_id} {how} (not killed). Watch it with "
                f"tmux_capture_pane target={pane.pane_id}; stop it with tmux_send_keys "
                f"target={pane.pane_id} keys=['C-c']"
            )
        return result

    async def _stop(self, pane: ManagedPane, job: Job, notices: list[str]) -> None:
        """Ctrl-C, as a person would press it; then what it spared in the background."""
        base = job.baseline
        seen = await started_since(base) if base is not None else []
        # A Ctrl-C that lands between two commands of a list can be swallowed by
        # the shell: press it again, as a person would.
        for _ in range(3):
            await self._interrupt(pane.pane_id)
            await asyncio.wait({job.done}, timeout=CANCEL_GRACE / 3)
            if job.done.done():
                break
        if base is not None:  # Ctrl-C spares background jobs: stop them too
            notices.append(await stop_started(base, seen))
            await asyncio.wait({job.done}, timeout=CANCEL_GRACE / 3)

    async def _interrupt(self, pane_id: str) -> None:
        """Press Ctrl-C in ``pane_id``."""
        pane = self._panes.get(pane_id)
        client = await self._clients.client(pane.session if pane else self.default_session)
        await client.command(f"send-keys -t {pane_id} C-c")

    async def _interrupt_quietly(self, pane_id: str) -> None:
        try:
            await self._interrupt(pane_id)
        except BackendError:
            pass


def report_notices(notices: list[str], on_chunk: ChunkSink | None) -> None:
    """Show ``notices`` in a command's live output, before the command is typed."""
    if on_chunk is None:
        return
    for notice in notices:
        try:
            on_chunk("info", notice + "\n")
        except Exception:
            log.exception("output sink failed")


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"

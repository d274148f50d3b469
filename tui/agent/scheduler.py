"""The runner of scheduled jobs: wakes at the earliest due time and runs what is due.

It only ever sleeps on one event (``wake()``) with a timeout, so a job added or removed takes
effect at once, and a clock that jumps (a suspended laptop) is noticed within ``max_idle``.
Each run is its own task, so one slow job never delays another that comes due; a job is never
run twice at once, here or in another agent-tui process on the same database (see the claim
and lease in ``tui.tools.builtin.cron.store``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from tui.events import Event, Notice, ScheduledJobFinished
from tui.exec.backend import BackendError, ExecutionBackend
from tui.tools.builtin.cron.store import CronJob, CronStore

LEASE_SECONDS = 60.0
"""How long a claim keeps other processes off a running job; renewed every third of it."""
MAX_IDLE_SECONDS = 60.0
"""Look at the table at least this often: other processes add jobs we are not told about."""
ERROR_BACKOFF_SECONDS = 5.0
EVENT_OUTPUT_CHARS = 2000
"""A screenful of a run's output for the event; the database keeps more."""


@dataclass
class JobOutcome:
    """How one run ended: ``ok`` False for a non-zero exit, a timeout or an exception."""

    ok: bool
    output: str


JobRunner = Callable[[str], Awaitable[JobOutcome]]


class Scheduler:
    """Runs the jobs of ``store`` while ``run()`` is running.

    Args:
        store: The jobs (shared with the cron tools, and maybe with other processes).
        run_command: Runs a command job's shell command.
        run_prompt: Runs a prompt job as an agent turn.
        publish: Receives a ``ScheduledJobFinished`` after every run (and ``Notice`` events
            when the database cannot be read).
        clock: Unix seconds now; injectable for tests of the timing.
        owner: This runner's name in leases; unique per instance by default.
        lease_seconds: See ``LEASE_SECONDS``.
        max_idle: See ``MAX_IDLE_SECONDS``.
    """

    def __init__(
        self,
        store: CronStore,
        *,
        run_command: JobRunner,
        run_prompt: JobRunner,
        publish: Callable[[Event], None],
        clock: Callable[[], float] = time.time,
        owner: str | None = None,
        lease_seconds: float = LEASE_SECONDS,
        max_idle: float = MAX_IDLE_SECONDS,
    ) -> None:
        self.store = store
        self._run_command = run_command
        self._run_prompt = run_prompt
        self._publish = publish
        self._clock = clock
        self.owner = owner or f"{os.getpid()}-{secrets.token_hex(4)}"
        self._lease_seconds = lease_seconds
        self._max_idle = max_idle
        self._wake = asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._store_failing = False
        self.next_wake_at: float | None = None
        """When the runner next looks at the table on its own (None: only on ``wake()`` or
        after ``max_idle``); for a status line."""

    @property
    def running_jobs(self) -> frozenset[str]:
        """Ids of the jobs this runner is running now."""
        return frozenset(self._tasks)

    def wake(self) -> None:
        """Jobs changed: look at the table again now. Call it from the event loop's thread."""
        self._wake.set()

    async def run(self) -> None:
        """Run due jobs until cancelled; cancelling also cancels the runs in progress."""
        try:
            while True:
                self._wake.clear()
                wake_at = await self._tick()
                self.next_wake_at = wake_at
                delay = self._max_idle
                if wake_at is not None:
                    delay = min(max(wake_at - self._clock(), 0.0), self._max_idle)
                # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancel that
                # arrives just as the wake event is set, and run() would never end.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
        finally:
            self.next_wake_at = None
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _tick(self) -> float | None:
        """Start every due job; when to look again.

        Nothing here may end the runner: a database it cannot read is reported once and
        retried, and a job it cannot claim is skipped until the next look.
        """
        now = self._clock()
        try:
            plan = await self.store.plan(now, skip=self._tasks)
        except Exception as error:
            self._report_store_error(error)
            return now + ERROR_BACKOFF_SECONDS
        self._store_failing = False
        for job in plan.due:
            try:
                claimed = await self.store.claim(
                    job, now=now, owner=self.owner, lease_seconds=self._lease_seconds
                )
            except Exception as error:
                self._report_store_error(error)
                continue
            if claimed is None:
                continue  # another process won the claim, or the job was removed
            self._tasks[claimed.id] = asyncio.create_task(
                self._run_job(claimed, now), name=f"cron-job-{claimed.id}"
            )
        return plan.wake_at

    async def _run_job(self, job: CronJob, started: float) -> None:
        """One run: keep the lease alive, record the outcome, tell the bus, look again."""
        try:
            renewer = asyncio.create_task(self._renew_lease(job.id))
            try:
                outcome = await self._outcome(job)
            except asyncio.CancelledError:
                # agent-tui is closing: say so in the job's record and release the lease.
                with contextlib.suppress(Exception):
                    await asyncio.shield(
                        self.store.finish(
                            job.id,
                            owner=self.owner,
                            ran_at=started,
                            ok=False,
                            output="cancelled: agent-tui stopped while the job was running",
                        )
                    )
                raise
            finally:
                renewer.cancel()
            try:
                await self.store.finish(
                    job.id, owner=self.owner, ran_at=started, ok=outcome.ok, output=outcome.output
                )
            except Exception as error:
                self._report_store_error(error)
            self._publish(
                ScheduledJobFinished(
                    job_id=job.id,
                    name=job.name,
                    job_kind=job.job_kind,
                    ok=outcome.ok,
                    output=_tail(outcome.output, EVENT_OUTPUT_CHARS),
                    next_run=job.next_run,
                )
            )
        finally:
            # Only now may the job be planned again: its lease is released and recorded.
            self._tasks.pop(job.id, None)
        self.wake()

    async def _outcome(self, job: CronJob) -> JobOutcome:
        """The run's outcome; an exception from the runner is a failed run, not a crash."""
        runner = self._run_command if job.job_kind == "command" else self._run_prompt
        try:
            return await runner(job.payload)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            return JobOutcome(ok=False, output=f"{type(error).__name__}: {error}")

    async def _renew_lease(self, job_id: str) -> None:
        while True:
            await asyncio.sleep(self._lease_seconds / 3)
            with contextlib.suppress(sqlite3.Error, OSError):
                await self.store.renew(
                    job_id, owner=self.owner, until=self._clock() + self._lease_seconds
                )

    def _report_store_error(self, error: Exception) -> None:
        """Once per streak of failures, not every few seconds."""
        if self._store_failing:
            return
        self._store_failing = True
        self._publish(
            Notice(
                message=f"scheduled jobs: cannot use the cron database ({error}); retrying",
                level="warning",
            )
        )


def _tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"[… {len(text) - limit} characters cut …]\n{text[-limit:]}"


def backend_command_runner(
    backend: ExecutionBackend,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600.0,
) -> JobRunner:
    """A ``run_command`` for ``Scheduler``: the command on ``backend``, with a timeout.

    ``env`` is the environment the policy allows (``policy.command_env()``); ``timeout`` is
    ``[cron].command_timeout``.
    """

    async def run_command(command: str) -> JobOutcome:
        try:
            result = await backend.run(command, cwd=cwd, env=env, timeout=timeout)
        except BackendError as error:
            return JobOutcome(ok=False, output=f"{backend.actor}: {error.msg}")
        parts = []
        if result.timed_out:
            parts.append(f"timed out after {timeout:g} s; its process group was killed")
        else:
            parts.append(f"exit code: {result.exit_code}")
        if result.stdout:
            parts.append(result.stdout.rstrip("\n"))
        if result.stderr:
            parts.append("stderr:\n" + result.stderr.rstrip("\n"))
        parts.extend(f"note: {notice}" for notice in result.notices)
        ok = result.exit_code == 0 and not result.timed_out and not result.cancelled
        return JobOutcome(ok=ok, output="\n".join(parts))

    return run_command

"""The ``cron_jobs`` table: jobs that run later, and the claim that runs each one once.

Jobs live in the ``cron_jobs`` table of agent-tui's own SQLite database (the memory database,
so one file holds what outlives a session), and ``tui.agent.scheduler.Scheduler`` runs them
while the app is open.

Several agent-tui processes may share the database, so running a job starts with a claim: a
compare-and-swap ``UPDATE`` on ``next_run`` that only one process can win, plus a lease that
keeps others off the job while the winner runs it. A lease that is not renewed (its process
died) expires and the job becomes claimable again.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from tui.tools.builtin.cron.schedule import Schedule, first_run, following_run
from tui.tools.builtin.memory import sqlite_db
from tui.tools.builtin.memory.store import memory_db_path

OUTPUT_LIMIT = 16_000
"""Characters of a run's output kept in the database (head and tail, with a marker)."""

T = TypeVar("T")
JobKind = Literal["command", "prompt"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS cron_jobs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    job_kind TEXT NOT NULL CHECK (job_kind IN ('command', 'prompt')),
    payload TEXT NOT NULL,
    schedule TEXT NOT NULL,
    created REAL NOT NULL,
    next_run REAL,
    last_run REAL,
    last_ok INTEGER,
    last_output TEXT,
    runs INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until REAL
)""",
    "CREATE INDEX IF NOT EXISTS cron_jobs_next_run ON cron_jobs (next_run)",
)


def cap_output(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """``text`` within ``limit`` characters: its head and tail with a marker between them."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut} characters cut …]\n{text[-tail:]}"


@dataclass
class CronJob:
    """One row of ``cron_jobs``."""

    id: str
    name: str
    job_kind: JobKind
    payload: str
    """The shell command or the agent prompt."""
    schedule: Schedule
    created: float
    next_run: float | None
    """Unix seconds when it is next due; None once a one-shot has run (it is done)."""
    last_run: float | None = None
    last_ok: bool | None = None
    last_output: str | None = None
    runs: int = 0
    lease_owner: str | None = None
    lease_until: float | None = None
    """While a process runs the job it holds a lease up to here, renewed as it runs."""

    @property
    def done(self) -> bool:
        return self.next_run is None

    @property
    def label(self) -> str:
        return f"{self.id} ({self.name})" if self.name else self.id

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> CronJob:
        return cls(
            id=row["id"],
            name=row["name"],
            job_kind=row["job_kind"],
            payload=row["payload"],
            schedule=Schedule.from_json(row["schedule"]),
            created=row["created"],
            next_run=row["next_run"],
            last_run=row["last_run"],
            last_ok=None if row["last_ok"] is None else bool(row["last_ok"]),
            last_output=row["last_output"],
            runs=row["runs"],
            lease_owner=row["lease_owner"],
            lease_until=row["lease_until"],
        )


@dataclass
class DuePlan:
    """What one look at the table found: jobs to claim now, and when to look again."""

    due: list[CronJob] = field(default_factory=list)
    wake_at: float | None = None


def _connect(path: Path) -> sqlite3.Connection:
    """The memory tables may share the file: only our own table is created here."""
    return sqlite_db.connect(path, _SCHEMA, marker="cron_jobs")


def _transaction(path: Path) -> contextlib.AbstractContextManager[sqlite3.Connection]:
    return sqlite_db.transaction(path, _SCHEMA, marker="cron_jobs")


class CronStore:
    """The ``cron_jobs`` table. Every method opens its own connection in a worker thread.

    Args:
        path: The database file; None means the memory database in agent-tui's data folder,
            looked up at each call (so a test's ``AGENT_TUI_DATA_DIR`` applies).
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else memory_db_path()

    async def _call(self, func: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(func, self.path, *args)

    async def add(
        self, job_kind: JobKind, payload: str, schedule: Schedule, *, name: str = "", now: float
    ) -> CronJob:
        """Store a new job; its first run is computed from ``now``.

        Raises:
            ScheduleError: the schedule has no future run.
        """
        next_run = first_run(schedule, now)
        return await self._call(_add, job_kind, payload, schedule, name, now, next_run)

    async def jobs(self) -> list[CronJob]:
        """Every job, soonest first, finished one-shots last."""
        return await self._call(_jobs)

    async def get(self, job_id: str) -> CronJob | None:
        return await self._call(_get, job_id)

    async def remove(self, job_id: str) -> bool:
        """Delete the job; False when there was none. A run in progress is not stopped."""
        return await self._call(_remove, job_id)

    async def plan(self, now: float, *, skip: Iterable[str] = ()) -> DuePlan:
        """Jobs due at ``now`` that nobody holds, and when the next one can be due.

        ``skip`` are jobs this process runs already: they wait for their run to finish.
        """
        return await self._call(_plan, now, frozenset(skip))

    async def claim(
        self, job: CronJob, *, now: float, owner: str, lease_seconds: float
    ) -> CronJob | None:
        """Take the due ``job`` for ``owner``: the claimed job (``next_run`` moved on), or None
        when another process got there first or it was removed."""
        return await self._call(_claim, job, now, owner, lease_seconds)

    async def renew(self, job_id: str, *, owner: str, until: float) -> bool:
        """Extend ``owner``'s lease; False when it no longer holds the job."""
        return await self._call(_renew, job_id, owner, until)

    async def finish(
        self, job_id: str, *, owner: str, ran_at: float, ok: bool, output: str
    ) -> None:
        """Record a run's result and release ``owner``'s lease."""
        await self._call(_finish, job_id, owner, ran_at, ok, cap_output(output))


def _add(
    path: Path,
    job_kind: str,
    payload: str,
    schedule: Schedule,
    name: str,
    now: float,
    next_run: float,
) -> CronJob:
    with _transaction(path) as conn:
        while True:
            job_id = secrets.token_hex(4)
            if conn.execute("SELECT 1 FROM cron_jobs WHERE id = ?", (job_id,)).fetchone() is None:
                break
        conn.execute(
            "INSERT INTO cron_jobs (id, name, job_kind, payload, schedule, created, next_run)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (job_id, name, job_kind, payload, schedule.to_json(), now, next_run),
        )
        row = conn.execute("SELECT * FROM cron_jobs WHERE id = ?", (job_id,)).fetchone()
    return CronJob.from_row(row)


def _jobs(path: Path) -> list[CronJob]:
    conn = _connect(path)
    try:
        rows = conn.execute(
            "SELECT * FROM cron_jobs ORDER BY next_run IS NULL, next_run, created"
        ).fetchall()
    finally:
        conn.close()
    return [CronJob.from_row(row) for row in rows]


def _get(path: Path, job_id: str) -> CronJob | None:
    conn = _connect(path)
    try:
        row = conn.execute("SELECT * FROM cron_jobs WHERE id = ?", (job_id,)).fetchone()
    finally:
        conn.close()
    return CronJob.from_row(row) if row is not None else None


def _remove(path: Path, job_id: str) -> bool:
    with _transaction(path) as conn:
        return conn.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,)).rowcount > 0


def _plan(path: Path, now: float, skip: frozenset[str]) -> DuePlan:
    conn = _connect(path)
    try:
        rows = conn.execute("SELECT * FROM cron_jobs WHERE next_run IS NOT NULL").fetchall()
    finally:
        conn.close()
    plan = DuePlan()
    for row in rows:
        if row["id"] in skip:
            continue
        job = CronJob.from_row(row)
        assert job.next_run is not None
        held_until = job.lease_until if job.lease_until is not None else 0.0
        if job.next_run <= now and held_until < now:
            plan.due.append(job)
            continue
        # Held by another process: look again when its lease would run out.
        ready = max(job.next_run, held_until)
        plan.wake_at = ready if plan.wake_at is None else min(plan.wake_at, ready)
    plan.due.sort(key=lambda job: job.next_run or 0.0)
    return plan


def _claim(
    path: Path, job: CronJob, now: float, owner: str, lease_seconds: float
) -> CronJob | None:
    assert job.next_run is not None
    following = following_run(job.schedule, job.next_run, now)
    with _transaction(path) as conn:
        # The compare-and-swap: only the process that still sees the next_run it planned with
        # (and no live lease) moves it on; every other claimant changes no row.
        changed = conn.execute(
            "UPDATE cron_jobs SET next_run = ?, lease_owner = ?, lease_until = ?"
            " WHERE id = ? AND next_run = ? AND (lease_until IS NULL OR lease_until < ?)",
            (following, owner, now + lease_seconds, job.id, job.next_run, now),
        ).rowcount
    if changed != 1:
        return None
    job.next_run = following
    job.lease_owner = owner
    job.lease_until = now + lease_seconds
    return job


def _renew(path: Path, job_id: str, owner: str, until: float) -> bool:
    with _transaction(path) as conn:
        return (
            conn.execute(
                "UPDATE cron_jobs SET lease_until = ? WHERE id = ? AND lease_owner = ?",
                (until, job_id, owner),
            ).rowcount
            > 0
        )


def _finish(path: Path, job_id: str, owner: str, ran_at: float, ok: bool, output: str) -> None:
    with _transaction(path) as conn:
        conn.execute(
            "UPDATE cron_jobs SET last_run = ?, last_ok = ?, last_output = ?, runs = runs + 1,"
            " lease_until = CASE WHEN lease_owner = ? THEN NULL ELSE lease_until END,"
            " lease_owner = CASE WHEN lease_owner = ? THEN NULL ELSE lease_owner END"
            " WHERE id = ?",
            (ran_at, int(ok), output, owner, owner, job_id),
        )

"""``cron_add``, ``cron_list``, ``cron_remove``: jobs that run later, and the store they live in.

A job is a shell command or an agent prompt plus a schedule (a cron expression in a time zone,
a one-shot time, a one-shot delay, or a fixed interval). Jobs live in the ``cron_jobs`` table
of agent-tui's own SQLite database (the memory database, so one file holds what outlives a
session), and ``tui.agent.scheduler.Scheduler`` runs them while the app is open.

Several agent-tui processes may share the database, so running a job starts with a claim: a
compare-and-swap ``UPDATE`` on ``next_run`` that only one process can win, plus a lease that
keeps others off the job while the winner runs it. A lease that is not renewed (its process
died) expires and the job becomes claimable again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter  # type: ignore[import-untyped]
from pydantic import Field, field_validator, model_validator

from tui.errors import ExecutionFailed, InvalidArguments, NotFound
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin import sqlite_db
from tui.tools.builtin.memory import memory_db_path
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult

MIN_EVERY_SECONDS = 10.0
"""The shortest ``every_seconds`` interval ``cron_add`` accepts (``cron_tools`` can lower it)."""
MAX_DELAY_SECONDS = 366 * 24 * 3600.0
OUTPUT_LIMIT = 16_000
"""Characters of a run's output kept in the database (head and tail, with a marker)."""
EXCERPT_CHARS = 120

T = TypeVar("T")
JobKind = Literal["command", "prompt"]
ScheduleKind = Literal["cron", "at", "after_seconds", "every_seconds"]

CRON_EXAMPLE = "'0 9 * * 1-5' (09:00 on weekdays) or '*/15 * * * *' (every 15 minutes)"
AT_EXAMPLE = "'2026-05-01T09:30' (in `timezone`) or '2026-05-01T09:30:00+02:00'"
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

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


class ScheduleError(ValueError):
    """A schedule that cannot work; the message names the field and shows an example."""


# -- time zones and schedules ----------------------------------------------------------------


def local_zone_name() -> str:
    """This machine's IANA zone (``TZ``, then the ``/etc/localtime`` link), else ``UTC``.

    A fixed UTC offset would not do: a cron job at 09:00 must stay at 09:00 across DST.
    """
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    for name in candidates:
        if name:
            with contextlib.suppress(ScheduleError):
                load_zone(name)
                return name
    return "UTC"


def load_zone(name: str) -> ZoneInfo:
    """The zone called ``name``; raises ScheduleError naming ``timezone`` when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(
            f"timezone: unknown time zone {name!r}; use an IANA name such as "
            "'America/New_York', 'Europe/Berlin' or 'UTC'"
        ) from None


def normalize_cron(expression: str) -> str:
    """A checked 5-field expression (``@daily`` style macros become their 5 fields)."""
    text = " ".join(expression.split())
    text = _MACROS.get(text.lower(), text)
    fields = text.split(" ")
    if len(fields) != 5:
        raise ScheduleError(
            f"cron: {expression!r} has {len(fields)} field(s), not 5 (minute hour "
            f"day-of-month month day-of-week); e.g. {CRON_EXAMPLE}"
        )
    if not croniter.is_valid(text):
        raise ScheduleError(
            f"cron: {expression!r} is not a valid cron expression; e.g. {CRON_EXAMPLE}"
        )
    return text


def parse_at(text: str, zone: ZoneInfo) -> float:
    """Unix seconds of an ISO-8601 time; a time without an offset is read in ``zone``."""
    raw = text.strip()
    try:
        moment = datetime.datetime.fromisoformat(raw)
    except ValueError:
        raise ScheduleError(f"at: {text!r} is not an ISO-8601 time; e.g. {AT_EXAMPLE}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment.timestamp()


@dataclass(frozen=True)
class Schedule:
    """When a job runs. Exactly the fields of its ``kind`` are set.

    ``timezone`` is the zone cron fields are read in, and the zone times are shown in.
    """

    kind: ScheduleKind
    timezone: str
    cron: str | None = None
    at: float | None = None
    """Unix seconds of an ``at`` job's one run."""
    seconds: float | None = None
    """The delay of ``after_seconds`` or the interval of ``every_seconds``."""

    @property
    def repeats(self) -> bool:
        return self.kind in ("cron", "every_seconds")

    @property
    def zone(self) -> ZoneInfo:
        return load_zone(self.timezone)

    def to_json(self) -> str:
        data: dict[str, str | float] = {"kind": self.kind, "timezone": self.timezone}
        for key, value in (("cron", self.cron), ("at", self.at), ("seconds", self.seconds)):
            if value is not None:
                data[key] = value
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        data = json.loads(text)
        return cls(
            kind=data["kind"],
            timezone=data.get("timezone", "UTC"),
            cron=data.get("cron"),
            at=data.get("at"),
            seconds=data.get("seconds"),
        )

    def describe(self) -> str:
        if self.kind == "cron":
            return f'cron "{self.cron}" in {self.timezone}'
        if self.kind == "at":
            return f"once at {format_time(self.at, self.timezone)}"
        if self.kind == "after_seconds":
            return f"once, {self.seconds:g} s after it was added"
        return f"every {self.seconds:g} s"


def first_run(schedule: Schedule, now: float) -> float:
    """When a job added at ``now`` runs first.

    Raises:
        ScheduleError: an ``at`` time not in the future, or a cron expression that never fires.
    """
    if schedule.kind == "at":
        assert schedule.at is not None
        if schedule.at <= now:
            raise ScheduleError(
                f"at: {format_time(schedule.at, schedule.timezone)} is in the past (it is now "
                f"{format_time(now, schedule.timezone)}); give a future time, e.g. {AT_EXAMPLE}, "
                "or use after_seconds"
            )
        return schedule.at
    if schedule.kind in ("after_seconds", "every_seconds"):
        assert schedule.seconds is not None
        return now + schedule.seconds
    following = next_cron_run(schedule, now)
    if following is None:
        raise ScheduleError(f"cron: {schedule.cron!r} never fires; e.g. {CRON_EXAMPLE}")
    return following


def following_run(schedule: Schedule, due: float, now: float) -> float | None:
    """The run after the one that was due at ``due`` and starts at ``now``; None for one-shots.

    Missed slots are not replayed: however long the app was closed, the next run is the first
    slot after ``now``. An interval keeps its phase (``due`` + a whole number of intervals).
    """
    if schedule.kind == "every_seconds":
        assert schedule.seconds is not None
        missed = max(0, int((now - due) // schedule.seconds))
        following = due + (missed + 1) * schedule.seconds
        while following <= now:  # float rounding at an exact multiple
            following += schedule.seconds
        return following
    if schedule.kind == "cron":
        return next_cron_run(schedule, now)
    return None


def next_cron_run(schedule: Schedule, after: float) -> float | None:
    """The first cron slot strictly after ``after`` (Unix seconds), read in the job's zone.

    croniter follows real time across DST: a slot in the skipped hour runs when the clock
    jumps, and a slot in the repeated hour matches twice. Like cron itself, a job with a fixed
    hour runs only once on the night the clocks go back; one with ``*`` hours runs in both.
    """
    assert schedule.cron is not None
    hourly = schedule.cron.split(" ")[1] == "*"
    try:
        zone = schedule.zone
        slots = croniter(schedule.cron, datetime.datetime.fromtimestamp(after, zone))
        for _ in range(3):
            slot: datetime.datetime = slots.get_next(datetime.datetime)
            if hourly or not _second_occurrence(slot, zone):
                return slot.timestamp()
        return slot.timestamp()
    except (ValueError, KeyError, OverflowError):
        # croniter's "no date found" (an expression like 30 February) is a ValueError.
        return None


def _second_occurrence(moment: datetime.datetime, zone: ZoneInfo) -> bool:
    """True for the second pass through a wall-clock time repeated when DST ends."""
    wall = moment.replace(tzinfo=None)
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return False
    return moment.timestamp() == second.timestamp() != first.timestamp()


def format_time(moment: float | None, timezone: str) -> str:
    """``moment`` in ``timezone`` and in UTC, both ISO-8601, or ``-`` for none."""
    if moment is None:
        return "-"
    try:
        zone: datetime.tzinfo = load_zone(timezone)
    except ScheduleError:
        zone = datetime.UTC
    local = datetime.datetime.fromtimestamp(moment, zone).isoformat(timespec="seconds")
    utc = datetime.datetime.fromtimestamp(moment, datetime.UTC).isoformat(timespec="seconds")
    return f"{local} ({timezone}) = {utc.replace('+00:00', 'Z')}"


def cap_output(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """``text`` within ``limit`` characters: its head and tail with a marker between them."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut} characters cut …]\n{text[-tail:]}"


def excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    """The last non-empty line (where results and errors usually are), cut to ``limit``."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- the store -------------------------------------------------------------------------------


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


# -- the tools -------------------------------------------------------------------------------


class _CronTool:
    """Shared plumbing: the store, the change callback, database errors as tool errors."""

    def __init__(
        self,
        store: CronStore,
        on_change: Callable[[], None] | None = None,
        min_every_seconds: float = MIN_EVERY_SECONDS,
    ) -> None:
        self.store = store
        self._on_change = on_change
        self.min_every_seconds = min_every_seconds

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    async def _store_call(self, coro: Any) -> Any:
        try:
            return await coro
        except sqlite3.Error as exc:
            raise ExecutionFailed(f"cron database error: {exc}") from None
        except OSError as exc:
            raise ExecutionFailed(f"cannot open the cron database: {exc}") from None


class CronAddParams(ToolParams):
    command: str | None = Field(
        default=None,
        min_length=1,
        description="A shell command to run on schedule (give this or prompt, not both).",
    )
    prompt: str | None = Field(
        default=None,
        min_length=1,
        description="An instruction for the agent to carry out on schedule, as a new turn "
        "(give this or command, not both).",
    )
    name: str | None = Field(
        default=None, max_length=100, description="A short label to recognise the job by."
    )
    cron: str | None = Field(
        default=None,
        description="Repeat on a 5-field cron expression (minute hour day-of-month month "
        "day-of-week), read in `timezone`; e.g. '0 9 * * 1-5', '*/15 * * * *', '@daily'.",
    )
    at: str | None = Field(
        default=None,
        description="Run once at this ISO-8601 time; without an offset it is read in "
        "`timezone`. E.g. '2026-05-01T09:30' or '2026-05-01T09:30:00+02:00'.",
    )
    after_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_DELAY_SECONDS,
        description="Run once, this many seconds from now.",
    )
    every_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_DELAY_SECONDS,
        description=f"Repeat every this many seconds (at least {MIN_EVERY_SECONDS:g}).",
    )
    timezone: str | None = Field(
        default=None,
        description="IANA time zone for `cron` and `at` (e.g. 'America/New_York'); "
        "default: this machine's zone.",
    )

    @field_validator("cron")
    @classmethod
    def _check_cron(cls, value: str | None) -> str | None:
        return None if value is None else normalize_cron(value)

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str | None) -> str | None:
        if value is not None:
            load_zone(value.strip())
            return value.strip()
        return None

    @field_validator("at")
    @classmethod
    def _check_at(cls, value: str | None) -> str | None:
        if value is not None:
            parse_at(value, ZoneInfo("UTC"))
        return value

    @model_validator(mode="after")
    def _one_of_each(self) -> CronAddParams:
        if (self.command is None) == (self.prompt is None):
            raise ValueError(
                "give exactly one of command (a shell command) or prompt (an instruction for "
                'the agent), e.g. {"command": "make backup", "cron": "0 3 * * *"}'
            )
        given = [name for name in _SCHEDULE_FIELDS if getattr(self, name) is not None]
        if len(given) != 1:
            which = f"got {', '.join(given)}" if given else "got none"
            raise ValueError(
                "give exactly one schedule: cron, at, after_seconds or every_seconds "
                f'({which}), e.g. {{"cron": "0 9 * * 1-5"}} or {{"after_seconds": 600}}'
            )
        if self.timezone is not None and given[0] not in ("cron", "at"):
            raise ValueError(f"timezone: applies to cron and at only, not {given[0]}; leave it out")
        return self

    def schedule(self, default_zone: str) -> Schedule:
        """The schedule these (validated) params describe; at-times are resolved here."""
        zone_name = self.timezone or default_zone
        if self.cron is not None:
            return Schedule(kind="cron", timezone=zone_name, cron=self.cron)
        if self.at is not None:
            return Schedule(
                kind="at", timezone=zone_name, at=parse_at(self.at, load_zone(zone_name))
            )
        if self.after_seconds is not None:
            return Schedule(kind="after_seconds", timezone=zone_name, seconds=self.after_seconds)
        return Schedule(kind="every_seconds", timezone=zone_name, seconds=self.every_seconds)


_SCHEDULE_FIELDS = ("cron", "at", "after_seconds", "every_seconds")


class CronAddTool(_CronTool, Tool[CronAddParams]):
    name = "cron_add"
    label = "Schedule"
    Params = CronAddParams
    permission = PermissionMode.WORKSPACE_WRITE
    description = """Schedule a shell command or an agent prompt to run later, once or repeatedly.

When to use: the user wants something done at a time or on a rhythm: a nightly backup, a check
every 15 minutes, a reminder at 17:00, a report on weekday mornings, a retry in 10 minutes.
When NOT to use: waiting a little within this turn (use sleep); a long command to start now
(use run_shell); system-wide scheduling the user asked to install with crontab or systemd.
Disambiguation: jobs are stored in agent-tui's database and run only while agent-tui is open;
a run missed while it was closed happens once at the next start, not once per missed slot.
Exactly one of command/prompt and exactly one schedule: cron (5 fields, in timezone), at (an
ISO time), after_seconds (once) or every_seconds (repeating). The command is judged for risk
now, because it will later run unattended. Returns the job id and its next run time; see jobs
with cron_list, delete with cron_remove.
Examples: {"command": "make backup", "cron": "0 3 * * *", "name": "nightly backup"};
{"prompt": "Check CI on main and summarise failures", "cron": "0 9 * * 1-5",
"timezone": "Europe/Berlin"}; {"command": "curl -fsS localhost:8000/health",
"every_seconds": 300}; {"prompt": "Remind me to send the invoice", "at": "2026-05-01T17:00"};
{"command": "git fetch", "after_seconds": 600}"""

    def parse_params(self, data: dict[str, Any]) -> ToolParams:
        params = CronAddParams.model_validate(data)
        if params.every_seconds is not None and params.every_seconds < self.min_every_seconds:
            raise InvalidArguments(
                f"every_seconds: {params.every_seconds:g} is below the minimum of "
                f'{self.min_every_seconds:g} s; e.g. {{"every_seconds": 60}}'
            )
        return params

    def access(self, params: CronAddParams) -> ToolAccess:
        when = params.schedule(local_zone_name()).describe()
        if params.command is not None:
            # As run_shell: the policy's risk parser judges the command (and may raise the
            # permission to danger-full-access). The floor is higher than run_shell's, because
            # the command will run again and again with nobody asked.
            return ToolAccess(
                permission=PermissionMode.WORKSPACE_WRITE,
                command=params.command,
                why=f"scheduled to run unattended, {when}",
                acting=True,
            )
        return ToolAccess(
            permission=PermissionMode.WORKSPACE_WRITE,
            subject=params.prompt,
            why=f"an agent turn scheduled to run unattended, {when}",
            acting=True,
        )

    async def execute(self, params: CronAddParams, ctx: ToolContext) -> ToolResult:
        try:
            schedule = params.schedule(local_zone_name())
        except ScheduleError as error:
            raise InvalidArguments(str(error)) from None
        job_kind: JobKind = "command" if params.command is not None else "prompt"
        payload = params.command if params.command is not None else params.prompt
        assert payload is not None
        try:
            job = await self._store_call(
                self.store.add(job_kind, payload, schedule, name=params.name or "", now=time.time())
            )
        except ScheduleError as error:
            raise InvalidArguments(str(error)) from None
        self._changed()
        next_local, next_utc = _iso_pair(job.next_run, schedule.timezone)
        lines = [
            f"Scheduled job {job.label}: {job_kind} {_quote(payload)}",
            f"schedule: {schedule.describe()}",
            f"next run: {format_time(job.next_run, schedule.timezone)}",
            "It runs while agent-tui is open; list jobs with cron_list, delete with "
            f'cron_remove {{"id": "{job.id}"}}.',
        ]
        return ToolResult(
            "\n".join(lines),
            {
                "id": job.id,
                "next_run": job.next_run,
                "next_run_local": next_local,
                "next_run_utc": next_utc,
                "timezone": schedule.timezone,
            },
        )


class CronListParams(ToolParams):
    pass


class CronListTool(_CronTool, Tool[CronListParams]):
    name = "cron_list"
    label = "Scheduled jobs"
    Params = CronListParams
    permission = PermissionMode.READ_ONLY
    description = """List every scheduled job with its schedule, next run and last result.

When to use: before adding a job (it may exist already), to find a job's id for cron_remove,
to see whether a scheduled job ran and whether it failed.
When NOT to use: for processes running now (use run_shell with ps, or the tmux tools).
Disambiguation: shows jobs from cron_add only, not the system crontab. A one-shot job (at,
after_seconds) that has run stays in the list marked done until removed with cron_remove.
Each job shows id, name, kind, schedule, next run, last run, last result (ok or failed) and
the last line of its last output.
Examples: {}"""

    def access(self, params: CronListParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY, acting=False)

    async def execute(self, params: CronListParams, ctx: ToolContext) -> ToolResult:
        jobs: list[CronJob] = await self._store_call(self.store.jobs())
        if not jobs:
            return ToolResult("No scheduled jobs.", {"count": 0, "ids": []})
        blocks = [_describe_job(job) for job in jobs]
        return ToolResult(
            f"{len(jobs)} scheduled job(s):\n\n" + "\n\n".join(blocks),
            {"count": len(jobs), "ids": [job.id for job in jobs]},
        )


class CronRemoveParams(ToolParams):
    id: str = Field(min_length=1, description="The job's id, as cron_add or cron_list gave it.")


class CronRemoveTool(_CronTool, Tool[CronRemoveParams]):
    name = "cron_remove"
    label = "Unschedule"
    Params = CronRemoveParams
    permission = PermissionMode.WORKSPACE_WRITE
    description = """Delete a scheduled job so it never runs again.

When to use: the user no longer wants a job, a job is wrong (remove it and add a new one),
or a finished one-shot should leave the list.
When NOT to use: to stop a command running right now (use the tmux tools or run_shell).
Disambiguation: takes the id from cron_add or cron_list; a run already in progress finishes,
but the job is not run again.
Examples: {"id": "3f9a1c2e"}"""

    async def execute(self, params: CronRemoveParams, ctx: ToolContext) -> ToolResult:
        job_id = params.id.strip()
        job: CronJob | None = await self._store_call(self.store.get(job_id))
        removed = job is not None and await self._store_call(self.store.remove(job_id))
        if not removed:
            jobs: list[CronJob] = await self._store_call(self.store.jobs())
            known = ", ".join(j.label for j in jobs) or "none"
            raise NotFound(f"no scheduled job with id {job_id!r}; existing jobs: {known}")
        assert job is not None
        self._changed()
        return ToolResult(
            f"Removed job {job.label}: {job.job_kind} {_quote(job.payload)}", {"id": job_id}
        )


def _quote(text: str, limit: int = 200) -> str:
    one_line = " ".join(text.split())
    if len(one_line) > limit:
        one_line = one_line[: limit - 1] + "…"
    return f"`{one_line}`"


def _iso_pair(moment: float | None, timezone: str) -> tuple[str | None, str | None]:
    if moment is None:
        return None, None
    local = datetime.datetime.fromtimestamp(moment, load_zone(timezone))
    utc = datetime.datetime.fromtimestamp(moment, datetime.UTC)
    return local.isoformat(timespec="seconds"), utc.isoformat(timespec="seconds")


def _describe_job(job: CronJob) -> str:
    zone = job.schedule.timezone
    if job.done:
        state = "done (one-shot, has run)"
    elif job.lease_until is not None:
        state = "running"
    else:
        state = "scheduled"
    if job.last_ok is None:
        result = "never run"
    else:
        result = "ok" if job.last_ok else "failed"
        line = excerpt(job.last_output)
        if line:
            result += f" — {line}"
    title = f"{job.id}" + (f" ({job.name})" if job.name else "")
    return "\n".join(
        [
            f"- {title} [{state}] {job.job_kind}: {_quote(job.payload)}",
            f"  schedule: {job.schedule.describe()}",
            f"  next run: {format_time(job.next_run, zone)}",
            f"  last run: {format_time(job.last_run, zone)}; runs: {job.runs}",
            f"  last result: {result}",
        ]
    )


def cron_tools(
    store: CronStore,
    *,
    on_change: Callable[[], None] | None = None,
    min_every_seconds: float = MIN_EVERY_SECONDS,
) -> list[Tool[Any]]:
    """``cron_add``, ``cron_list`` and ``cron_remove`` on ``store``.

    Args:
        store: Where jobs are kept (the scheduler reads the same store).
        on_change: Called after a job is added or removed (pass ``Scheduler.wake``).
        min_every_seconds: The shortest ``every_seconds`` accepted.
    """
    return [
        CronAddTool(store, on_change, min_every_seconds),
        CronListTool(store, on_change, min_every_seconds),
        CronRemoveTool(store, on_change, min_every_seconds),
    ]


__all__ = [
    "MIN_EVERY_SECONDS",
    "CronJob",
    "CronStore",
    "DuePlan",
    "Schedule",
    "ScheduleError",
    "cron_tools",
    "first_run",
    "following_run",
    "format_time",
    "local_zone_name",
    "next_cron_run",
]

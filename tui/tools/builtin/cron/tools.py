"""``cron_add``, ``cron_list``, ``cron_remove``: jobs that run later, scheduled by the model.

A job is a shell command or an agent prompt plus a schedule (``schedule``); jobs are kept
in a ``CronStore`` (``store``) and run by ``tui.agent.scheduler.Scheduler`` while the app
is open. ``cron_add`` judges a command for risk when it is added, because it will later run
unattended.
"""

from __future__ import annotations

import datetime
import sqlite3
import time
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import Field, field_validator, model_validator

from tui.errors import ExecutionFailed, InvalidArguments, NotFound
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.cron.schedule import (
    Schedule,
    ScheduleError,
    format_time,
    load_zone,
    local_zone_name,
    normalize_cron,
    parse_at,
)
from tui.tools.builtin.cron.store import CronJob, CronStore, JobKind
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult

MIN_EVERY_SECONDS = 10.0
"""The shortest ``every_seconds`` interval ``cron_add`` accepts (``cron_tools`` can lower it)."""
MAX_DELAY_SECONDS = 366 * 24 * 3600.0
EXCERPT_CHARS = 120


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
        line = _excerpt(job.last_output)
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


def _excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    """The last non-empty line (where results and errors usually are), cut to ``limit``."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= limit else line[: limit - 1] + "…"

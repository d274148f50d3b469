"""The cron tools and the scheduler on a real SQLite file, running real shell commands."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import itertools
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import Harness
from tests.test_loop import Recorder
from tests.waiting import until
from tui.agent.scheduler import JobOutcome, Scheduler, backend_command_runner
from tui.errors import PermissionDenied
from tui.events import Notice, ScheduledJobFinished
from tui.exec.local import LocalBackend
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.policy import SecurityPolicy
from tui.tools.base import missing_description_sections
from tui.tools.builtin.cron.schedule import (
    Schedule,
    ScheduleError,
    first_run,
    following_run,
    next_cron_run,
)
from tui.tools.builtin.cron.store import CronStore
from tui.tools.builtin.cron.tools import CronAddParams, CronAddTool, cron_tools
from tui.tools.builtin.memory.store import memory_db_path, recall_memories, store_memory
from tui.tools.registry import ToolRegistry

NY = ZoneInfo("America/New_York")
UTC = datetime.UTC
TEST_MIN_EVERY = 0.1


def ts(year: int, month: int, day: int, hour: int, minute: int, tz: datetime.tzinfo = UTC) -> float:
    return datetime.datetime(year, month, day, hour, minute, tzinfo=tz).timestamp()


def iso_utc(moment: float | None) -> str:
    assert moment is not None
    return datetime.datetime.fromtimestamp(moment, UTC).isoformat(timespec="minutes")


def cron_harness(
    workspace: Path,
    store: CronStore,
    *,
    on_change: Callable[[], None] | None = None,
    mode: ApprovalMode = ApprovalMode.FULL_AUTO,
    min_every_seconds: float = TEST_MIN_EVERY,
) -> Harness:
    policy = SecurityPolicy(workspace, approval_mode=mode)
    tools = cron_tools(store, on_change=on_change, min_every_seconds=min_every_seconds)
    backend = LocalBackend(default_cwd=str(workspace))
    return Harness(workspace, policy, ToolRegistry(tools), backend)


class Published(Recorder):
    """The scheduler's publish sink, with a way to wait for the runs it reported."""

    @property
    def finished(self) -> list[ScheduledJobFinished]:
        return [e for e in self.events if isinstance(e, ScheduledJobFinished)]

    async def wait_finished(self, count: int, timeout: float = 10.0) -> list[ScheduledJobFinished]:
        async with asyncio.timeout(timeout):
            while True:
                self._changed.clear()
                if len(self.finished) >= count:
                    return self.finished
                await self._changed.wait()


async def answer_without_a_model(prompt: str) -> JobOutcome:
    """Stands in for an agent turn: no model runs here, the prompt is answered by rote."""
    return JobOutcome(ok=True, output=f"answered: {prompt}")


def make_scheduler(
    store: CronStore,
    workspace: Path,
    published: Published,
    *,
    run_prompt: Callable[[str], Any] = answer_without_a_model,
    owner: str | None = None,
) -> Scheduler:
    backend = LocalBackend(default_cwd=str(workspace))
    return Scheduler(
        store,
        run_command=backend_command_runner(backend, cwd=str(workspace), timeout=20),
        run_prompt=run_prompt,
        publish=published,
        owner=owner,
    )


@contextlib.asynccontextmanager
async def running(*schedulers: Scheduler) -> AsyncIterator[list[asyncio.Task[None]]]:
    tasks = [asyncio.create_task(s.run()) for s in schedulers]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def add(h: Harness, **arguments: Any) -> dict[str, Any]:
    result = await h.call("cron_add", arguments)
    assert not result.is_error, result.text
    return result.details


async def rejected(h: Harness, **arguments: Any) -> str:
    result = await h.call("cron_add", arguments)
    assert result.is_error, result.text
    assert "InvalidArguments" in result.text, result.text
    return result.text


# -- next-run maths --------------------------------------------------------------------------


def test_interval_and_one_shot_maths() -> None:
    every = Schedule(kind="every_seconds", timezone="UTC", seconds=10)
    assert first_run(every, 1000.0) == 1010.0
    assert following_run(every, 1010.0, 1010.0) == 1020.0
    # Nine slots missed while closed: one run now, then back on the original phase.
    assert following_run(every, 1010.0, 1101.5) == 1110.0
    after = Schedule(kind="after_seconds", timezone="UTC", seconds=30)
    assert first_run(after, 1000.0) == 1030.0
    assert following_run(after, 1030.0, 1030.0) is None
    at = Schedule(kind="at", timezone="UTC", at=5000.0)
    assert first_run(at, 1000.0) == 5000.0
    assert following_run(at, 5000.0, 5001.0) is None
    with pytest.raises(ScheduleError, match=r"^at: .* is in the past"):
        first_run(at, 5000.0)


def test_cron_follows_new_york_across_both_dst_transitions() -> None:
    def runs(expression: str, start: float, count: int) -> list[str]:
        schedule = Schedule(kind="cron", timezone="America/New_York", cron=expression)
        found: list[str] = []
        moment: float | None = start
        for _ in range(count):
            assert moment is not None
            moment = next_cron_run(schedule, moment)
            found.append(iso_utc(moment))
        return found

    # Weekdays at 09:00 local: 14:00Z before the spring change, 13:00Z after it.
    friday = ts(2026, 3, 6, 10, 0, tz=NY)
    assert runs("0 9 * * 1-5", friday, 2) == ["2026-03-09T13:00+00:00", "2026-03-10T13:00+00:00"]
    schedule = Schedule(kind="cron", timezone="America/New_York", cron="0 9 * * 1-5")
    assert first_run(schedule, ts(2026, 3, 6, 8, 0, tz=NY)) == ts(2026, 3, 6, 14, 0)
    # 02:30 does not exist on 8 March: it runs when the clock jumps, then at 02:30 again.
    assert runs("30 2 * * *", ts(2026, 3, 7, 12, 0, tz=NY), 2) == [
        "2026-03-08T07:00+00:00",
        "2026-03-09T06:30+00:00",
    ]
    # 01:30 happens twice on 1 November: a fixed-hour job runs once, an hourly one twice.
    assert runs("30 1 * * *", ts(2026, 10, 31, 12, 0, tz=NY), 2) == [
        "2026-11-01T05:30+00:00",
        "2026-11-02T06:30+00:00",
    ]
    assert runs("0 * * * *", ts(2026, 11, 1, 0, 30, tz=NY), 3) == [
        "2026-11-01T05:00+00:00",
        "2026-11-01T06:00+00:00",
        "2026-11-01T07:00+00:00",
    ]
    # A catch-up after a closed night: the next slot after now, not the missed ones.
    daily = Schedule(kind="cron", timezone="America/New_York", cron="0 3 * * *")
    missed = ts(2026, 3, 1, 8, 0)
    assert iso_utc(following_run(daily, missed, ts(2026, 3, 5, 12, 0))) == "2026-03-06T08:00+00:00"


# -- cron_add validation and contract --------------------------------------------------------


async def test_bad_schedules_are_rejected_naming_the_field(workspace: Path) -> None:
    h = cron_harness(workspace, CronStore())
    text = await rejected(h, command="true", cron="61 * * * *")
    assert "cron:" in text and "0 9 * * 1-5" in text
    text = await rejected(h, command="true", cron="0 9 * *")
    assert "cron:" in text and "not 5" in text
    text = await rejected(h, command="true", cron="0 9 * * *", timezone="Mars/Olympus_Mons")
    assert "timezone:" in text and "America/New_York" in text
    text = await rejected(h, command="true", at="2001-01-01T09:00", timezone="UTC")
    assert "at:" in text and "in the past" in text
    text = await rejected(h, command="true", at="next tuesday")
    assert "at:" in text and "ISO-8601" in text
    text = await rejected(h, command="true", every_seconds=60, timezone="UTC")
    assert "timezone: applies to cron and at only" in text
    text = await rejected(h, command="true", cron="* * * * *", after_seconds=5)
    assert "exactly one schedule" in text and "cron, after_seconds" in text
    text = await rejected(h, command="true")
    assert "exactly one schedule" in text and "got none" in text
    assert (await h.call("cron_list")).details["count"] == 0


async def test_a_job_is_a_command_or_a_prompt_not_both(workspace: Path) -> None:
    h = cron_harness(workspace, CronStore())
    both = await rejected(h, command="true", prompt="hello", after_seconds=60)
    neither = await rejected(h, name="nothing", after_seconds=60)
    for text in (both, neither):
        assert "exactly one of command" in text and "prompt" in text
    assert "unknown argument" in await rejected(h, command="true", after_seconds=9, cmd="x")


async def test_every_seconds_minimum_is_the_tools_argument(workspace: Path) -> None:
    production = cron_harness(workspace, CronStore(), min_every_seconds=10)
    text = await rejected(production, command="true", every_seconds=5)
    assert "every_seconds: 5 is below the minimum of 10 s" in text
    assert (await production.call("cron_add", {"command": "true", "every_seconds": 10})).details
    fast = cron_harness(workspace, CronStore())
    await add(fast, command="true", every_seconds=0.5)


async def test_cron_add_returns_id_and_next_run_in_local_and_utc(workspace: Path) -> None:
    h = cron_harness(workspace, CronStore())
    details = await add(h, prompt="summarise CI", cron="0 9 * * 1-5", timezone="America/New_York")
    expected = next_cron_run(
        Schedule(kind="cron", timezone="America/New_York", cron="0 9 * * 1-5"), time.time()
    )
    assert details["next_run"] == expected
    local = datetime.datetime.fromisoformat(details["next_run_local"])
    assert (local.hour, local.minute) == (9, 0) and local.utcoffset() in (
        datetime.timedelta(hours=-4),
        datetime.timedelta(hours=-5),
    )
    assert details["next_run_utc"].endswith("+00:00")
    at = await add(h, command="date", at="2030-01-15T09:30", timezone="Asia/Tokyo", name="tokyo")
    assert at["next_run"] == ts(2030, 1, 15, 0, 30)
    assert at["next_run_local"] == "2030-01-15T09:30:00+09:00"
    assert at["next_run_utc"] == "2030-01-15T00:30:00+00:00"
    listing = (await h.call("cron_list")).text
    assert f"{at['id']} (tokyo) [scheduled] command: `date`" in listing
    assert "2030-01-15T09:30:00+09:00 (Asia/Tokyo) = 2030-01-15T00:30:00Z" in listing
    assert 'cron "0 9 * * 1-5" in America/New_York' in listing
    assert "never run" in listing


async def test_access_judges_the_command_when_it_is_scheduled(workspace: Path) -> None:
    store = CronStore()
    tool = cron_tools(store)[0]
    assert isinstance(tool, CronAddTool)
    policy = SecurityPolicy(workspace, approval_mode=ApprovalMode.FULL_AUTO)

    def needed(**arguments: Any) -> PermissionMode:
        params = tool.parse_params({"every_seconds": 60, **arguments})
        assert isinstance(params, CronAddParams)
        access = tool.access(params)
        return policy.precheck("cron_add", access)[0]

    assert needed(command="ls") is PermissionMode.WORKSPACE_WRITE
    assert needed(command="sudo systemctl restart nginx") is PermissionMode.DANGER_FULL_ACCESS
    with pytest.raises(PermissionDenied, match="command_denylist"):
        needed(command="rm -rf ~")
    assert needed(prompt="tidy the notes") is PermissionMode.WORKSPACE_WRITE
    assert tool.access(tool.parse_params({"command": "ls", "after_seconds": 5})).command == "ls"  # type: ignore[arg-type]

    read_only = cron_harness(workspace, store, mode=ApprovalMode.READ_ONLY)
    refused = await read_only.call("cron_add", {"prompt": "x", "after_seconds": 60})
    assert refused.is_error and "PermissionDenied" in refused.text
    assert not (await read_only.call("cron_list")).is_error


async def test_jobs_persist_across_a_reopened_store_beside_the_memory_tables(
    workspace: Path,
) -> None:
    first = cron_harness(workspace, CronStore())
    details = await add(first, command="echo kept", cron="15 4 * * *", name="kept")
    store_memory(memory_db_path(), "note", "the memory tables share the file")
    reopened = CronStore()
    assert reopened.path == memory_db_path()
    jobs = await reopened.jobs()
    assert [(j.id, j.name, j.next_run, j.payload) for j in jobs] == [
        (details["id"], "kept", details["next_run"], "echo kept")
    ]
    assert recall_memories(memory_db_path(), "share")[0][0] == "note"
    listing = (await cron_harness(workspace, reopened).call("cron_list")).text
    assert details["id"] in listing


async def test_remove_unknown_id_lists_the_existing_ones(workspace: Path) -> None:
    changes: list[str] = []
    h = cron_harness(workspace, CronStore(), on_change=lambda: changes.append("x"))
    kept = await add(h, command="true", every_seconds=60, name="keeper")
    missing = await h.call("cron_remove", {"id": "nope"})
    assert missing.is_error and "NotFound" in missing.text
    assert f"{kept['id']} (keeper)" in missing.text
    removed = await h.call("cron_remove", {"id": kept["id"]})
    assert not removed.is_error and "Removed job" in removed.text
    assert changes == ["x", "x"]  # after add and after remove, not after the failed remove
    assert (await h.call("cron_list")).text == "No scheduled jobs."


# -- the scheduler ---------------------------------------------------------------------------


async def test_one_shot_runs_once_then_is_listed_done(workspace: Path) -> None:
    store, published = CronStore(), Published()
    scheduler = make_scheduler(store, workspace, published)
    h = cron_harness(workspace, store, on_change=scheduler.wake)
    marker = workspace / "ran.txt"
    async with running(scheduler):
        # The scheduler starts with nothing to do, so only wake() can get this job run soon.
        await until(lambda: scheduler.next_wake_at is None)
        job = await add(h, command=f"echo ran | tee -a {marker}", after_seconds=0.3, name="once")
        (event,) = await published.wait_finished(1)
        await until(lambda: not scheduler.running_jobs and scheduler.next_wake_at is None)
    assert (event.job_id, event.name, event.job_kind, event.ok) == (
        job["id"],
        "once",
        "command",
        True,
    )
    assert event.next_run is None and "exit code: 0" in event.output
    assert marker.read_text() == "ran\n"
    (stored,) = await store.jobs()
    assert stored.done and stored.runs == 1 and stored.last_ok is True
    assert stored.lease_owner is None
    listing = (await h.call("cron_list")).text
    assert "[done (one-shot, has run)]" in listing and "last result: ok — ran" in listing


async def test_overdue_jobs_run_once_at_start_up(workspace: Path) -> None:
    store, published = CronStore(), Published()
    now = time.time()
    log = workspace / "catchup.txt"
    every = Schedule(kind="every_seconds", timezone="UTC", seconds=10)
    interval = await store.add("command", f"echo tick >> {log}", every, now=now - 95)
    minutely = Schedule(kind="cron", timezone="America/New_York", cron="* * * * *")
    cron = await store.add("prompt", "report", minutely, name="minutely", now=now - 3600)
    assert interval.next_run is not None and cron.next_run is not None
    assert interval.next_run < now - 80 and cron.next_run < now - 3500

    scheduler = make_scheduler(store, workspace, published)
    async with running(scheduler):
        events = await published.wait_finished(2)
        await until(lambda: not scheduler.running_jobs)
        jobs = {job.id: job for job in await store.jobs()}
    assert sorted(e.job_id for e in events) == sorted([interval.id, cron.id])
    assert log.read_text() == "tick\n"
    assert jobs[cron.id].last_output == "answered: report"
    for job in jobs.values():
        assert job.runs == 1 and job.next_run is not None and job.next_run > now
    # The interval keeps its phase; the cron job's next slot is the coming minute.
    moved = jobs[interval.id].next_run
    assert moved is not None and (moved - interval.next_run) % 10 == pytest.approx(0, abs=1e-6)
    assert moved - now <= 10.5
    cron_next = jobs[cron.id].next_run
    assert cron_next is not None and cron_next % 60 == 0 and cron_next - now <= 61


async def test_two_schedulers_on_one_database_run_each_job_once(workspace: Path) -> None:
    path = memory_db_path()
    first_store, second_store = CronStore(path), CronStore(path)
    published = Published()
    log = workspace / "shared.txt"
    due = time.time() + 0.4
    for i in range(8):
        job = Schedule(kind="at", timezone="UTC", at=due)
        await first_store.add("command", f"echo job{i} >> {log}", job, now=time.time())
    left = make_scheduler(first_store, workspace, published, owner="left")
    right = make_scheduler(second_store, workspace, published, owner="right")
    async with running(left, right):
        await published.wait_finished(8)
        await until(
            lambda: (
                not left.running_jobs
                and not right.running_jobs
                and left.next_wake_at is None
                and right.next_wake_at is None
            )
        )
    assert len(published.finished) == 8
    assert sorted(log.read_text().split()) == [f"job{i}" for i in range(8)]
    assert all(job.runs == 1 and job.done for job in await second_store.jobs())


async def test_the_claim_is_a_compare_and_swap(workspace: Path) -> None:
    path = memory_db_path()
    a, b = CronStore(path), CronStore(path)
    now = time.time()
    every = Schedule(kind="every_seconds", timezone="UTC", seconds=10)
    job = await a.add("command", "true", every, now=now - 20)
    (seen_by_a,) = (await a.plan(now)).due
    (seen_by_b,) = (await b.plan(now)).due
    won = await a.claim(seen_by_a, now=now, owner="a", lease_seconds=60)
    lost = await b.claim(seen_by_b, now=now, owner="b", lease_seconds=60)
    assert won is not None and lost is None
    assert won.next_run == job.next_run + 20  # type: ignore[operator]
    # While a's lease lives, b does not even see the job as due, even when its time comes.
    assert (await b.plan(now + 30)).due == []
    assert (await b.plan(now + 30)).wake_at == now + 60
    # A lease nobody renews (its process died) runs out, and the job can be claimed again.
    (stale,) = (await b.plan(now + 61)).due
    assert await b.claim(stale, now=now + 61, owner="b", lease_seconds=60) is not None
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT lease_owner FROM cron_jobs").fetchone()[0] == "b"


async def test_failing_jobs_are_recorded_and_the_scheduler_keeps_going(workspace: Path) -> None:
    store, published = CronStore(), Published()

    async def broken_agent(prompt: str) -> JobOutcome:
        raise RuntimeError("the model is unreachable")

    scheduler = make_scheduler(store, workspace, published, run_prompt=broken_agent)
    h = cron_harness(workspace, store, on_change=scheduler.wake)
    async with running(scheduler):
        bad_cmd = await add(h, command="echo boom >&2; exit 3", after_seconds=0.2)
        bad_prompt = await add(h, prompt="check the build", after_seconds=0.2)
        good = await add(h, command="echo fine", after_seconds=0.5)
        events = {e.job_id: e for e in await published.wait_finished(3)}
    assert events[bad_cmd["id"]].ok is False and "exit code: 3" in events[bad_cmd["id"]].output
    assert events[bad_prompt["id"]].ok is False
    assert events[bad_prompt["id"]].output == "RuntimeError: the model is unreachable"
    assert events[good["id"]].ok is True
    jobs = {job.id: job for job in await store.jobs()}
    assert jobs[bad_cmd["id"]].last_ok is False and "boom" in (
        jobs[bad_cmd["id"]].last_output or ""
    )
    listing = (await h.call("cron_list")).text
    assert "last result: failed — RuntimeError: the model is unreachable" in listing
    assert "last result: failed — boom" in listing
    assert "last result: ok — fine" in listing


async def test_prompt_job_with_a_plain_async_function_instead_of_an_agent(
    workspace: Path,
) -> None:
    store, published = CronStore(), Published()
    scheduler = make_scheduler(store, workspace, published)
    h = cron_harness(workspace, store, on_change=scheduler.wake)
    async with running(scheduler):
        job = await add(h, prompt="water the plants", every_seconds=0.3, name="plants")
        first, second = await published.wait_finished(2)
    for event in (first, second):
        assert (event.job_id, event.job_kind, event.ok) == (job["id"], "prompt", True)
        assert event.output == "answered: water the plants"
    assert first.next_run is not None and second.next_run is not None
    # The interval keeps its phase (a slow machine may skip a slot, never drift).
    slots = (second.next_run - first.next_run) / 0.3
    assert round(slots) >= 1 and slots == pytest.approx(round(slots), abs=1e-6)


async def test_a_slow_job_delays_nobody_and_cancel_kills_it(workspace: Path) -> None:
    store, published = CronStore(), Published()
    scheduler = make_scheduler(store, workspace, published)
    h = cron_harness(workspace, store, on_change=scheduler.wake)
    pid_file = workspace / "slow.pid"
    async with running(scheduler) as (task,):
        slow = await add(h, command=f"echo $$ > {pid_file}; exec sleep 30", after_seconds=0.1)
        fast = await add(h, command="echo fast", after_seconds=0.4)
        (event,) = await published.wait_finished(1)
        assert event.job_id == fast["id"] and event.ok
        assert scheduler.running_jobs == {slow["id"]}
        await until(lambda: pid_file.is_file() and pid_file.read_text().strip() != "")
        pid = int(pid_file.read_text())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert scheduler.running_jobs == frozenset()

    def gone() -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        return state == "Z"

    await until(gone)
    (stored,) = [job for job in await store.jobs() if job.id == slow["id"]]
    assert stored.last_ok is False and "cancelled" in (stored.last_output or "")
    assert stored.lease_owner is None and stored.done
    assert len(published.finished) == 1


async def test_one_job_never_runs_twice_at_once(workspace: Path) -> None:
    store, published = CronStore(), Published()
    log = workspace / "overlap.txt"
    every = Schedule(kind="every_seconds", timezone="UTC", seconds=0.1)
    command = f"echo start >> {log}; sleep 0.4; echo end >> {log}"
    await store.add("command", command, every, now=time.time())
    scheduler = make_scheduler(store, workspace, published)
    async with running(scheduler):
        await published.wait_finished(2)
    lines = log.read_text().split()
    # Four slots passed during each run; each run is followed by one catch-up run, not four.
    assert lines[:4] == ["start", "end", "start", "end"]
    assert all(pair != ("start", "start") for pair in itertools.pairwise(lines))


async def test_remove_wakes_the_scheduler(workspace: Path) -> None:
    store, published = CronStore(), Published()
    scheduler = make_scheduler(store, workspace, published)
    h = cron_harness(workspace, store, on_change=scheduler.wake)
    async with running(scheduler):
        await until(lambda: scheduler.next_wake_at is None)
        job = await add(h, command="echo later", after_seconds=20)
        await until(lambda: scheduler.next_wake_at == job["next_run"])
        assert not (await h.call("cron_remove", {"id": job["id"]})).is_error
        # Without the wake it would sleep on until the removed job's time (or a minute).
        await until(lambda: scheduler.next_wake_at is None, timeout=3)
    assert published.events == []


async def test_an_unreadable_database_is_reported_once_and_the_runner_lives_on(
    workspace: Path, tmp_path: Path
) -> None:
    not_a_file = tmp_path / "cron.sqlite3"
    not_a_file.mkdir()
    published = Published()
    scheduler = make_scheduler(CronStore(not_a_file), workspace, published)
    async with running(scheduler) as (task,):
        await until(lambda: bool(published.events))
        for _ in range(2):  # two more looks, each seen as a fresh plan
            scheduler.next_wake_at = None
            scheduler.wake()
            await until(lambda: scheduler.next_wake_at is not None)
        assert not task.done()
    (notice,) = published.events
    assert isinstance(notice, Notice) and "cannot use the cron database" in notice.message


def test_descriptions_have_the_four_sections_and_every_field_is_described() -> None:
    for tool in cron_tools(CronStore()):
        assert missing_description_sections(tool.description) == [], tool.name
        for name, field in tool.Params.model_fields.items():
            assert field.description, f"{tool.name}.{name} has no description"

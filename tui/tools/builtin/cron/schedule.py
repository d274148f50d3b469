"""When a cron job runs: schedules, time zones, and the next run after any moment.

A schedule is a cron expression in a time zone, a one-shot time, a one-shot delay, or a fixed
interval. Cron fields are read in the job's IANA zone (never a fixed offset, so 09:00 stays
09:00 across DST), and missed slots are never replayed: the next run is the first slot after
now. Everything here is pure computation; the store and the tools build on it.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

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


class ScheduleError(ValueError):
    """A schedule that cannot work; the message names the field and shows an example."""


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
    from croniter import croniter  # type: ignore[import-untyped]  # ~15 ms: cron runs only

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
    from croniter import croniter

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

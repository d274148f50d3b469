"""Durations as models write them: ``"500ms"``, ``"2s"``, ``"1m"``, ``"1h"``, ``"1d"``, or seconds.

One parser for every tool that waits (``run_shell`` ``wait``, the tmux tools' ``delay``), so a
form accepted by one is accepted by all, as in Buddy, whose tools share one delay parser.
"""

from __future__ import annotations

import math
import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")
_UNIT_SECONDS: dict[str, float] = {"ms": 0.001, "msec": 0.001, "millis": 0.001}
_UNIT_SECONDS.update(dict.fromkeys(("", "s", "sec", "secs", "second", "seconds"), 1.0))
_UNIT_SECONDS.update(dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60.0))
_UNIT_SECONDS.update(dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600.0))
_UNIT_SECONDS.update(dict.fromkeys(("d", "day", "days"), 86400.0))
FORMS = '"500ms", "2s", "1m", "1h", "1d" or a number of seconds'


def parse_duration(value: object, *, what: str, maximum: float, allow_zero: bool = True) -> float:
    """Seconds for ``value``; ValueError naming ``what`` and the accepted forms otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a duration ({FORMS}), not {value}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        match = _DURATION.match(value.strip().lower())
        if match is None or match.group(2) not in _UNIT_SECONDS:
            raise ValueError(f"{what} must be a duration ({FORMS}), not {value!r}")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise ValueError(f"{what} must be a duration ({FORMS})")
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{what} must be {'at least' if allow_zero else 'more than'} 0 seconds")
    if seconds > maximum:
        raise ValueError(f"{what} must be at most {maximum:g} seconds")
    return seconds

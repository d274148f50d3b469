"""When a key was typed, which is not when the app got round to it."""

from __future__ import annotations

from textual import events


def typed_at(event: events.Key, now: float) -> float:
    """When ``event`` was typed, on the clock that reads ``now``.

    A key is stamped when the terminal's bytes are read; a busy app may handle it much
    later, with keys typed meanwhile right behind it. What counts is when it was typed: a
    key typed before the question was on screen never answers it, however late it is
    handled.
    """
    from textual._time import get_time

    return now - max(0.0, get_time() - event.time)

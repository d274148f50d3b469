"""Waiting on state that sends no notification (a file appearing, ``/proc``, a tmux screen, a
widget's text): poll a condition against a deadline, never a fixed sleep.

One helper for every test, so each wait fails the same way: with what it waited for and for
how long, and never by hanging until pytest's own timeout. Where something does notify (an
``asyncio.Event``, a bus), wait on that instead.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")

DEADLINE = 10.0
"""Seconds a wait may take by default: generous for a loaded 2-core machine, short enough
that a wait which can never end fails long before pytest's own timeout."""

EVERY = 0.02
"""Seconds between two looks: short next to anything a test waits for, long enough not to
steal the processor from what it waits on."""


@overload
async def until(
    check: Callable[[], Awaitable[T]],
    what: str,
    *,
    timeout: float = ...,
    every: float = ...,
    nap: Callable[[float], Awaitable[object]] = ...,
) -> T: ...


@overload
async def until(
    check: Callable[[], T],
    what: str,
    *,
    timeout: float = ...,
    every: float = ...,
    nap: Callable[[float], Awaitable[object]] = ...,
) -> T: ...


async def until(
    check: Callable[[], object],
    what: str,
    *,
    timeout: float = DEADLINE,
    every: float = EVERY,
    nap: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> object:
    """The first truthy value of ``check()`` (awaited when it is a coroutine), looking every
    ``every`` seconds; an ``AssertionError`` naming ``what`` once ``timeout`` has passed.

    ``nap`` is how to pass the time between looks: ``asyncio.sleep``, or a Textual pilot's
    ``pause`` so the app under test gets to redraw."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await nap(every)


def until_blocking(
    check: Callable[[], T], what: str, *, timeout: float = DEADLINE, every: float = EVERY
) -> T:
    """``until`` for a test with no event loop (a CLI run as a child process, a terminal
    driven through tmux): the same deadline and message, the thread sleeps between looks."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)

"""Waiting on state that sends no notification (a file appearing, ``/proc``, a tmux screen, a
widget's text): poll a condition against a deadline, never a fixed sleep.

One helper for every test, so each wait fails the same way: with what it waited for, for how
long, and what it last saw, never by hanging until pytest's own timeout. Where something does
notify (an ``asyncio.Event``, a bus), wait on that instead.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, TypeVar, overload

T = TypeVar("T")
Falsy = None | Literal[False]
"""What a check returns while the wait goes on: the value returned at last is never this."""

DEADLINE = 5.0
"""Seconds a wait may take unless the test says otherwise. Where a test's wait is itself the
promise ("the process is gone within 5 s"), the timeout it passes is part of what it checks."""

EVERY = 0.02
"""Seconds between two looks: short next to anything a test waits for, long enough not to
steal the processor from what it waits on."""


def _timed_out(what: str, timeout: float, detail: Callable[[], object] | None) -> AssertionError:
    seen = f"; last seen: {detail()}" if detail is not None else ""
    return AssertionError(f"timed out after {timeout:g} s waiting for {what}{seen}")


OWN_CODE = f"{os.sep}tui{os.sep}"


def _where_tasks_wait() -> str:
    """Where each of this loop's tasks that runs agent-tui's code is suspended (its innermost
    frame in ``tui/``, and the innermost of all): a wait that timed out under load is
    understood from this, not from its message alone."""
    lines = []
    for task in asyncio.all_tasks():
        if task is asyncio.current_task():
            continue
        frames = task.get_stack()
        own = [frame for frame in frames if OWN_CODE in frame.f_code.co_filename]
        if not own:
            continue
        where = [own[-1], *([frames[-1]] if frames[-1] is not own[-1] else [])]
        said = " -> ".join(
            f"{Path(f.f_code.co_filename).name}:{f.f_lineno} {f.f_code.co_name}" for f in where
        )
        lines.append(f"  {task.get_name()}: {said}")
    return "\ntasks waiting in agent-tui's code:\n" + "\n".join(sorted(lines)[:40]) if lines else ""


@overload
async def until(
    check: Callable[[], Awaitable[T | Falsy]],
    what: str = ...,
    timeout: float = ...,
    *,
    every: float = ...,
    nap: Callable[[float], Awaitable[object]] = ...,
    detail: Callable[[], object] | None = ...,
) -> T: ...


@overload
async def until(
    check: Callable[[], T | Falsy],
    what: str = ...,
    timeout: float = ...,
    *,
    every: float = ...,
    nap: Callable[[float], Awaitable[object]] = ...,
    detail: Callable[[], object] | None = ...,
) -> T: ...


async def until(
    check: Callable[[], object],
    what: str = "the condition",
    timeout: float = DEADLINE,
    *,
    every: float = EVERY,
    nap: Callable[[float], Awaitable[object]] = asyncio.sleep,
    detail: Callable[[], object] | None = None,
) -> object:
    """The first truthy value of ``check()`` (awaited when it is a coroutine), looking every
    ``every`` seconds; an ``AssertionError`` naming ``what`` (and ``detail()``, what was last
    seen) once ``timeout`` has passed.

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
            failed = _timed_out(what, timeout, detail)
            raise AssertionError(f"{failed}{_where_tasks_wait()}")
        await nap(every)


def until_blocking(
    check: Callable[[], T | Falsy],
    what: str = "the condition",
    timeout: float = DEADLINE,
    *,
    every: float = EVERY,
    detail: Callable[[], object] | None = None,
) -> T:
    """``until`` for a test with no event loop (a CLI run as a child process, a terminal
    driven through tmux): the same deadline and message; the thread sleeps between looks."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise _timed_out(what, timeout, detail)
        time.sleep(every)

"""The sleep tool: waits as asked, stops promptly on cancel."""

from __future__ import annotations

import asyncio
import time

from tests.conftest import Harness


async def test_sleeps_about_the_time_asked(harness: Harness) -> None:
    start = time.monotonic()
    result = await harness.call("sleep", {"seconds": 0.2})
    elapsed = time.monotonic() - start
    assert not result.is_error, result.text
    assert 0.2 <= elapsed < 5
    assert result.text.startswith("Slept")


async def test_cancel_returns_promptly(harness: Harness) -> None:
    ctx = harness.context("sleep")
    start = time.monotonic()
    task = asyncio.create_task(harness.call("sleep", {"seconds": 60}, ctx))
    await asyncio.sleep(0.1)
    ctx.cancel.set()
    result = await asyncio.wait_for(task, 5)
    assert time.monotonic() - start < 5
    assert result.is_error and "Cancelled" in result.text
    assert "cancelled after" in result.text


async def test_bounds_are_checked(harness: Harness) -> None:
    for seconds in (0, -1, 3601):
        result = await harness.call("sleep", {"seconds": seconds})
        assert result.is_error and "InvalidArguments" in result.text

from __future__ import annotations

import asyncio

from tui.bus import EventBus
from tui.events import Notice, ToolCallCompleted, ToolOutputChunk, parse_event


def chunk(i: int) -> ToolOutputChunk:
    return ToolOutputChunk(tool_call_id="c", tool_name="run_shell", stream="stdout", text=str(i))


async def test_every_subscriber_gets_every_event_in_order() -> None:
    bus = EventBus()
    first, second = bus.subscribe("a"), bus.subscribe("b")
    for i in range(5):
        bus.publish(chunk(i))
    bus.close()
    assert [e.text async for e in first] == ["0", "1", "2", "3", "4"]  # type: ignore[attr-defined]
    assert [e.text async for e in second] == ["0", "1", "2", "3", "4"]  # type: ignore[attr-defined]


async def test_a_stalled_subscriber_never_blocks_the_publisher() -> None:
    bus = EventBus()
    stalled = bus.subscribe("stalled", maxsize=100)
    done = ToolCallCompleted(
        tool_call_id="c", tool_name="run_shell", is_error=False, duration_ms=1.0
    )
    # Publishing is synchronous: if it could block, this loop would never finish.
    for i in range(10_000):
        bus.publish(chunk(i))
        if i == 5:
            bus.publish(done)
    assert stalled.pending() == 100
    assert stalled.dropped == 10_000 + 1 - 100
    items = [stalled.get_nowait() for _ in range(100)]
    # The state event survived the overflow; the oldest chunks were the ones dropped.
    assert done in items
    assert items[-1].text == "9999"  # type: ignore[union-attr]


async def test_state_events_are_never_dropped_even_past_the_bound() -> None:
    bus = EventBus()
    sub = bus.subscribe(maxsize=3)
    notices = [Notice(message=str(i)) for i in range(10)]
    for notice in notices:
        bus.publish(notice)
    assert sub.pending() == 10 and sub.dropped == 0


async def test_waiting_subscriber_wakes_on_publish() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    getter = asyncio.create_task(sub.get())
    await asyncio.sleep(0)
    assert not getter.done()
    event = chunk(1)
    bus.publish(event)
    assert (await asyncio.wait_for(getter, 1)) is event


def test_events_round_trip_through_json() -> None:
    event = ToolCallCompleted(
        tool_call_id="c",
        tool_name="t",
        is_error=True,
        duration_ms=2.5,
        exit_code=3,
        loop_id="child-1",
    )
    assert parse_event(event.model_dump_json()) == event


def test_listeners_see_everything_in_order_and_a_broken_one_is_dropped() -> None:
    bus = EventBus()
    seen: list[str] = []

    def broken(event: object) -> None:
        raise RuntimeError("bad listener")

    bus.add_listener(broken)
    bus.add_listener(lambda event: seen.append(event.text))  # type: ignore[attr-defined]
    for i in range(3):
        bus.publish(chunk(i))
    assert seen == ["0", "1", "2"]

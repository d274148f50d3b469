"""The asyncio pub/sub bus every panel, the transcript and the headless printer read.

Publishing never waits: each subscriber owns a bounded queue. When a subscriber falls behind
and its queue is full, the *oldest* undelivered output chunk is dropped first (a live view can
lose a line of a flood, it says so with a counter); events that carry state (tool started,
completed, approvals, turn ends) are never dropped — the queue grows past its bound for them
rather than lose them. A slow subscriber can therefore never stall the agent loop.

Listeners are the other kind of reader: plain callbacks run inside ``publish``, in order, for
readers that must see every event and are quick (the transcript writer, the headless
printer). A listener that raises is removed and reported, never allowed to break the loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from tui.events import AssistantTextDelta, Event, PaneSnapshot, ToolOutputChunk

DROPPABLE = (ToolOutputChunk, AssistantTextDelta, PaneSnapshot)
Listener = Callable[[Event], None]
log = logging.getLogger(__name__)


@dataclass
class Subscription:
    """One reader's view of the bus: a bounded queue plus how much it lost."""

    name: str
    maxsize: int
    _items: collections.deque[Event] = field(default_factory=collections.deque)
    _wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    dropped: int = 0
    closed: bool = False

    def _offer(self, event: Event) -> None:
        if len(self._items) >= self.maxsize:
            for index, queued in enumerate(self._items):
                if isinstance(queued, DROPPABLE):
                    del self._items[index]
                    self.dropped += 1
                    break
            else:
                if isinstance(event, DROPPABLE):
                    self.dropped += 1
                    return
        self._items.append(event)
        self._wakeup.set()

    def get_nowait(self) -> Event | None:
        return self._items.popleft() if self._items else None

    async def get(self) -> Event | None:
        """Next event, or None once the subscription is closed and drained."""
        while not self._items:
            if self.closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        return self._items.popleft()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        while (event := await self.get()) is not None:
            yield event

    def pending(self) -> int:
        return len(self._items)


class EventBus:
    """Fan-out of events to any number of subscribers, without back-pressure on the publisher."""

    def __init__(self) -> None:
        self._subscriptions: list[Subscription] = []
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def subscribe(self, name: str = "subscriber", *, maxsize: int = 10_000) -> Subscription:
        subscription = Subscription(name=name, maxsize=maxsize)
        self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        subscription.closed = True
        subscription._wakeup.set()
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)

    def publish(self, event: Event) -> None:
        """Deliver to every listener and subscriber now; never blocks, never raises."""
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("bus listener %r failed and was removed", listener)
                self._listeners.remove(listener)
        for subscription in self._subscriptions:
            subscription._offer(event)

    def close(self) -> None:
        for subscription in list(self._subscriptions):
            self.unsubscribe(subscription)

"""The one adapter from the bus to the UI: drain a subscription, post one message per frame.

A flood of output chunks (``seq 1 1000000``) must become a handful of refreshes, not a
million messages. The adapter waits for the first event, gathers for half a frame (so a
call's request, start and first output arrive together), then delivers at most one batch per
frame; while the UI is still busy with the previous batch it keeps collecting instead of
queueing more messages. A quiet bus costs nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.bus import Subscription
    from tui.events import Event

FRAME_SECONDS = 1 / 60
"""At most one batch per frame."""
MAX_BATCH = 20_000
"""A batch never grows beyond this many events, so one frame's work stays bounded."""

Deliver = Callable[[list["Event"], int], None]


class BusAdapter:
    """Moves events from ``subscription`` to ``deliver`` in per-frame batches.

    Args:
        subscription: The app's own bus subscription.
        deliver: Called with ``(events, dropped)``; the app posts a ``BusBatch`` from it.
        frame: Minimum seconds between two deliveries.
        gather: Seconds to wait after the first event of a quiet spell before delivering.
    """

    def __init__(
        self,
        subscription: Subscription,
        deliver: Deliver,
        *,
        frame: float = FRAME_SECONDS,
        gather: float = FRAME_SECONDS / 2,
    ) -> None:
        self.subscription = subscription
        self.deliver = deliver
        self.frame = frame
        self.gather = gather
        self._consumed = asyncio.Event()
        self._consumed.set()
        self.batches = 0
        self.events = 0

    def consumed(self) -> None:
        """The UI finished the last batch: the next one may be sent."""
        self._consumed.set()

    async def run(self) -> None:
        """Deliver until the subscription is closed."""
        last = 0.0
        while True:
            first = await self.subscription.get()
            if first is None:
                return
            # Gather for one frame: a call's request, start and first output then land in
            # one batch (one relayout, not three); and never more than a batch per frame.
            wait = max(last + self.frame - time.monotonic(), self.gather)
            if wait > 0:
                await asyncio.sleep(wait)
            await self._consumed.wait()
            batch = [first]
            while len(batch) < MAX_BATCH:
                event = self.subscription.get_nowait()
                if event is None:
                    break
                batch.append(event)
            self._consumed.clear()
            self.batches += 1
            self.events += len(batch)
            last = time.monotonic()
            self.deliver(batch, self.subscription.dropped)

"""The agent's pane takes the size of the box that shows it.

A pane bigger than the mirror shows a corner of ``top`` or ``vim``; a smaller one wastes the
box. So whenever the box changes size (the terminal was resized, a panel hidden, the mirror
zoomed) or another pane comes into view, the pane is resized to the box's inner size. Bursts
of resizes (a window dragged wider) are debounced into one ``resize_pane`` per pane, and a
size tmux could not give (a pane sharing its window) is asked for once, not in a loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

Resize = Callable[[str, int, int], Awaitable[None]]
"""``resize_pane(pane_id, columns, rows)``, the backend's."""

MIN_COLUMNS = 20
MIN_ROWS = 5


class PaneSizeFollower:
    """Resizes the followed pane to the size asked for last, ``delay`` seconds after it.

    Args:
        resize: The backend's ``resize_pane``.
        on_resized: Called after each resize (the mirror takes a fresh frame).
        on_error: Told when a resize fails (the app says so, once).
        delay: Debounce, in seconds.
    """

    def __init__(
        self,
        resize: Resize,
        *,
        on_resized: Callable[[str], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        delay: float = 0.1,
    ) -> None:
        self.resize = resize
        self.on_resized = on_resized
        self.on_error = on_error
        self.delay = delay
        self.applied: dict[str, tuple[int, int]] = {}
        """The size last given to each pane."""
        self._wanted: tuple[str, int, int] | None = None
        self._task: asyncio.Task[None] | None = None

    def request(self, pane_id: str, columns: int, rows: int) -> None:
        """Ask for ``pane_id`` at ``columns`` x ``rows`` (never below 20x5); debounced."""
        if columns <= 0 or rows <= 0:
            return  # the box is hidden: leave the pane as it is
        size = (max(MIN_COLUMNS, columns), max(MIN_ROWS, rows))
        if self._task is None and self.applied.get(pane_id) == size:
            return
        self._wanted = (pane_id, *size)
        if self._task is not None:
            self._task.cancel()
        self._task = asyncio.get_running_loop().create_task(self._later())

    async def _later(self) -> None:
        await asyncio.sleep(self.delay)
        wanted, self._wanted = self._wanted, None
        self._task = None
        if wanted is None:
            return
        pane_id, columns, rows = wanted
        if self.applied.get(pane_id) == (columns, rows):
            return
        self.applied[pane_id] = (columns, rows)
        try:
            await self.resize(pane_id, columns, rows)
        except Exception as error:
            if self.on_error is not None:
                self.on_error(error)
            return
        if self.on_resized is not None:
            self.on_resized(pane_id)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

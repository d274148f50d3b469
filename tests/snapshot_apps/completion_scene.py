"""The completion popup scene: ``/m`` typed into the prompt, the matching commands offered."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from textual.pilot import Pilot

if TYPE_CHECKING:
    from tui.ui.app import AgentApp


def completion_scene(
    make_app: Callable[[], AgentApp], settle: Callable[[Pilot[int]], Awaitable[None]]
) -> tuple[Callable[[], AgentApp], Callable[[Pilot[int]], Awaitable[None]]]:
    async def play(pilot: Pilot[int]) -> None:
        app: AgentApp = pilot.app  # type: ignore[assignment]
        app.prompt.focus()
        await pilot.press("/", "m")
        deadline = time.monotonic() + 5
        while not (app.prompt.popup.is_open and app.prompt.popup.word is not None):
            if time.monotonic() > deadline:
                raise AssertionError("the completion popup did not open")
            await pilot.pause(0.02)
        await settle(pilot)

    return make_app, play

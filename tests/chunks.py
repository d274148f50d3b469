"""A chunk sink for backend tests: records every chunk and signals when a marker shows up."""

from __future__ import annotations

import asyncio

from tui.exec.backend import StreamName

DEADLINE = 20.0
"""Generous upper bound for anything that should happen 'soon' on a loaded CI machine."""


class Recorder:
    """A chunk sink that remembers everything and can signal when a marker shows up."""

    def __init__(self) -> None:
        self.chunks: list[tuple[StreamName, str]] = []
        self._markers: dict[str, asyncio.Event] = {}

    def __call__(self, stream: StreamName, text: str) -> None:
        self.chunks.append((stream, text))
        seen = self.text("stdout")
        for marker, event in self._markers.items():
            if marker in seen:
                event.set()

    def marker(self, marker: str) -> asyncio.Event:
        """An event set as soon as ``marker`` has appeared on stdout."""
        return self._markers.setdefault(marker, asyncio.Event())

    def text(self, stream: StreamName) -> str:
        return "".join(text for name, text in self.chunks if name == stream)

    def first_line(self) -> str:
        return self.text("stdout").split("\n", 1)[0]


async def wait_for(event: asyncio.Event, deadline: float = DEADLINE) -> None:
    await asyncio.wait_for(event.wait(), deadline)

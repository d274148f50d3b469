"""A chunk sink for backend tests: records every chunk and signals when a marker shows up."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tui.exec.backend import ExecutionBackend, StreamName

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


# -- contract checks every command backend must pass ------------------------------------------


async def check_streams_before_the_end(backend: ExecutionBackend, flag_dir: Path) -> None:
    """Output reaches the sink while the command still runs (it waits for a flag we set only
    after seeing that output)."""
    flag = flag_dir / "go"
    sink = Recorder()
    ready = sink.marker("ready")
    command = f"echo ready; while [ ! -e '{flag}' ]; do sleep 0.01; done; echo after"
    task = asyncio.create_task(backend.run(command, on_chunk=sink, timeout=DEADLINE))
    await wait_for(ready)
    assert not task.done()
    assert sink.text("stdout") == "ready\n"
    flag.touch()
    result = await task
    assert result.exit_code == 0
    assert result.stdout == "ready\nafter\n"


async def check_split_multibyte_character(backend: ExecutionBackend, flag_dir: Path) -> None:
    """The euro sign's first two bytes arrive, then (only after we saw them) the third: the
    partial character is held back, not mangled."""
    flag = flag_dir / "go"
    sink = Recorder()
    first_part = sink.marker("A")
    command = (
        f"printf 'A\\342\\202'; while [ ! -e '{flag}' ]; do sleep 0.01; done; printf '\\254\\n'"
    )
    task = asyncio.create_task(backend.run(command, on_chunk=sink, timeout=DEADLINE))
    await wait_for(first_part)
    assert sink.text("stdout") == "A"
    flag.touch()
    result = await task
    assert result.stdout == "A€\n"
    assert sink.text("stdout") == "A€\n"

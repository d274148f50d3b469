"""The interpreter process behind ``python_repl``: starting its driver, reading its frames.

``python_repl.py`` decides what a call means (timeouts, restarts, what the model reads); this
module holds the pieces that talk to one running driver: the driver program's text, the frame
reader that separates protocol frames from stray text, the process record, and the bounded
copy of a call's output.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.errors import ExecutionFailed
from tui.exec.backend import BackendError, ExecutionBackend, InteractiveProcess
from tui.exec.tmux_pane import tmux_pane
from tui.tools.context import ToolContext

DRIVER_PATH = Path(__file__).with_name("driver.py")
"""The driver program, shipped as a file in the package and sent to the target as text."""
KEEP_HEAD = 1_000_000
KEEP_TAIL = 100_000
"""Characters of a call's output kept: the first ``KEEP_HEAD`` and the last ``KEEP_TAIL``."""
MAX_STRAY = 64 * 1024
"""Bytes of non-protocol text (a startup error) kept before the first frame."""


@functools.cache
def driver_program() -> str:
    """The driver's source, read once: it runs as ``python3 -u -c <source> <nonce> <dir>``."""
    return DRIVER_PATH.read_text(encoding="utf-8")


class InterpreterGone(Exception):
    """The interpreter's output ended (it exited, crashed or was killed)."""


@dataclass
class KeptText:
    """A bounded copy of a long text: its head, its tail, and how much fell in between."""

    head_limit: int = KEEP_HEAD
    tail_limit: int = KEEP_TAIL
    head: list[str] = field(default_factory=list)
    head_size: int = 0
    tail: list[str] = field(default_factory=list)
    tail_size: int = 0
    dropped: int = 0

    def add(self, text: str) -> None:
        room = self.head_limit - self.head_size
        if room > 0:
            part = text[:room]
            self.head.append(part)
            self.head_size += len(part)
            text = text[room:]
        if not text:
            return
        self.tail.append(text)
        self.tail_size += len(text)
        if self.tail_size > 2 * self.tail_limit:
            joined = "".join(self.tail)
            self.dropped += len(joined) - self.tail_limit
            self.tail = [joined[-self.tail_limit :]]
            self.tail_size = self.tail_limit

    @property
    def total(self) -> int:
        return self.head_size + self.dropped + self.tail_size

    @property
    def omitted(self) -> int:
        """Characters between the kept head and the kept tail."""
        return self.dropped + max(0, self.tail_size - self.tail_limit)

    @property
    def text(self) -> str:
        tail = "".join(self.tail)
        tail = tail[max(0, len(tail) - self.tail_limit) :]
        if not self.omitted:
            return "".join(self.head) + tail
        return (
            "".join(self.head)
            + f"\n[{self.omitted} chars of output not kept: {self.total} in all]\n"
            + tail
        )


class FrameReader:
    """Frames from the driver's stdout; text outside a frame (a startup error) kept aside."""

    def __init__(self, process: InteractiveProcess, nonce: str) -> None:
        self._process = process
        self._head = b"\n@@atui:" + nonce.encode("ascii") + b":"
        self._buffer = bytearray()
        self.stray = bytearray()
        self.eof = False

    async def next(self) -> dict[str, Any]:
        """The next frame. Raises InterpreterGone at the end of the stream."""
        while True:
            frame = self._parse()
            if frame is not None:
                return frame
            if self.eof:
                raise InterpreterGone
            data = await self._process.read()
            if not data:
                self.eof = True
                self._keep_stray(bytes(self._buffer))
                self._buffer.clear()
            else:
                self._buffer += data

    def _parse(self) -> dict[str, Any] | None:
        buffer = self._buffer
        at = buffer.find(self._head)
        if at < 0:
            keep = 0
            for size in range(min(len(buffer), len(self._head) - 1), 0, -1):
                if buffer.endswith(self._head[:size]):
                    keep = size
                    break
            self._keep_stray(bytes(buffer[: len(buffer) - keep]))
            del buffer[: len(buffer) - keep]
            return None
        if at:
            self._keep_stray(bytes(buffer[:at]))
            del buffer[:at]
        start = len(self._head)
        newline = buffer.find(b"\n", start)
        if newline < 0:
            return None
        size = int(buffer[start:newline])
        if len(buffer) < newline + 1 + size:
            return None
        body = bytes(buffer[newline + 1 : newline + 1 + size])
        del buffer[: newline + 1 + size]
        message: dict[str, Any] = json.loads(body)
        return message

    def _keep_stray(self, data: bytes) -> None:
        room = MAX_STRAY - len(self.stray)
        if data and room > 0:
            self.stray += data[:room]

    def stray_text(self) -> str:
        return self.stray.decode("utf-8", "replace").strip()


@dataclass
class Interpreter:
    """One running driver process and what is known about it."""

    process: InteractiveProcess
    reader: FrameReader
    nonce: str
    backend: ExecutionBackend
    pid: int | None = None
    python: str = ""
    executable: str = ""
    calls: int = 0

    async def send(self, request: dict[str, Any]) -> None:
        body = json.dumps(request).encode("utf-8", "surrogatepass")
        try:
            await self.process.write(str(len(body)).encode("ascii") + b"\n" + body)
        except (BackendError, OSError) as exc:
            raise InterpreterGone from exc


@dataclass
class CallOutput:
    """What one call printed, as the model will read it and as the UI saw it."""

    kept: KeptText = field(default_factory=KeptText)
    stderr_chars: int = 0

    def add(self, ctx: ToolContext, stream: str, text: str) -> None:
        self.kept.add(text)
        if stream == "stderr":
            self.stderr_chars += len(text)
            ctx.emit("stderr", text)
        else:
            ctx.emit("stdout", text)


def spawn_host(backend: ExecutionBackend) -> ExecutionBackend:
    """The backend that can start the interpreter: this one, or the host a tmux backend rides."""
    if backend.SUPPORTS_SPAWN:
        return backend
    pane = tmux_pane(backend)
    if pane is not None and pane.host.SUPPORTS_SPAWN:
        return pane.host
    raise ExecutionFailed(
        f"{backend.actor} cannot start a persistent interpreter; run Python with run_shell "
        "instead (python3 -c '…', or a script file)"
    )


async def close_quietly(process: InteractiveProcess) -> None:
    """Close an interpreter process; one already gone is not an error."""
    try:
        await process.close()
    except (BackendError, OSError, TimeoutError):
        pass

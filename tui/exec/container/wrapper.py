"""The tiny ``sh`` wrapper every exec starts with, and the protocol that reads its marker.

Why it exists: killing the local ``ENGINE exec`` client does not stop what it started (the
engine keeps the exec session running). So the wrapper runs first inside the container,
enters the working directory itself (a missing one is then a clear error, not an
engine-specific 126/127), prints its pid on stderr as a marker line (which we strip), and
``exec``s the user's shell in its place. Engines ``setsid`` the process they exec (the
wrapper calls ``setsid`` itself when they did not), so that pid is the process group of
everything the command starts. busybox, dash and bash all understand it. The marker also
tells whose exit status we got: without it the engine failed before anything ran.
"""

from __future__ import annotations

import asyncio

from tui.exec.backend import ChunkSink
from tui.exec.container.engine import first_line
from tui.exec.streams import CommandProtocol

START_LIMIT = 30.0
"""Seconds to wait for the wrapper's marker (the engine starting the exec) before giving up."""

MARKER = b"\x1eagent-tui:"
NO_CWD = b"nocwd"
"""The marker's value when the working directory could not be entered."""
NOT_FOUND = b"notfound"
"""The marker's value when the program to spawn is not in the container."""

DRAIN_STDIN = "trap 'cat >/dev/null 2>&1' EXIT\n"
"""Prepended to ``run_with_stdin`` commands; an EXIT trap keeps the command's exit status."""

# Runs as ``sh -c WRAPPER agent-tui CWD ARGS...``. It enters CWD, makes sure it leads its
# own process group (``setsid`` does not fork when the caller is not a group leader, so the
# pid stays), announces that pid, and execs the real program in its place.
_PRELUDE = r"""d=$1; shift
[ -z "$d" ] || cd -- "$d" 2>/dev/null || { printf '\036agent-tui:nocwd\n' >&2; exit 125; }
r=
if read -r s </proc/$$/stat; then
  s=${s##*) }; s=${s#* }; s=${s#* }; [ "${s%% *}" = "$$" ] || r=setsid
fi 2>/dev/null
"""
_ANNOUNCE = "printf '\\036agent-tui:%s\\n' \"$$\" >&2\n"
RUN_WRAPPER = (
    _PRELUDE
    + _ANNOUNCE
    + r"""if command -v bash >/dev/null 2>&1; then exec $r bash -c "$1"; fi
exec $r sh -c "$1"
"""
)
"""Runs a command line: ``sh -c RUN_WRAPPER agent-tui CWD COMMAND``."""
SPAWN_WRAPPER = (
    _PRELUDE
    + r"""command -v "$1" >/dev/null 2>&1 || { printf '\036agent-tui:notfound\n' >&2; exit 127; }
"""
    + _ANNOUNCE
    + 'exec $r "$@" 2>&1\n'  # stderr joins stdout, in order, as LocalProcess does
)
"""Starts a program: ``sh -c SPAWN_WRAPPER agent-tui CWD ARGV…``."""


class ExecProtocol(CommandProtocol):
    """The shared subprocess protocol, plus the wrapper's marker taken off the front of stderr.

    ``started`` resolves to the in-container process group id, or None when the exec ended
    without one (the engine failed, or the working directory was missing: ``no_cwd``).
    Whatever the engine printed before the marker (warnings, errors) stays on stderr.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, on_chunk: ChunkSink | None, *, raw: bool
    ) -> None:
        super().__init__(loop, on_chunk)
        self.started: asyncio.Future[int | None] = loop.create_future()
        self.no_cwd = False
        self.raw: bytearray | None = bytearray() if raw else None
        self._head = bytearray()

    @property
    def pgid(self) -> int | None:
        return self.started.result() if self.started.done() else None

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2 and not self.started.done():
            data = self._take_marker(data)
        if not data:
            return
        if fd == 1 and self.raw is not None:
            self.raw += data
            return
        super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 2 and not self.started.done():
            self._flush_head()
        super().pipe_connection_lost(fd, exc)

    def process_exited(self) -> None:
        if not self.started.done():
            self._flush_head()
        super().process_exited()

    def _take_marker(self, data: bytes) -> bytes:
        """Buffer stderr up to the marker line; return what follows it (the command's)."""
        self._head += data
        at = self._head.find(MARKER)
        if at < 0:
            return b""
        end = self._head.find(b"\n", at)
        if end < 0:
            return b""
        before, value = bytes(self._head[:at]), bytes(self._head[at + len(MARKER) : end])
        after = bytes(self._head[end + 1 :])
        self._head.clear()
        if before:
            super().pipe_data_received(2, before)
        self.no_cwd = value == NO_CWD
        self.started.set_result(None if self.no_cwd else pgid_from(value))
        return after

    def _flush_head(self) -> None:
        """The exec ended before any marker: what we held back is the engine's message."""
        self.started.set_result(None)
        head, self._head = bytes(self._head), bytearray()
        if head:
            super().pipe_data_received(2, head)


def pgid_from(value: bytes) -> int | None:
    """A process group we may signal: a number above 1 (``kill -1`` would hit everything)."""
    try:
        pgid = int(value)
    except ValueError:
        return None
    return pgid if pgid > 1 else None


async def read_marker(stream: asyncio.StreamReader) -> tuple[bytes | None, str]:
    """Read stderr up to the wrapper's marker: (its value or None; the engine's text)."""
    said: list[str] = []
    while line := await stream.readline():
        at = line.find(MARKER)
        if at >= 0:
            return line[at + len(MARKER) :].strip(), ""
        said.append(line.decode(errors="replace"))
    return None, first_line("".join(said))


__all__ = [
    "DRAIN_STDIN",
    "NOT_FOUND",
    "NO_CWD",
    "RUN_WRAPPER",
    "SPAWN_WRAPPER",
    "START_LIMIT",
    "ExecProtocol",
    "pgid_from",
    "read_marker",
]

"""The asyncssh session behind one remote command: its output, its header, how it ended.

Why it is its own module: everything here runs in asyncssh callbacks and must never block,
so it holds state and nothing else; supervising the run (timeouts, kills, errors) is the
runner's. Output is captured by the same code as in the local backend
(``tui.exec.streams.OutputCollector``), decoded incrementally per stream, so a UTF-8
character split across SSH packets arrives whole.
"""

from __future__ import annotations

import asyncio
import posixpath
import signal
from collections.abc import Callable

import asyncssh

from tui.exec.backend import ChunkSink
from tui.exec.ssh.command_line import HEADER_MARK
from tui.exec.ssh.connection import Link
from tui.exec.streams import OutputCollector, resolve


class CommandSession(OutputCollector, asyncssh.SSHClientSession[bytes]):
    """Collects and streams one command's output; separates its header, exit and close.

    The first stdout line is the command line's header (the process group id, or a cwd
    error) and is never shown. Capture, notices and the live sink are the shared
    ``OutputCollector``'s.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, on_chunk: ChunkSink | None, link: Link
    ) -> None:
        super().__init__(on_chunk)
        self.header: asyncio.Future[str] = loop.create_future()
        self.ended: asyncio.Future[None] = loop.create_future()
        """Exit status or signal received, or the channel closed without one."""
        self.closed: asyncio.Future[None] = loop.create_future()
        self.exit_code: int | None = None
        self.lost: Exception | None = None
        self._head = bytearray()
        self._link = link

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self.emit("stderr", self.stderr.feed(data))
            return
        if not self.header.done():
            self._head += data
            data = self._take_header()
        if data:
            self.emit("stdout", self.stdout.feed(data))

    def _take_header(self) -> bytes:
        """Consume lines up to the header; lines before it (a chatty ``.bashrc``) are output.

        Returns the bytes after the header, or nothing while it has not arrived.
        """
        while True:
            line, newline, rest = self._head.partition(b"\n")
            if not newline:
                return b""
            self._head = bytearray(rest)
            text = line.decode("utf-8", "replace")
            if text.startswith(HEADER_MARK):
                self._read_header(text[len(HEADER_MARK) :])
                rest_bytes = bytes(self._head)
                self._head.clear()
                return rest_bytes
            self.emit("stdout", self.stdout.feed(bytes(line) + b"\n"))

    def _read_header(self, text: str) -> None:
        """``PGID`` (bash form), ``PGID LOGIN_SHELL`` (portable form) or a cwd error."""
        words = text.split()
        if len(words) == 2 and words[0].isdigit():
            self._link.login_bash = posixpath.basename(words[1]) == "bash"
        self.header.set_result(words[0] if words else "")

    def exit_status_received(self, status: int) -> None:
        self.exit_code = status
        resolve(self.ended)

    def exit_signal_received(
        self, signal_name: str, core_dumped: bool, msg: str, lang: str
    ) -> None:
        try:
            self.exit_code = -signal.Signals[f"SIG{signal_name}"].value
        except KeyError:
            self.exit_code = -1
        resolve(self.ended)

    def eof_received(self) -> bool:
        if self._head:  # output without a header line: show it rather than lose it
            self.emit("stdout", self.stdout.feed(bytes(self._head)))
            self._head.clear()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc
        if not self.header.done():
            self.header.set_result("")
        resolve(self.ended)
        resolve(self.closed)

    @property
    def pgid(self) -> int | None:
        if self.header.done() and self.header.result().isdigit():
            return int(self.header.result())
        return None


def session_factory(session: CommandSession) -> Callable[[], CommandSession]:
    """asyncssh wants a session factory; ours is made before the channel, to keep a handle."""
    return lambda: session


__all__ = ["CommandSession", "session_factory"]

"""A tmux control-mode client (``tmux -C``) over any backend's interactive process.

Why control mode: one long-lived client answers commands in about a millisecond and pushes
pane output (``%output``) the moment tmux reads it, so a command's end is an event rather
than something polled for. All it needs is a byte pipe from ``ExecutionBackend.spawn``,
so the same client works locally, inside a container and over SSH.

The protocol (``tmux(1)``, CONTROL MODE): each command line we write is answered by a block
``%begin TIME NUMBER FLAGS`` … ``%end``/``%error`` with the same number, in the order the
commands were written; FLAGS bit 0 marks a command this client sent (blocks with flags 0
answer the command line that started the client). Outside blocks tmux writes notifications
(``%output %PANE DATA`` with bytes below 32 and ``\\`` as octal ``\\ooo``, ``%exit``,
``%window-close`` …). An empty line detaches the client, so none is ever written.

Control mode parses every line we write like a tmux config line: ``;`` ends a command,
``#`` starts a comment, ``{`` opens a block, ``$`` and ``~`` expand, and an argument that
starts with ``-`` is a flag (``--`` alone is eaten as the end of flags). So the lines that
type into a pane are built here too, and nothing typed is ever parsed on the way:

- a person's typed text goes as bytes (``send-keys -H``): the parser only ever sees hex
  digits, whatever tmux version reads the line;
- text the agent types (``send-keys -l``) and buffer contents (``set-buffer``) are quoted
  with ``quote`` and put behind ``--``, so a leading ``-`` is text, not a flag;
- a command the agent runs is pasted the same way, with ``-r`` (its newlines stay newlines)
  and Enter pressed after it (``command_lines``);
- a paste goes through a buffer and ``paste-buffer -p``: bracketed when the pane's program
  asked for bracketed paste, otherwise typed with each newline as Enter.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tui.exec.backend import BackendError, ExecutionBackend, InteractiveProcess

log = logging.getLogger(__name__)

_OCTAL = re.compile(rb"\\([0-7]{3})")

OutputSink = Callable[[str, bytes], None]
"""Receives ``(pane_id, raw bytes)`` for every ``%output`` notification."""
NotificationSink = Callable[[str, str], None]
"""Receives ``(name, arguments)`` for every other notification, ``("exit", reason)`` last."""


class TmuxCommandError(BackendError):
    """tmux answered a command with ``%error``; ``lines`` is what it said."""

    title = "tmux command failed"

    def __init__(self, command: str, lines: list[str]) -> None:
        self.command = command
        self.lines = lines
        super().__init__(" ".join(lines).strip() or f"{command.split(' ', 1)[0]} failed")


class ControlClosed(BackendError):
    """The control client ended (tmux server gone, session killed, pipe broken)."""

    title = "tmux connection closed"


def unescape_output(data: bytes) -> bytes:
    """``%output`` data back to the pane's bytes: tmux writes ``\\ooo`` for < 32 and ``\\``."""
    if b"\\" not in data:
        return data
    return _OCTAL.sub(lambda match: bytes([int(match.group(1), 8)]), data)


def quote(text: str) -> str:
    """``text`` as one tmux command argument that means exactly ``text``.

    Double quotes with every special character escaped: ``\\``, ``"`` and ``$`` (tmux expands
    variables in double quotes), ``~`` (expanded at the start of an argument), and control
    characters as ``\\ooo`` so a newline never ends the command line.
    """
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '\\"$~':
            out.append("\\" + char)
        elif code < 32 or code == 127:
            out.append(f"\\{code:03o}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


@dataclass
class Reply:
    """One answered command: its output lines and whether tmux said ``%error``."""

    command: str
    lines: list[str]
    error: bool = False

    def check(self) -> list[str]:
        if self.error:
            raise TmuxCommandError(self.command, self.lines)
        return self.lines


@dataclass
class _Pending:
    command: str
    future: asyncio.Future[Reply]
    number: bytes | None = None


@dataclass
class _Block:
    number: bytes
    ours: bool
    lines: list[str] = field(default_factory=list)


class ControlClient:
    """One ``tmux -C`` process: commands in, replies and notifications out.

    Callbacks run inside the reader task, so they must be quick and must not raise (a
    failing callback is logged and skipped, never allowed to stop the reader).
    """

    def __init__(
        self,
        process: InteractiveProcess,
        *,
        label: str = "tmux",
        on_output: OutputSink | None = None,
        on_notification: NotificationSink | None = None,
    ) -> None:
        self._process = process
        self.label = label
        self.on_output = on_output
        self.on_notification = on_notification
        self._pending: collections.deque[_Pending] = collections.deque()
        self._block: _Block | None = None
        self._write_lock = asyncio.Lock()
        self._stray: list[str] = []
        """Text outside any block (``no server running …``) and flags-0 errors."""
        self.exit_reason: str | None = None
        loop = asyncio.get_running_loop()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.ready: asyncio.Future[None] = loop.create_future()
        """Resolved when tmux answered the command line that started the client."""
        self._reader = asyncio.ensure_future(self._read_loop())

    @classmethod
    async def connect(
        cls,
        host: ExecutionBackend,
        argv: list[str],
        *,
        label: str = "tmux",
        on_output: OutputSink | None = None,
        on_notification: NotificationSink | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 15.0,
    ) -> ControlClient:
        """Start ``argv`` (a ``tmux -C …`` command line) on ``host``; return once it is attached.

        Nothing is written before tmux answered ``argv``'s own command: tmux reads the
        client's stdin as soon as it is in control mode, so an early command could run
        before the attach and see no session, or the wrong one.

        Raises:
            ControlClosed: the client failed or exited; the message is what tmux said.
        """
        # The tmux client is agent-tui's own program: the panes' shells are what is confined.
        process = await host.spawn(argv, env=env, own_program=True)
        client = cls(process, label=label, on_output=on_output, on_notification=on_notification)
        try:
            await asyncio.wait_for(asyncio.shield(client.ready), timeout)
        except (ControlClosed, TimeoutError):
            await client.close()
            raise ControlClosed(client.failure_text() or "tmux did not start") from None
        return client

    @property
    def is_open(self) -> bool:
        return not self.closed.done()

    def failure_text(self) -> str:
        """What tmux said before it quit (``can't find session: x``), for error messages."""
        parts = [line.strip() for line in self._stray if line.strip()]
        if self.exit_reason:
            parts.append(self.exit_reason)
        return "; ".join(dict.fromkeys(parts))

    # -- commands ----------------------------------------------------------------------------

    async def command(self, line: str) -> list[str]:
        """Run one tmux command; its output lines, or TmuxCommandError on ``%error``."""
        (reply,) = await self.commands([line])
        return reply.check()

    async def commands(self, lines: Sequence[str]) -> list[Reply]:
        """Send several commands in one write and wait for all replies (pipelined).

        Errors do not raise here: each ``Reply`` says whether its command failed, because
        the commands after a failed one still ran.
        """
        if not lines:
            return []
        for line in lines:
            if not line.strip() or "\n" in line or "\r" in line:
                raise ValueError(f"not a single tmux command line: {line!r}")
        loop = asyncio.get_running_loop()
        pending = [_Pending(line, loop.create_future()) for line in lines]
        async with self._write_lock:
            if not self.is_open:
                raise ControlClosed(self._closed_message())
            self._pending.extend(pending)
            try:
                await self._process.write("".join(f"{line}\n" for line in lines).encode())
            except BackendError as error:
                self._finish(f"write failed: {error.msg}")
                raise ControlClosed(self._closed_message()) from None
        return list(await asyncio.gather(*(p.future for p in pending)))

    def _closed_message(self) -> str:
        reason = self.failure_text()
        return f"{self.label}: tmux control client ended" + (f" ({reason})" if reason else "")

    # -- reading -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        buffer = b""
        try:
            while True:
                data = await self._process.read(1 << 16)
                if not data:
                    break
                buffer += data
                if b"\n" not in data:
                    continue
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._handle(line)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a broken pipe must end the client, never hang callers
            log.debug("%s: reader stopped: %s", self.label, error)
        finally:
            if buffer.strip():
                self._stray.append(buffer.decode("utf-8", "replace"))
            self._finish(self.exit_reason)

    def _handle(self, line: bytes) -> None:
        block = self._block
        if block is not None:
            if line.startswith((b"%end ", b"%error ")) and self._closes(line, block):
                self._block = None
                self._answer(block, error=line.startswith(b"%error"))
            else:
                block.lines.append(line.decode("utf-8", "replace"))
            return
        if line.startswith(b"%output "):
            pane, _, data = line[8:].partition(b" ")
            self._emit_output(pane.decode("ascii", "replace"), unescape_output(data))
        elif line.startswith(b"%begin "):
            fields = line.split()
            number = fields[2] if len(fields) > 2 else b""
            flags = int(fields[3]) if len(fields) > 3 and fields[3].isdigit() else 0
            self._block = _Block(number, ours=bool(flags & 1))
        elif line.startswith(b"%"):
            name, _, args = line[1:].decode("utf-8", "replace").partition(" ")
            if name == "exit":
                self.exit_reason = args.strip() or None
            self._emit_notification(name, args)
        elif line.strip():
            self._stray.append(line.decode("utf-8", "replace"))

    @staticmethod
    def _closes(line: bytes, block: _Block) -> bool:
        fields = line.split()
        return len(fields) >= 3 and fields[2] == block.number

    def _answer(self, block: _Block, *, error: bool) -> None:
        if not block.ours:
            # The reply to the command line that started the client: keep errors for
            # failure_text ("can't find session: x").
            if error:
                self._stray.extend(block.lines)
                self._fail_ready()
            elif not self.ready.done():
                self.ready.set_result(None)
            return
        if not self._pending:
            log.warning("%s: a reply nobody waited for: %s", self.label, block.lines)
            return
        pending = self._pending.popleft()
        if not pending.future.done():
            pending.future.set_result(Reply(pending.command, block.lines, error))

    def _emit_output(self, pane: str, data: bytes) -> None:
        if self.on_output is None:
            return
        try:
            self.on_output(pane, data)
        except Exception:
            log.exception("%s: output callback failed", self.label)

    def _emit_notification(self, name: str, args: str) -> None:
        if self.on_notification is None:
            return
        try:
            self.on_notification(name, args)
        except Exception:
            log.exception("%s: notification callback failed", self.label)

    def _finish(self, reason: str | None) -> None:
        if self.closed.done():
            return
        if reason and reason != self.exit_reason:
            self.exit_reason = reason
        error = ControlClosed(self._closed_message())
        self._fail_ready()
        while self._pending:
            pending = self._pending.popleft()
            if not pending.future.done():
                pending.future.set_exception(error)
        self.closed.set_result(None)
        self._emit_notification("exit", self.exit_reason or "")

    def _fail_ready(self) -> None:
        if not self.ready.done():
            self.ready.set_exception(ControlClosed(self._closed_message()))
            self.ready.exception()  # retrieved: nobody may be waiting

    async def close(self) -> None:
        """Detach (stdin closed: tmux ends the client) and stop the process."""
        try:
            await self._process.close()
        finally:
            if not self._reader.done():
                try:
                    await asyncio.wait_for(asyncio.shield(self._reader), timeout=2.0)
                except (TimeoutError, asyncio.CancelledError):
                    self._reader.cancel()
            self._finish(self.exit_reason)


# -- the lines that type into a pane ---------------------------------------------------------

HEX_CHUNK = 256
"""Bytes per ``send-keys -H`` line (three characters each on the command line)."""
TEXT_CHUNK = 1000
"""Characters per ``send-keys -l``/``set-buffer`` line: modest lines for tmux's parser."""

_BRACKETS = ("\x1b[200~", "\x1b[201~")


def chunks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters (never inside a code point)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def hex_lines(pane_id: str, data: bytes) -> list[str]:
    """``send-keys -H`` lines that deliver ``data`` to the pane byte for byte."""
    return [
        f"send-keys -t {pane_id} -H " + " ".join(f"{byte:02x}" for byte in data[i : i + HEX_CHUNK])
        for i in range(0, len(data), HEX_CHUNK)
    ]


def literal_lines(pane_id: str, text: str) -> list[str]:
    """``send-keys -l`` lines for ``text``, each argument behind ``--``."""
    return [f"send-keys -t {pane_id} -l -- {quote(chunk)}" for chunk in chunks(text, TEXT_CHUNK)]


def buffer_lines(buffer: str, text: str) -> list[str]:
    """``set-buffer`` lines that leave exactly ``text`` in ``buffer``."""
    return [
        f"set-buffer {'-a ' if index else ''}-b {buffer} -- {quote(chunk)}"
        for index, chunk in enumerate(chunks(text, TEXT_CHUNK))
    ]


def clean_paste(text: str) -> str:
    """A pasted text without bracket markers, so it cannot end the bracket and type the rest.

    Windows line ends become one newline, so a pasted line is one Enter, not two.
    """
    text = text.replace("\r\n", "\n")
    while any(marker in text for marker in _BRACKETS):
        for marker in _BRACKETS:
            text = text.replace(marker, "")
    return text


def paste_lines(pane_id: str, text: str, buffer: str) -> list[str]:
    """Lines that paste ``text`` into the pane as a person's terminal would.

    ``paste-buffer -p`` brackets the paste only when the pane's program asked for it
    (``#{pane_bracketed_paste}``); without ``-r`` each newline becomes a carriage return,
    which is what the Enter key sends. ``-d`` deletes the buffer once pasted.
    """
    text = clean_paste(text)
    if not text:
        return []
    return [*buffer_lines(buffer, text), f"paste-buffer -p -d -b {buffer} -t {pane_id}"]


def command_lines(pane_id: str, text: str, *, clear: bool = False) -> list[str]:
    """Lines that paste a command (bracketed if the program asked for it) and press Enter.

    ``clear`` first wipes what a person left unsent on the prompt line, so exactly ``text``
    runs, never their leftover glued in front of it.
    """
    buffer = f"atui-{pane_id.lstrip('%')}"
    lines = [clear_input(pane_id)] if clear else []
    lines += buffer_lines(buffer, text)
    if text:
        lines.append(f"paste-buffer -p -r -d -b {buffer} -t {pane_id}")
    lines.append(f"send-keys -t {pane_id} Enter")
    return lines


async def send_lines(client: ControlClient, lines: list[str]) -> None:
    """Send ``lines`` in one round trip; raises ``TmuxCommandError`` for the first refused."""
    for reply in await client.commands(lines):
        reply.check()


async def type_command(
    client: ControlClient, pane_id: str, text: str, *, clear: bool = False
) -> None:
    """Paste ``text`` into the pane and press Enter (``command_lines``)."""
    await send_lines(client, command_lines(pane_id, text, clear=clear))


def clear_input(pane_id: str) -> str:
    """A tmux command that empties the prompt line (emacs keys: end of line, kill to start).

    bash's readline and zsh's line editor both bind these by default; on an empty line they
    do nothing.
    """
    return f"send-keys -t {pane_id} C-e C-u"

"""Headless output: the bus printed as text, one JSON object, or a JSON line per event.

``stream-json`` is a contract for scripts: every bus event, in order, as
``event.model_dump_json()``, flushed at once. ``text`` prints only the final answer on stdout
(progress and errors go to stderr, so ``$(agent-tui -p …)`` captures just the answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import termios
import unicodedata
from pathlib import Path
from typing import Literal, TextIO

from tui.diffs import DIFF_REPLACES, number_width, parse, plain_line
from tui.events import (
    AgentNotice,
    ApprovalAnswer,
    ApprovalRequested,
    ErrorEvent,
    Event,
    Notice,
    ScheduledJobFinished,
    ToolCallCompleted,
    ToolCallSkipped,
    ToolCallStarted,
)

OutputFormat = Literal["text", "json", "stream-json"]


class HeadlessPrinter:
    def __init__(
        self,
        fmt: OutputFormat,
        *,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        verbose: bool = False,
    ) -> None:
        self.fmt = fmt
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.verbose = verbose
        self.errors: list[str] = []

    def __call__(self, event: Event) -> None:
        """Receive one event synchronously, in publish order."""
        if isinstance(event, ErrorEvent):
            self.errors.append(event.message)
        if self.fmt == "stream-json":
            self.stdout.write(event.model_dump_json() + "\n")
            self.stdout.flush()
            return
        if self.fmt == "text":
            self._progress(event)

    def _progress(self, event: Event) -> None:
        """A short trace on stderr so a person running a script sees what happens."""
        line: str | None = None
        if isinstance(event, ToolCallStarted):
            what = event.command or json.dumps(event.arguments)[:200]
            walls = f" · {event.sandbox}" if event.sandbox else ""
            line = f"▶ {event.tool_name} [{event.actor}{walls}] {what}"
        elif isinstance(event, ToolCallCompleted) and event.diff and not event.is_error:
            # The change a file tool made, whole: a script's log shows what was edited.
            line = f"✓ {event.tool_name}: {visible(event.summary)}\n" + terminal_diff(
                event.diff, colour=wants_colour(self.stderr)
            )
        elif isinstance(event, ToolCallCompleted) and event.tool_name == "browser":
            # What the page came to (its address, a screenshot's file and size), not its text.
            mark = "✗" if event.is_error else "✓"
            line = f"{mark} {event.tool_name}: {visible(event.summary)}"
        elif isinstance(event, ToolCallCompleted) and (event.is_error or self.verbose):
            line = (
                f"✗ {event.tool_name}: {event.summary}"
                if event.is_error
                else (f"✓ {event.tool_name} ({event.duration_ms:.0f} ms)")
            )
        elif isinstance(event, ToolCallSkipped):
            line = f"✗ {event.tool_name} skipped: {event.result[:200]}"
        elif isinstance(event, ApprovalRequested):
            line = f"? {event.tool_name} needs approval: {event.command or event.arguments}"
        elif isinstance(event, ErrorEvent):
            line = f"error: {event.message}"
        elif isinstance(event, Notice) and event.level == "warning":
            line = f"note: {event.message}"
        elif isinstance(event, AgentNotice):
            line = f"» {event.message}"
        elif isinstance(event, ScheduledJobFinished):
            state = "ok" if event.ok else "failed"
            line = f"↻ {event.name or event.job_id} {state}: {event.output[:200]}"
        if line is not None:
            self.stderr.write(line + "\n")
            self.stderr.flush()

    def finish(self, result: dict[str, object]) -> None:
        """Print the end of the run: the answer (text) or the summary object (json)."""
        if self.fmt == "text":
            text = str(result.get("result") or "")
            if text:
                self.stdout.write(text.rstrip("\n") + "\n")
        elif self.fmt == "json":
            self.stdout.write(json.dumps(result) + "\n")
        self.stdout.flush()


class TerminalApprover:
    """Asks on the controlling terminal when headless mode runs in one.

    Reads ``/dev/tty``, never stdin (stdin may carry the prompt, ``-p -``). The terminal is
    opened as a plain descriptor: a text-mode ``open(…, "r+")`` wraps it in a
    ``BufferedRandom``, which demands a seekable file and raises on every terminal. The answer
    is read with ``loop.add_reader``, so the event loop keeps running while the person reads,
    and a cancelled turn leaves no thread blocked on the terminal. Input typed before the
    question is discarded first.

    Only ``y``/``yes`` allows (this one call); anything else, an empty line included, denies.

    Args:
        workspace: where a command runs when the request names no directory of its own.
        mode: the approval mode, named when the request does not say why it asks.
        tty_path: the terminal to ask on.
    """

    PROMPT = "allow? [y/N] (n: reason — tells the model why) > "

    def __init__(
        self, workspace: Path | None = None, mode: str = "ask", tty_path: str = "/dev/tty"
    ) -> None:
        self.workspace = workspace
        self.mode = mode
        self.tty_path = tty_path

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        fd = os.open(self.tty_path, os.O_RDWR | os.O_NOCTTY)
        try:
            # Keys typed before this question (a "y" meant for an earlier one, a paste) must
            # not answer a question the person has not seen yet.
            with contextlib.suppress(termios.error, OSError):
                termios.tcflush(fd, termios.TCIFLUSH)
            _write(fd, self.describe(request) + self.PROMPT)
            try:
                line = await _read_line(fd)
            except asyncio.CancelledError:
                _write(fd, "\n(no longer waiting: the call was cancelled)\n")
                raise
            answer = parse_terminal_answer(line)
            _write(fd, "allowed once\n" if answer.allowed else "denied\n")
            return answer
        finally:
            os.close(fd)

    def describe(self, request: ApprovalRequested) -> str:
        """Everything the person needs to decide, whole: nothing clipped, controls shown."""
        lines = ["", f"── {visible(request.tool_name)} needs approval ──"]
        cwd = getattr(request, "cwd", None) or (str(self.workspace) if self.workspace else None)
        where = f"{visible(request.actor)}" + (f", in {visible(cwd)}" if cwd else "")
        lines.append(f"  runs on: {where}")
        if request.sandbox:
            outside = request.sandbox.startswith("OUTSIDE")
            lines.append(
                "  where: runs OUTSIDE the sandbox: can write anywhere you can, reach any host"
                if outside
                else f"  where: {visible(request.sandbox)}"
            )
        if request.command is not None:
            lines.append("  command:")
            lines.extend(f"    {line}" for line in visible(request.command).split("\n"))
        elif request.diff is not None:
            shown = {k: v for k, v in request.arguments.items() if k not in DIFF_REPLACES}
            lines.append("  arguments:")
            lines.extend(f"    {line}" for line in json.dumps(shown, indent=2).splitlines())
            lines.append("  change:")
            lines.extend(f"    {line}" for line in terminal_diff(request.diff).split("\n"))
        else:
            arguments = json.dumps(request.arguments, indent=2)  # escapes every control
            lines.append("  arguments:")
            lines.extend(f"    {line}" for line in arguments.splitlines())
        if request.risk:
            lines.append(f"  risk: {request.risk}")
        for segment in request.segments:
            reasons = f" — {'; '.join(visible(r) for r in segment.reasons)}"
            lines.append(
                f"    [{segment.risk}] {visible(segment.text)}{reasons if segment.reasons else ''}"
            )
        reason = getattr(request, "reason", None) or (
            f"approval mode {self.mode}: this call needs your yes"
        )
        lines.append(f"  asks because: {visible(reason)}")
        if request.claimed_risk:
            lines.append(f"  the model rates it {visible(request.claimed_risk)}")
        if request.why:
            lines.append(f"  the model says why: {visible(request.why)}")
        return "\n".join(lines) + "\n"


_SGR = {"add": "\x1b[32m", "remove": "\x1b[31m", "hunk": "\x1b[2m", "header": "\x1b[1m"}


def wants_colour(stream: TextIO) -> bool:
    """Colour only for a terminal, and never under ``NO_COLOR``."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def terminal_diff(diff: str, *, colour: bool = False) -> str:
    """The whole diff, numbered, controls spelled out; ANSI colours only when asked."""
    lines = parse(diff)
    width = number_width(lines)
    out: list[str] = []
    for line in lines:
        text = visible(plain_line(line, width))
        code = _SGR.get(line.kind) if colour else None
        out.append(f"{code}{text}\x1b[0m" if code else text)
    return "\n".join(out)


def visible(text: str) -> str:
    """``text`` with every control and format character spelled out (``\\x1b``, ``\\u202e``).

    Command text is written by the model: an escape sequence, a carriage return or a bidi
    override in it could redraw or reorder what the terminal shows, so the person would approve
    something other than what runs. Newlines stay, as line breaks of the command.
    """
    out: list[str] = []
    for char in text:
        if char == "\n" or (char.isprintable() and unicodedata.category(char) != "Cf"):
            out.append(char)
        elif ord(char) < 0x100:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return "".join(out)


def _write(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")  # the terminal turns \n into \r\n itself
    while data:
        data = data[os.write(fd, data) :]


async def _read_line(fd: int) -> str:
    """One line typed on the terminal ("" when it closes), without blocking the loop."""
    loop = asyncio.get_running_loop()
    buffer = bytearray()
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:  # the terminal went away (EIO on hang-up)
            chunk = b""
        buffer.extend(chunk)
        if (not chunk or b"\n" in chunk) and not done.done():
            done.set_result(None)

    os.set_blocking(fd, False)
    loop.add_reader(fd, readable)
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.set_blocking(fd, True)
    return buffer.split(b"\n", 1)[0].decode("utf-8", "replace")


def parse_terminal_answer(text: str) -> ApprovalAnswer:
    """``y``/``yes`` allows once; ``n: reason`` denies with a message; anything else denies."""
    text = text.strip()
    lowered = text.lower()
    if lowered in ("y", "yes"):
        return ApprovalAnswer.allow_once()
    if lowered.startswith(("n:", "no:")):
        return ApprovalAnswer.deny(text.split(":", 1)[1].strip() or None)
    return ApprovalAnswer.deny()


def has_terminal(tty_path: str = "/dev/tty") -> bool:
    """Whether this process has a controlling terminal to ask on."""
    try:
        fd = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True

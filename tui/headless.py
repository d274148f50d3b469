"""Headless output: the bus printed as text, one JSON object, or a JSON line per event.

``stream-json`` and ``json`` speak Claude Code's shapes (``tui.claude_stream``), so scripts
written for ``claude -p`` read them. ``agent-tui-json`` is every bus event, in order, as
``event.model_dump_json()``, flushed at once. ``text`` prints only the final answer on stdout
(progress and errors go to stderr, so ``$(agent-tui -p …)`` captures just the answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import termios
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tui.agent.providers.base import Message
from tui.choices import OutputFormat
from tui.claude_stream import ClaudeStream, RunFacts, dumps
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
from tui.safe_text import dumps_or, one_line, terminal_safe

if TYPE_CHECKING:
    from tui.agent.loop import TurnOutcome
    from tui.security.approval import Approver
    from tui.session import AgentSession

_C1_AND_SEPARATORS = re.compile("[\x7f-\x9f\u2028\u2029]")


def json_line(text: str) -> str:
    """A JSON text as one line no terminal acts on: JSON already escapes C0 controls, and the
    C1 ones (``\\u009b`` opens a sequence on some terminals) and the line separators are
    escaped too; the parsed value is the same."""
    return _C1_AND_SEPARATORS.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


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
        self.claude = ClaudeStream(self._write_line)
        """Claude Code's lines (``stream-json``) and result object (both JSON formats)."""

    def begin(self, facts: RunFacts) -> None:
        """The run starts: ``stream-json``'s init line; the clock of the result's duration."""
        self.claude.begin(facts, emit=self.fmt == "stream-json")

    def message(self, message: Message) -> None:
        """A message the conversation gained (``AgentSession.watch_messages``)."""
        if self.fmt == "stream-json":
            self.claude.message(message)

    def _write_line(self, line: dict[str, object]) -> None:
        if self.fmt == "stream-json":
            self.stdout.write(json_line(dumps(line)))
            self.stdout.flush()

    def __call__(self, event: Event) -> None:
        """Receive one event synchronously, in publish order."""
        if isinstance(event, ErrorEvent):
            self.errors.append(event.message)
        if self.fmt in ("stream-json", "json"):
            self.claude(event)
        if self.fmt == "agent-tui-json":
            try:
                line = event.model_dump_json()
            except (ValueError, RecursionError) as error:  # a value no JSON writer takes
                kind = getattr(event, "kind", "event")
                line = json.dumps({"kind": kind, "error": f"not serialisable: {error}"[:300]})
            self.stdout.write(json_line(line))
            self.stdout.flush()
            return
        if self.fmt == "text":
            self._progress(event)

    def _progress(self, event: Event) -> None:
        """A short trace on stderr so a person running a script sees what happens."""
        line: str | None = None
        if isinstance(event, ToolCallStarted):
            what = event.command or dumps_or(event.arguments)[:200]
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
            # Model and tool text (a command, an error, a notice) may hold escape sequences:
            # on a person's terminal they would set the clipboard or retitle the window.
            self.stderr.write(terminal_safe(line) + "\n")
            self.stderr.flush()

    def finish(self, result: dict[str, object]) -> None:
        """Print the end of the run: the answer (text) or the summary object (json)."""
        if self.fmt == "text":
            text = str(result.get("result") or "")
            if text:
                self.stdout.write(terminal_safe(text.rstrip("\n")) + "\n")
        elif self.fmt in ("json", "stream-json"):
            self.stdout.write(json_line(dumps(self.claude.result(result))))
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
    FIELD_LIMIT = 300
    """Characters of one field the model wrote (its ``why``) shown before it is cut."""

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
            _write(fd, self.describe(request) + self.question(request))
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

    def question(self, request: ApprovalRequested) -> str:
        """The last line, naming the risk we computed (never the model's own label)."""
        risk = f"computed risk {request.risk.upper()}" if request.risk else "no command to rate"
        return f"{one_line(request.tool_name, 80)}, {risk} — {self.PROMPT}"

    def describe(self, request: ApprovalRequested) -> str:
        """Everything the person needs to decide, whole: nothing clipped, controls shown.

        What the model wrote comes first, one line a field, cut when long, so no newline,
        escape or flood of text in it can push what runs off the screen or draw a fake one;
        what we computed (the segments and their risk, then the command or the change itself)
        comes last, right above the question.
        """
        limit = self.FIELD_LIMIT
        lines = ["", f"── {one_line(request.tool_name, 80)} needs approval ──"]
        if request.why:
            lines.append(f"  the model says why: {one_line(request.why, limit)}")
        if request.claimed_risk:
            lines.append(f"  the model rates it: {one_line(request.claimed_risk, 40)}")
        cwd = getattr(request, "cwd", None) or (str(self.workspace) if self.workspace else None)
        where = one_line(request.actor, 120) + (f", in {one_line(cwd)}" if cwd else "")
        lines.append(f"  runs on: {where}")
        if request.sandbox:  # our own words, never the model's
            lines.append(
                "  where: runs OUTSIDE the sandbox: can write anywhere you can, reach any host"
                if request.outside
                else f"  where: {one_line(request.sandbox, 120)}"
            )
        reason = getattr(request, "reason", None) or (
            f"approval mode {self.mode}: this call needs your yes"
        )
        lines.append(f"  asks because: {one_line(reason, limit)}")
        for state, words in (("ask", "asks on"), ("allowed", "runs unasked on")):
            names = [h.name for h in request.hosts if h.state == state]
            if names:  # a fan-out: y allows it on every host that asks
                lines.append(f"  {words} {len(names)} host(s): {one_line(', '.join(names))}")
        lines.extend(
            f"  not run on {h.name}: {one_line(h.reason, limit)}"
            for h in request.hosts
            if h.state == "refused"
        )
        if request.command is None:
            shown = {k: v for k, v in request.arguments.items() if k not in DIFF_REPLACES}
            arguments = shown if request.diff is not None else request.arguments
            lines.append("  arguments:")
            lines.extend(f"    {line}" for line in argument_lines(arguments, limit))
        if request.risk:
            lines.append(f"  risk: {request.risk}")
        for segment in request.segments:
            reasons = f" — {'; '.join(one_line(r, limit) for r in segment.reasons)}"
            lines.append(
                f"    [{segment.risk}] {one_line(segment.text.strip())}"
                f"{reasons if segment.reasons else ''}"
            )
        if request.command is not None:
            lines.append("  command:")
            lines.extend(f"    {line}" for line in visible(request.command).split("\n"))
        elif request.diff is not None:
            lines.append("  change:")
            lines.extend(f"    {line}" for line in terminal_diff(request.diff).split("\n"))
        return "\n".join(lines) + "\n"


def argument_lines(arguments: dict[str, object], limit: int) -> list[str]:
    """One line an argument, as JSON (which escapes every control), cut when long."""
    lines = []
    for key, value in arguments.items():
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (ValueError, RecursionError):
            text = "(a value too deeply nested to show)"
        lines.append(f"{one_line(str(key), 80)}: {one_line(text, limit)}")
    return lines


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


def approver_for(workspace: Path, mode: str) -> Approver:
    """Who answers approvals with no app: the person on the controlling terminal when there
    is one (``/dev/tty``, never stdin), else no one — every request then fails closed with a
    message naming ``--approval-mode``."""
    from tui.security.approval import NoApprover

    if has_terminal():
        return TerminalApprover(workspace, mode)
    return NoApprover("no UI and no TTY to ask (headless mode with no terminal)")


def describe_outcome(outcome: TurnOutcome, session: AgentSession) -> dict[str, Any]:
    """The ``--output-format json`` object."""
    return {
        "result": outcome.final_text,
        "stop_reason": outcome.reason,
        "is_error": outcome.reason not in ("completed",) or bool(outcome.limits),
        "error": outcome.error or (limits_message(outcome.limits) if outcome.limits else None),
        "limits": outcome.limits,
        "turns": outcome.turns,
        "session_id": session.session_id,
        **(
            {"structured_output": outcome.structured_output}
            if session.wants_structured_output()
            else {}
        ),
        "usage": session.usage_summary(),
    }


def limits_message(limits: list[str]) -> str:
    """One line for a run some limit cut short: how often, and the first reason."""
    calls = "call was" if len(limits) == 1 else "calls were"
    return f"{len(limits)} {calls} refused by a limit; the first: {limits[0]}"

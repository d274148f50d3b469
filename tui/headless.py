"""Headless output: the bus printed as text, one JSON object, or a JSON line per event.

``stream-json`` is a contract for scripts: every bus event, in order, as
``event.model_dump_json()``, flushed at once. ``text`` prints only the final answer on stdout
(progress and errors go to stderr, so ``$(agent-tui -p …)`` captures just the answer).
"""

from __future__ import annotations

import json
import sys
from typing import Literal, TextIO

from tui.events import (
    AgentNotice,
    ApprovalRequested,
    ErrorEvent,
    Event,
    Notice,
    ScheduledJobFinished,
    ToolCallCompleted,
    ToolCallStarted,
)
from tui.security.approval import ApprovalAnswer, ApprovalDecision

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
            line = f"▶ {event.tool_name} [{event.actor}] {what}"
        elif isinstance(event, ToolCallCompleted) and (event.is_error or self.verbose):
            line = (
                f"✗ {event.tool_name}: {event.summary}"
                if event.is_error
                else (f"✓ {event.tool_name} ({event.duration_ms:.0f} ms)")
            )
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
    """Asks on the controlling terminal when headless mode runs interactively.

    Reads ``/dev/tty`` (not stdin, which may carry the prompt) in a thread, so the event loop
    and any running tools keep going while the person reads the command.
    """

    PROMPT = "allow? [y]es once / [a]lways (this exact command) / [n]o / n: reason > "

    def __init__(self, tty_path: str = "/dev/tty") -> None:
        self.tty_path = tty_path

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        import asyncio

        return await asyncio.to_thread(self._ask, request)

    def _ask(self, request: ApprovalRequested) -> ApprovalAnswer:
        with open(self.tty_path, "r+", encoding="utf-8") as tty:
            tty.write(f"\n{request.tool_name} on {request.actor} needs approval\n")
            if request.reason:
                tty.write(f"  asks because: {request.reason}\n")
            if request.command:
                tty.write(f"  command: {request.command}\n")
                for segment in request.segments:
                    reasons = f" ({'; '.join(segment.reasons)})" if segment.reasons else ""
                    tty.write(f"    [{segment.risk:>6}] {segment.text}{reasons}\n")
            else:
                tty.write(f"  arguments: {json.dumps(request.arguments)[:2000]}\n")
            if request.why:
                tty.write(f"  why: {request.why}\n")
            if request.claimed_risk:
                tty.write(f"  model's risk: {request.claimed_risk}; computed: {request.risk}\n")
            while True:
                tty.write(self.PROMPT)
                tty.flush()
                answer = tty.readline()
                if not answer:
                    return ApprovalAnswer.deny("no answer (the terminal closed)")
                parsed = parse_terminal_answer(answer)
                if parsed is not None:
                    return parsed


def parse_terminal_answer(text: str) -> ApprovalAnswer | None:
    text = text.strip()
    lowered = text.lower()
    if lowered in ("y", "yes"):
        return ApprovalAnswer.allow_once()
    if lowered in ("a", "always"):
        return ApprovalAnswer(decision=ApprovalDecision.ALLOW_ALWAYS)
    if lowered in ("n", "no"):
        return ApprovalAnswer.deny()
    if lowered.startswith(("n:", "no:")):
        return ApprovalAnswer.deny(text.split(":", 1)[1].strip() or None)
    return None

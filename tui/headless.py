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
    ApprovalRequested,
    ErrorEvent,
    Event,
    Notice,
    ToolCallCompleted,
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

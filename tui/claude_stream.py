"""Headless output in Claude Code's shapes, so scripts written for ``claude -p`` read ours.

``--output-format stream-json`` writes the lines Claude Code writes, one JSON object each:

- ``{"type": "system", "subtype": "init", "session_id", "cwd", "model", "tools",
  "permissionMode", …}`` once, before the first request;
- ``{"type": "assistant", "message": {"role": "assistant", "content": [text, thinking and
  tool_use blocks], "usage", …}, "parent_tool_use_id": null, "session_id"}`` per model answer;
- ``{"type": "user", "message": {"role": "user", "content": [tool_result blocks]}, …}`` per
  finished call;
- ``{"type": "result", "subtype": "success" | "error_max_turns" | "error_during_execution",
  "is_error", "result", "num_turns", "total_cost_usd", "duration_ms", "duration_api_ms",
  "usage", "permission_denials", "session_id"}`` last.

Tool names and inputs are Claude Code's (``Bash`` with ``command``, ``Edit`` with an absolute
``file_path``; ``tui.agent.claude_names``); what is ours rides along as extra fields (the
``agent_tui`` object of a line, ``agent_tui_name`` of a tool_use block), which JSON readers
skip. Only these four line types are written, because strict readers refuse a type they do not
know; every bus event as it is (tool output as it streams, approvals, notices) is
``--output-format agent-tui-json``. ``--output-format json`` prints the result object alone.

Lines of sub-agents are not written (their calls are inside the ``Task`` call that ran them).
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tui import __version__
from tui.agent.claude_names import PERMISSION_MODES, as_claude, claude_name
from tui.agent.providers.base import Message
from tui.events import (
    AssistantMessage,
    Event,
    ToolCallCompleted,
    ToolCallRequested,
    ToolCallSkipped,
    TurnStarted,
    Usage,
)
from tui.safe_text import loads_or

SUBTYPES = {"completed": "success", "max_turns": "error_max_turns"}
"""Our outcome → the result line's ``subtype`` (anything else: ``error_during_execution``)."""


@dataclass(frozen=True)
class RunFacts:
    """What the ``system`` init line says about the run."""

    session_id: str
    cwd: str
    model: str
    provider: str
    tools: list[str]
    approval_mode: str


def init_line(facts: RunFacts) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "session_id": facts.session_id,
        "cwd": facts.cwd,
        "model": facts.model,
        "tools": [claude_name(name) for name in facts.tools],
        "mcp_servers": [],
        "permissionMode": PERMISSION_MODES.get(facts.approval_mode, "default"),
        "slash_commands": [],
        "apiKeySource": "none",
        "output_style": "default",
        "uuid": str(uuid.uuid4()),
        "agent_tui": {
            "version": __version__,
            "provider": facts.provider,
            "approval_mode": facts.approval_mode,
            "tools": facts.tools,
        },
    }


def result_object(
    summary: dict[str, Any],
    *,
    duration_ms: int = 0,
    duration_api_ms: int = 0,
    denials: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Claude Code's result object from ours (``headless.describe_outcome``), whose keys stay:
    ``turns``, ``stop_reason`` (our outcome), ``error``, ``structured_output`` and ``usage``
    with our counts (``input_tokens`` is the whole prompt there, cached parts included)."""
    usage = dict(summary.get("usage") or {})
    cost = usage.get("cost_usd")
    usage.setdefault("cache_read_input_tokens", usage.get("cached_tokens", 0))
    usage.setdefault("cache_creation_input_tokens", usage.get("cache_write_tokens", 0))
    reason = str(summary.get("stop_reason") or "error")
    return {
        "type": "result",
        "subtype": SUBTYPES.get(reason, "error_during_execution"),
        "is_error": bool(summary.get("is_error")),
        "duration_ms": duration_ms,
        "duration_api_ms": duration_api_ms,
        "num_turns": int(summary.get("turns") or 0),
        "result": summary.get("result") or summary.get("error") or "",
        "session_id": summary.get("session_id", ""),
        # A number, as readers expect; 0 with total_cost_known false when the price table
        # does not know the model (usage.cost_usd is null then).
        "total_cost_usd": float(cost) if isinstance(cost, int | float) else 0.0,
        "total_cost_known": isinstance(cost, int | float),
        "permission_denials": denials or [],
        "terminal_reason": reason,
        "uuid": str(uuid.uuid4()),
        **summary,
        "usage": usage,
    }


@dataclass
class ClaudeStream:
    """Turns bus events into Claude Code's stream-json lines (``write`` takes one object).

    Args:
        write: Writes one line's object.
        clock: Monotonic seconds (tests pin it).
    """

    write: Callable[[dict[str, Any]], None]
    clock: Callable[[], float] = time.monotonic
    facts: RunFacts | None = None
    started: float = 0.0
    api_seconds: float = 0.0
    denials: list[dict[str, Any]] = field(default_factory=list)
    _request_started: float | None = None
    _usage: Usage | None = None
    _pending: AssistantMessage | None = None
    _calls: dict[str, ToolCallRequested] = field(default_factory=dict)
    _ends: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What each finished call's events said (exit code, duration …), until its result."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def begin(self, facts: RunFacts, *, emit: bool = True) -> None:
        """The run starts: the init line (stream-json), the clock for ``duration_ms``."""
        self.facts = facts
        self.started = self.clock()
        if emit:
            self.write(init_line(facts))

    def __call__(self, event: Event) -> None:
        if event.loop_id != "main":
            return  # a sub-agent's: inside the Task call that ran it
        if isinstance(event, TurnStarted):
            self._request_started = self.clock()
        elif isinstance(event, Usage):
            self._usage = event
        elif isinstance(event, AssistantMessage):
            if self._request_started is not None:
                self.api_seconds += self.clock() - self._request_started
                self._request_started = None
            self._pending = event
            self._calls = {}
            self._flush_if_complete()
        elif isinstance(event, ToolCallRequested):
            self._calls[event.tool_call_id] = event
            self._flush_if_complete()
        elif isinstance(event, ToolCallCompleted):
            self._ends[event.tool_call_id] = {
                "tool_name": event.tool_name,
                "exit_code": event.exit_code,
                "duration_ms": event.duration_ms,
                "error_type": event.error_type,
                "full_output_path": event.full_output_path,
            }
            if event.error_type == "PermissionDenied":
                self._deny(event.tool_call_id, event.tool_name)
        elif isinstance(event, ToolCallSkipped):
            self._ends[event.tool_call_id] = {"tool_name": event.tool_name, "skipped": True}
            self._deny(event.tool_call_id, event.tool_name)

    def message(self, message: Message) -> None:
        """A message the main conversation gained: a call's result, as the model reads it,
        becomes its ``user`` line (after the call's end event, which it follows)."""
        if message.role != "tool" or not message.tool_call_id:
            return
        wrapped = loads_or(message.content, None)
        text = wrapped.get("result") if isinstance(wrapped, dict) else None
        content = text if isinstance(text, str) else message.content
        extra = self._ends.pop(message.tool_call_id, {"tool_name": message.tool_name})
        self._tool_result(message.tool_call_id, content, message.is_error, extra)

    def result(self, summary: dict[str, Any]) -> dict[str, Any]:
        """The final result object, timed from ``begin``."""
        elapsed = self.clock() - self.started if self.facts is not None else 0.0
        return result_object(
            summary,
            duration_ms=int(elapsed * 1000),
            duration_api_ms=int(self.api_seconds * 1000),
            denials=self.denials,
        )

    # -- lines ---------------------------------------------------------------------------------

    def _flush_if_complete(self) -> None:
        message = self._pending
        if message is None or any(i not in self._calls for i in message.tool_call_ids):
            return
        self._pending = None
        content: list[dict[str, Any]] = []
        if message.thinking:
            content.append({"type": "thinking", "thinking": message.thinking})
        if message.text:
            content.append({"type": "text", "text": message.text})
        base = self.facts.cwd if self.facts else ""
        for call_id in message.tool_call_ids:
            call = self._calls[call_id]
            arguments = loads_or(call.arguments or "{}", call.arguments)
            content.append(
                {
                    "type": "tool_use",
                    "id": call.tool_call_id,
                    "name": claude_name(call.tool_name),
                    "input": as_claude(call.tool_name, arguments, base),
                    "agent_tui_name": call.tool_name,
                }
            )
        usage = self._usage
        self._usage = None
        self.write(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_agent_tui_{next(self._ids)}",
                    "type": "message",
                    "role": "assistant",
                    "model": self.facts.model if self.facts else "",
                    "content": content,
                    "stop_reason": "tool_use" if message.tool_call_ids else "end_turn",
                    "stop_sequence": None,
                    "usage": _message_usage(usage),
                },
                "parent_tool_use_id": None,
                "session_id": self._session_id,
                "uuid": str(uuid.uuid4()),
            }
        )

    def _tool_result(
        self, call_id: str, content: str, is_error: bool, extra: dict[str, Any]
    ) -> None:
        self.write(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": call_id,
                            "content": content,
                            "is_error": is_error,
                        }
                    ],
                },
                "parent_tool_use_id": None,
                "session_id": self._session_id,
                "uuid": str(uuid.uuid4()),
                "agent_tui": extra,
            }
        )

    def _deny(self, call_id: str, name: str) -> None:
        call = self._calls.get(call_id)
        arguments = loads_or(call.arguments or "{}", {}) if call is not None else {}
        base = self.facts.cwd if self.facts else ""
        self.denials.append(
            {
                "tool_name": claude_name(name),
                "tool_use_id": call_id,
                "tool_input": as_claude(name, arguments, base),
            }
        )

    @property
    def _session_id(self) -> str:
        return self.facts.session_id if self.facts else ""


def _message_usage(usage: Usage | None) -> dict[str, Any]:
    """One answer's tokens as the Messages API counts them (input without the cached part)."""
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    cached = usage.cached_tokens + usage.cache_write_tokens
    return {
        "input_tokens": max(usage.input_tokens - cached, 0),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "output_tokens": usage.output_tokens,
    }


def dumps(line: dict[str, Any]) -> str:
    """One line's JSON (values no writer takes become their text)."""
    return json.dumps(line, ensure_ascii=False, default=str)

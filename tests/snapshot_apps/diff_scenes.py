"""Scenes of file changes: an edit's approval with its diff, and the block after the edit."""

from __future__ import annotations

import json
from typing import Any

from tui.diffs import unified_diff
from tui.events import (
    ApprovalRequested,
    AssistantMessage,
    Event,
    ToolCallCompleted,
    ToolCallRequested,
    ToolCallStarted,
    ToolOutputChunk,
    TurnStarted,
    UserMessage,
)

BEFORE = """\
import httpx2 as httpx

from app.settings import Settings

TIMEOUT = 5.0


def fetch_health(settings: Settings) -> dict:
    \"\"\"Ask the service whether it is up.\"\"\"
    response = httpx.get(settings.health_url, timeout=TIMEOUT)
    response.raise_for_status()
    return response.json()


def is_healthy(settings: Settings) -> bool:
    return fetch_health(settings).get("status") == "ok"
"""

OLD = """\
    response = httpx.get(settings.health_url, timeout=TIMEOUT)
    response.raise_for_status()
    return response.json()
"""
NEW = """\
    for attempt in range(settings.retries):
        try:
            response = httpx.get(settings.health_url, timeout=TIMEOUT)
            response.raise_for_status()
            return response.json()
        except httpx.TransportError:
            if attempt == settings.retries - 1:
                raise
    return {}
"""
PATH = "app/health.py"
ARGUMENTS: dict[str, Any] = {"path": PATH, "old_string": OLD, "new_string": NEW}
DIFF, ADDED, REMOVED = unified_diff(BEFORE, BEFORE.replace(OLD, NEW), PATH)


def intro(at: Any) -> list[Event]:
    text = "The health check gives up on the first dropped connection; I'll retry it."
    return [
        UserMessage(text="Make the health check survive a dropped connection.", ts=at(8)),
        TurnStarted(turn=1, ts=at(8)),
        AssistantMessage(text=text, tool_call_ids=["call_edit"], ts=at(6)),
        ToolCallRequested(
            tool_call_id="call_edit",
            tool_name="edit_file",
            arguments=json.dumps(ARGUMENTS),
            ts=at(6),
        ),
    ]


def approval(at: Any) -> list[Event]:
    """The edit waiting for a person, with the diff the policy read from the file."""
    return [
        *intro(at),
        ApprovalRequested(
            request_id="approval-edit",
            tool_call_id="call_edit",
            tool_name="edit_file",
            arguments=ARGUMENTS,
            actor="local",
            reason="ask mode: file edits need approval",
            suggested_pattern=f"edit_file({PATH})",
            diff=DIFF,
            ts=at(0.5),
        ),
    ]


def result(at: Any) -> list[Event]:
    """The edit done: the block shows what changed."""
    summary = f"Edited {PATH}: replaced 1 occurrence (first at line 10); +{ADDED} -{REMOVED} lines."
    return [
        *intro(at),
        ToolCallStarted(
            tool_call_id="call_edit",
            tool_name="edit_file",
            arguments=ARGUMENTS,
            actor="local",
            ts=at(5),
        ),
        ToolOutputChunk(
            tool_call_id="call_edit", tool_name="edit_file", stream="stdout", text=summary, ts=at(5)
        ),
        ToolCallCompleted(
            tool_call_id="call_edit",
            tool_name="edit_file",
            is_error=False,
            duration_ms=12.0,
            summary=summary,
            diff=DIFF,
            ts=at(4.9),
        ),
    ]

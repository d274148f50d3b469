"""What a tool call's end turns into for the conversation and the events, whether or not it ran.

Kept apart from the loop so the two shapes every call ends in — the tool message the model
reads next, and the start/end events the person and the transcript see for a call that never
reached the registry — are written once and read whole.
"""

from __future__ import annotations

import json
from typing import Any

from tui.agent.providers.base import ImagePart, Message, ToolCall
from tui.events import MAX_ERROR_CHARS, Event, ToolCallCompleted, ToolCallStarted
from tui.tools.result import ToolResult
from tui.tools.truncation import envelope


def result_message(call: ToolCall, result: ToolResult) -> Message:
    """The tool message the model reads for ``call``: its result in the harness envelope."""
    return Message(
        role="tool",
        content=envelope(result.model_result()),
        tool_call_id=call.id,
        tool_name=call.name,
        is_error=result.is_error,
        images=[ImagePart(i.data, i.mime_type) for i in result.images],
    )


def unrun_events(
    call: ToolCall, result: ToolResult, actor: str, *, started: bool = False
) -> list[Event]:
    """The events that close a call that never reached the registry (skipped by steering or
    cancel, interrupted), so every requested call shows an end in the UI too. A skipped call
    (``started``) gets its start first, as phi-core emits one: a consumer of the events sees
    every call it was told of start and end."""
    events: list[Event] = []
    if started:
        events.append(
            ToolCallStarted(
                tool_call_id=call.id, tool_name=call.name, arguments=_arguments(call), actor=actor
            )
        )
    events.append(
        ToolCallCompleted(
            tool_call_id=call.id,
            tool_name=call.name,
            is_error=True,
            duration_ms=0.0,
            error_type=result.details.get("error_type"),
            summary=result.text.split("\n", 1)[0][:200],
            error=result.text.strip()[:MAX_ERROR_CHARS],
        )
    )
    return events


def _arguments(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as an object for its event (``{}`` when they are not one)."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}

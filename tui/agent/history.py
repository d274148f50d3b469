"""A saved conversation made sendable again: every call answered once, in order, ids unique.

The wire protocols accept a conversation only when each tool call has exactly one result,
after the message that made it, and (for the real APIs) no call id appears twice. A session
file can break each rule without anyone doing wrong: a crash between a call and its result
leaves it unanswered; results are saved as each call ends, so parallel ones are saved out of
order; a local server that numbers its calls ``call_0`` every turn repeats ids; a file written
by two processes at once (before sessions were locked) holds results twice. What resuming
sends is therefore rebuilt here, never trusted as read. Nothing is invented but the one
result a call never got, which says plainly that its outcome is unknown.
"""

from __future__ import annotations

import dataclasses
import re

from tui.agent.providers.base import Message, ToolCall
from tui.tools.truncation import envelope

UNKNOWN_OUTCOME = (
    "Error (Interrupted): the session ended before this call finished; whether it had any "
    "effect is unknown — check before repeating it."
)
_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def prepare_resume(messages: list[Message]) -> list[Message]:
    """The conversation to send after a resume; see the module docstring."""
    out: list[Message] = []
    used: set[str] = set()
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "tool":
            continue  # a result with no open call before it (a duplicate or an orphan)
        if message.role != "assistant" or not message.tool_calls:
            out.append(message)
            continue
        end = index
        while end < len(messages) and messages[end].role != "assistant":
            end += 1
        segment = messages[index:end]
        index = end
        results = [m for m in segment if m.role == "tool"]
        calls, answers = _answer(message.tool_calls, results, used)
        out.append(dataclasses.replace(message, tool_calls=calls))
        out.extend(answers)
        out.extend(m for m in segment if m.role != "tool")
    return out


def _answer(
    calls: list[ToolCall], results: list[Message], used: set[str]
) -> tuple[list[ToolCall], list[Message]]:
    """Each call with its first result (by id, in the order saved), under an id not used
    before; a call without one gets the unknown-outcome result."""
    pending = list(results)
    new_calls: list[ToolCall] = []
    answers: list[Message] = []
    for call in calls:
        result = next((m for m in pending if m.tool_call_id == call.id), None)
        if result is not None:
            pending.remove(result)
        call_id = _unique(call.id, used)
        new_calls.append(dataclasses.replace(call, id=call_id))
        if result is None:
            result = Message(
                role="tool",
                content=envelope(UNKNOWN_OUTCOME),
                tool_call_id=call_id,
                tool_name=call.name,
                is_error=True,
            )
        answers.append(dataclasses.replace(result, tool_call_id=call_id))
    return new_calls, answers


def _unique(call_id: str, used: set[str]) -> str:
    """``call_id``, or ``call_id-2``, ``-3``… when a call before it had it already."""
    candidate = call_id or "call"
    if candidate in used:
        stem = _ID_CHARS.sub("_", candidate)[:56] or "call"
        number = 2
        while f"{stem}-{number}" in used:
            number += 1
        candidate = f"{stem}-{number}"
    used.add(candidate)
    return candidate


__all__ = ["UNKNOWN_OUTCOME", "prepare_resume"]

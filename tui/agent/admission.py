"""Where the model's output enters the conversation, and is made safe once for every writer.

Why here and not in each writer: the request builders, the transcript, the headless printers
and the bus events all serialise the same conversation. Cleaning the text once, as a response
is admitted (and as a saved session is read back), means none of them can meet a lone
surrogate, and a session that was written can always be sent again.

What changes, and only when it must:

- lone surrogates in text, tool names, ids and argument JSON become U+FFFD (``safe_text``);
- a tool-call id that the APIs would refuse on replay (empty, too long, odd characters) or
  that repeats within one response is replaced by a stable one derived from it;
- a tool name is cut to ``MAX_NAME_CHARS`` (no real tool has a longer one; the registry
  answers "no tool named …"); on the wire, a name no API accepts is replayed as
  ``INVALID_TOOL_NAME`` (``providers.base.replay_name``), since no real tool can have it.

The transcript stores the admitted form: what was shown, approved and run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any

from tui.agent.providers.base import Completed, Message, ReasoningItem, ToolCall
from tui.safe_text import clean, clean_json_text

MAX_NAME_CHARS = 200
_VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def admit_completed(completed: Completed) -> Completed:
    """A response as the conversation keeps it."""
    calls = admit_calls(completed.tool_calls)
    text = clean(completed.text)
    reasoning = admit_reasoning(completed.reasoning)
    if (
        text == completed.text
        and calls == completed.tool_calls
        and reasoning == completed.reasoning
    ):
        return completed
    return dataclasses.replace(completed, text=text, tool_calls=calls, reasoning=reasoning)


_REASONING_TYPES = {"anthropic": ("thinking", "redacted_thinking"), "responses": ("reasoning",)}
MAX_REASONING_BYTES = 4 * 1024 * 1024
"""No real thinking block comes near this; a bigger one would be resent on every request."""


def admit_reasoning(items: list[ReasoningItem]) -> list[ReasoningItem]:
    """Reasoning items as received, or not at all: they are replayed byte for byte under a
    signature, so one cannot be cleaned. An item that is not a reasoning block of its API (a
    saved session must not smuggle in a call or a result), holds a lone surrogate
    (unsendable), is not JSON data, or is of absurd size is dropped; the API then answers as
    for a turn without it. The readable ``text`` is only shown, so it is cleaned like any
    model text."""
    admitted: list[ReasoningItem] = []
    for item in items:
        if item.data.get("type") not in _REASONING_TYPES.get(item.api, ()):
            continue  # only reasoning replays this way, never a call or a result
        if not _sendable(item.data):
            continue
        admitted.append(
            item
            if clean(item.text) == item.text
            else dataclasses.replace(item, text=clean(item.text))
        )
    return admitted


def _sendable(data: Any) -> bool:
    try:
        encoded = json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError):
        return False
    return isinstance(data, dict) and len(encoded) <= MAX_REASONING_BYTES


def admit_calls(calls: list[ToolCall]) -> list[ToolCall]:
    """Each call with a valid id unique within the response, a bounded name, clean JSON."""
    admitted: list[ToolCall] = []
    seen: set[str] = set()
    for index, call in enumerate(calls):
        call_id = _safe_id(call.id)
        while call_id in seen:
            call_id = _safe_id(f"{call_id}#{index}", force=True)
        seen.add(call_id)
        name = clean(call.name[:MAX_NAME_CHARS])
        arguments = clean_json_text(call.arguments)
        if (call_id, name, arguments) == (call.id, call.name, call.arguments):
            admitted.append(call)
        else:
            admitted.append(ToolCall(id=call_id, name=name, arguments=arguments))
    return admitted


def admit_message(message: Message) -> Message:
    """A message read back from a saved session, cleaned the same way (older sessions were
    written before responses were admitted)."""
    calls = admit_calls(message.tool_calls)
    content = clean(message.content)
    tool_call_id = _safe_id(message.tool_call_id) if message.tool_call_id is not None else None
    tool_name = clean(message.tool_name[:MAX_NAME_CHARS]) if message.tool_name else None
    return dataclasses.replace(
        message,
        content=content,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        reasoning=admit_reasoning(message.reasoning),
    )


def _safe_id(raw: str, *, force: bool = False) -> str:
    """``raw`` when both APIs accept it; otherwise a stable replacement, the same on every
    read, so a call and its result still pair up after a resume."""
    if not force and _VALID_ID.fullmatch(raw):
        return raw
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"call_{digest}"

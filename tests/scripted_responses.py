"""The OpenAI Responses API for the scripted server: its stream of typed events and its
response object, shaped like the documented examples and checked against the official SDK in
``test_wire_format_sdks.py``.

Step keys, besides ``text``, ``tool_calls``, ``stop_reason`` and ``usage`` (whose
``cached_tokens``, ``cache_write_tokens`` and ``reasoning_tokens`` land in
``input_tokens_details`` and ``output_tokens_details``): ``reasoning``, a list of reasoning
output items sent verbatim (``{"type": "reasoning", "id": "rs_…", "summary":
[{"type": "summary_text", "text": …}], "encrypted_content": "…"}``), before the message and
the calls, as reasoning models do.
"""

from __future__ import annotations

import time
from typing import Any

Step = dict[str, Any]


def responses_usage(step: Step) -> dict[str, Any]:
    usage = step.get("usage") or {}
    prompt = int(usage.get("input_tokens", 12))
    completion = int(usage.get("output_tokens", 7))
    return {
        "input_tokens": prompt,
        "input_tokens_details": {
            "cached_tokens": int(usage.get("cached_tokens", 0)),
            "cache_write_tokens": int(usage.get("cache_write_tokens", 0)),
        },
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": int(usage.get("reasoning_tokens", 0))},
        "total_tokens": prompt + completion,
    }


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = (
        [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
        if status == "completed"
        else []
    )
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _call_item(call: dict[str, Any], i: int, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": f"fc_scripted_{i + 1}",
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": str(call.get("id") or f"call_scripted_{i + 1}"),
        "name": call["name"],
    }


def output_items(step: Step, response_id: str) -> list[dict[str, Any]]:
    """The finished output: reasoning items, the message, then the calls."""
    items: list[dict[str, Any]] = [dict(item) for item in step.get("reasoning") or []]
    if step.get("text"):
        items.append(_message_item(f"msg_{response_id}", str(step["text"]), "completed"))
    items.extend(
        _call_item(call, i, str(call.get("arguments") or ""), "completed")
        for i, call in enumerate(step.get("tool_calls") or [])
    )
    return items


def response_object(
    step: Step, *, model: str, response_id: str, request: dict[str, Any], final: bool
) -> dict[str, Any]:
    incomplete = step.get("stop_reason") == "max_tokens"
    status = ("incomplete" if incomplete else "completed") if final else "in_progress"
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if final and incomplete else None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": model,
        "output": output_items(step, response_id) if final else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": request.get("store", True),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": request.get("tools") or [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": responses_usage(step) if final else None,
        "user": None,
        "metadata": {},
    }


def responses_events(
    step: Step,
    *,
    model: str,
    response_id: str,
    request: dict[str, Any],
    pieces: Any,
    sse: Any,
) -> list[bytes]:
    """The stream for one step: ``pieces`` splits text, ``sse`` writes one event."""
    events: list[bytes] = []
    sequence = 0

    def emit(kind: str, body: dict[str, Any]) -> None:
        nonlocal sequence
        events.append(sse({"type": kind, "sequence_number": sequence, **body}, kind))
        sequence += 1

    def response(final: bool) -> dict[str, Any]:
        return response_object(
            step, model=model, response_id=response_id, request=request, final=final
        )

    emit("response.created", {"response": response(False)})
    emit("response.in_progress", {"response": response(False)})
    index = 0
    for item in step.get("reasoning") or []:
        added = {"id": item.get("id"), "type": "reasoning", "summary": []}
        emit("response.output_item.added", {"output_index": index, "item": added})
        for part_index, part in enumerate(item.get("summary") or []):
            where = {"item_id": item.get("id"), "output_index": index, "summary_index": part_index}
            emit(
                "response.reasoning_summary_part.added",
                {**where, "part": {"type": "summary_text", "text": ""}},
            )
            for piece in pieces(str(part.get("text") or "")):
                emit("response.reasoning_summary_text.delta", {**where, "delta": piece})
            emit("response.reasoning_summary_text.done", {**where, "text": part.get("text", "")})
            emit("response.reasoning_summary_part.done", {**where, "part": part})
        emit("response.output_item.done", {"output_index": index, "item": item})
        index += 1
    text = str(step.get("text") or "")
    if text:
        item_id = f"msg_{response_id}"
        emit(
            "response.output_item.added",
            {"output_index": index, "item": _message_item(item_id, "", "in_progress")},
        )
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        emit(
            "response.content_part.added",
            {**where, "part": {"type": "output_text", "text": "", "annotations": []}},
        )
        for piece in pieces(text):
            emit("response.output_text.delta", {**where, "delta": piece, "logprobs": []})
        emit("response.output_text.done", {**where, "text": text, "logprobs": []})
        emit(
            "response.content_part.done",
            {**where, "part": {"type": "output_text", "text": text, "annotations": []}},
        )
        emit(
            "response.output_item.done",
            {"output_index": index, "item": _message_item(item_id, text, "completed")},
        )
        index += 1
    for i, call in enumerate(step.get("tool_calls") or []):
        arguments = str(call.get("arguments") or "")
        start = _call_item(call, i, "", "in_progress")
        emit("response.output_item.added", {"output_index": index, "item": start})
        where = {"item_id": start["id"], "output_index": index}
        for piece in pieces(arguments):
            emit("response.function_call_arguments.delta", {**where, "delta": piece})
        emit("response.function_call_arguments.done", {**where, "arguments": arguments})
        emit(
            "response.output_item.done",
            {"output_index": index, "item": _call_item(call, i, arguments, "completed")},
        )
        index += 1
    final = response(True)
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    emit(kind, {"response": final})
    return events


def responses_error_event(error: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "error",
        "code": error.get("type"),
        "message": error.get("message", ""),
        "param": None,
        "sequence_number": 0,
    }


def responses_failed_events(
    error: dict[str, Any],
    *,
    model: str,
    response_id: str,
    request: dict[str, Any],
    sse: Any,
) -> list[bytes]:
    """A streamed request the API refuses after accepting it: ``response.created``, then
    ``response.failed`` whose ``response.error`` (``code``, ``message``) says why, in a 200
    stream. This is how the API ends a streamed request whose input is too long: Codex CLI
    reads ``response.failed`` with ``error.code == "context_length_exceeded"`` as a full
    window (openai/codex ``codex-rs/codex-api/src/sse/responses.rs``,
    ``is_context_window_error``) and met it with an API key as "stream disconnected before
    completion: Your input exceeds the context window of this model…" (openai/codex #4441);
    proxies relay the same frame (james-6-23/codex2api #310)."""
    start = response_object({}, model=model, response_id=response_id, request=request, final=False)
    failed = {**start, "status": "failed", "error": error}
    return [
        sse(
            {"type": "response.created", "sequence_number": 0, "response": start},
            "response.created",
        ),
        sse(
            {"type": "response.in_progress", "sequence_number": 1, "response": start},
            "response.in_progress",
        ),
        sse(
            {"type": "response.failed", "sequence_number": 2, "response": failed}, "response.failed"
        ),
    ]

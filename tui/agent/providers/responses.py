"""The OpenAI Responses API wire format (``POST /v1/responses``).

Reasoning models keep their reasoning between turns only through this API. We send
``store: false`` (nothing of the user's work stays on OpenAI's servers) and ask for
``include: ["reasoning.encrypted_content"]``: each ``reasoning`` output item then arrives with
its reasoning encrypted, and is sent back verbatim before the calls it led to, as Codex CLI
does, so the model keeps its chain of thought across tool calls without server state.

The conversation is a list of items rather than messages: user and assistant ``message``
items, ``function_call`` items (``call_id``, ``name``, ``arguments`` text) and
``function_call_output`` items. The stream is typed events ending with ``response.completed``
(or ``.incomplete`` / ``.failed``); there is no ``[DONE]``. Tools are the Chat Completions
definitions flattened (``{"type": "function", "name", "description", "parameters"}``), so the
registry needs no third format. As in the other providers, usage travels only in
``Completed.usage``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2 as httpx

from tui.agent.providers.base import (
    Completed,
    Message,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    ReasoningItem,
    StreamInterrupted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    UsageReport,
    replay_name,
)
from tui.agent.providers.context_errors import (
    CONTEXT_LENGTH_CODE,
    ContextLengthExceeded,
    stated_limit,
)
from tui.agent.providers.http import HttpProvider
from tui.agent.providers.retry import (
    DEFAULT_DEADLINE,
    DEFAULT_IDLE_TIMEOUT,
    error_message_from_body,
)
from tui.agent.providers.sse import aiter_sse_bytes, drain_rest

__all__ = [
    "DEFAULT_BASE_URL",
    "ResponsesProvider",
    "ResponsesStreamAssembler",
    "build_request_body",
    "events_from_response",
    "responses_tools",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
INCLUDE = ["reasoning.encrypted_content"]
_RETRYABLE_CODES = ("server_error", "rate_limit_exceeded", "overloaded", "timeout")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _usage(data: Any) -> UsageReport:
    data = _dict(data)
    details = _dict(data.get("input_tokens_details"))
    return UsageReport(
        input_tokens=_int(data.get("input_tokens")),
        output_tokens=_int(data.get("output_tokens")),
        cache_read_tokens=_int(details.get("cached_tokens")),
        cache_write_tokens=_int(details.get("cache_write_tokens")),
        reasoning_tokens=_int(_dict(data.get("output_tokens_details")).get("reasoning_tokens")),
    )


def _error(error: Any, what: str = "error") -> ProviderError:
    """An ``error`` event or a ``response.failed`` event's ``response.error`` as an error.

    A full window comes this way on a streamed request: ``response.failed`` with
    ``error.code == "context_length_exceeded"`` (what Codex CLI checks, openai/codex
    ``codex-rs/codex-api/src/sse/responses.rs``), and it must reach the loop as
    ``ContextLengthExceeded`` so the loop compacts and retries instead of failing the turn.
    """
    error = _dict(error)
    code = str(error.get("code") or error.get("type") or "")
    message = error_message_from_body(json.dumps({"error": error}).encode(), "unknown error")
    label = f" ({code})" if code else ""
    text = f"OpenAI Responses API {what}{label}: {message}"
    if CONTEXT_LENGTH_CODE in (error.get("code"), error.get("type")):
        return ContextLengthExceeded(text, limit=stated_limit(message))
    return ProviderError(text, retryable=any(word in code for word in _RETRYABLE_CODES))


def _summary_text(item: dict[str, Any]) -> str:
    parts = item.get("summary")
    if not isinstance(parts, list):
        return ""
    return "\n\n".join(
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def _reasoning(item: dict[str, Any]) -> ReasoningItem:
    return ReasoningItem(api="responses", data=item, text=_summary_text(item))


def _message_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if not isinstance(content, list):
        return ""
    return "".join(
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") == "output_text"
        and isinstance(part.get("text"), str)
    )


def _stop_reason(response: dict[str, Any], *, has_tool_calls: bool) -> str:
    status = response.get("status")
    if status == "incomplete":
        reason = _dict(response.get("incomplete_details")).get("reason")
        return "max_tokens" if reason in (None, "max_output_tokens") else str(reason)
    return "tool_use" if has_tool_calls else "end_turn"


@dataclass
class _Call:
    ordinal: int
    call_id: str
    name: str
    arguments: list[str] = field(default_factory=list)
    final: str | None = None
    """The whole arguments text from ``output_item.done``, which wins over the deltas."""


@dataclass
class ResponsesStreamAssembler:
    """Folds Responses stream events into provider events and, at the end, one ``Completed``."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    """By ``output_index``."""
    reasoning: dict[int, ReasoningItem] = field(default_factory=dict)
    usage: UsageReport = field(default_factory=UsageReport)
    response: dict[str, Any] | None = None
    """The final response object, once ``response.completed`` or ``.incomplete`` arrived."""

    def feed(self, data: dict[str, Any]) -> list[ProviderEvent]:
        kind = data.get("type")
        if kind == "error":
            raise _error(data)
        if kind == "response.failed":
            raise _error(_dict(data.get("response")).get("error"), "failure")
        if kind in ("response.completed", "response.incomplete"):
            self.response = _dict(data.get("response"))
            self.usage = _usage(self.response.get("usage"))
            return []
        if kind == "response.output_text.delta":
            delta = data.get("delta")
            if isinstance(delta, str) and delta:
                self.text.append(delta)
                return [TextDelta(delta)]
        elif kind == "response.reasoning_summary_text.delta":
            delta = data.get("delta")
            if isinstance(delta, str) and delta:
                return [ReasoningDelta(delta)]
        elif kind == "response.output_item.added":
            return self._item_added(data)
        elif kind == "response.function_call_arguments.delta":
            call = self.calls.get(data.get("output_index"))  # type: ignore[arg-type]
            delta = data.get("delta")
            if call is not None and isinstance(delta, str) and delta:
                call.arguments.append(delta)
                return [ToolCallDelta(call.ordinal, None, None, delta)]
        elif kind == "response.output_item.done":
            self._item_done(data)
        return []

    def _item_added(self, data: dict[str, Any]) -> list[ProviderEvent]:
        item = _dict(data.get("item"))
        index = data.get("output_index")
        if item.get("type") != "function_call" or not isinstance(index, int):
            return []
        call = _Call(
            ordinal=len(self.calls),
            call_id=str(item.get("call_id") or f"call_{len(self.calls)}"),
            name=str(item.get("name") or ""),
        )
        self.calls[index] = call
        return [ToolCallDelta(call.ordinal, call.call_id, call.name, "")]

    def _item_done(self, data: dict[str, Any]) -> None:
        item = _dict(data.get("item"))
        index = data.get("output_index")
        if not isinstance(index, int):
            return
        if item.get("type") == "reasoning":
            self.reasoning[index] = _reasoning(item)
        elif item.get("type") == "function_call" and index in self.calls:
            arguments = item.get("arguments")
            if isinstance(arguments, str):
                self.calls[index].final = arguments

    def finish(self) -> Completed:
        calls = [
            ToolCall(
                id=call.call_id,
                name=call.name,
                arguments=(call.final if call.final is not None else "".join(call.arguments))
                or "{}",
            )
            for _, call in sorted(self.calls.items())
        ]
        return Completed(
            text="".join(self.text),
            tool_calls=calls,
            stop_reason=_stop_reason(self.response or {}, has_tool_calls=bool(calls)),
            usage=self.usage,
            reasoning=[item for _, item in sorted(self.reasoning.items())],
        )


def events_from_response(data: dict[str, Any]) -> list[ProviderEvent]:
    """A whole ``response`` object (``stream=False``) as the events a stream ends with."""
    if data.get("error"):
        raise _error(data["error"], "failure")
    output = data.get("output")
    if not isinstance(output, list):
        raise ProviderError("OpenAI Responses API answered without any output")
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningItem] = []
    for item in output:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            text.append(_message_text(item))
        elif item.get("type") == "reasoning":
            reasoning.append(_reasoning(item))
        elif item.get("type") == "function_call":
            arguments = item.get("arguments")
            calls.append(
                ToolCall(
                    id=str(item.get("call_id") or f"call_{len(calls)}"),
                    name=str(item.get("name") or ""),
                    arguments=arguments if isinstance(arguments, str) and arguments else "{}",
                )
            )
    joined = "".join(text)
    events: list[ProviderEvent] = [TextDelta(joined)] if joined else []
    events.append(
        Completed(
            text=joined,
            tool_calls=calls,
            stop_reason=_stop_reason(data, has_tool_calls=bool(calls)),
            usage=_usage(data.get("usage")),
            reasoning=reasoning,
        )
    )
    return events


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    if not message.images:
        return message.content
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "input_text", "text": message.content})
    parts.extend(
        {"type": "input_image", "image_url": f"data:{image.mime_type};base64,{image.data}"}
        for image in message.images
    )
    return parts


def input_items(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation as Responses input items; reasoning items go back verbatim, before
    the text and calls of their turn, as the API requires."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    # Text, or text and the images the tool returned (the API takes both).
                    "output": _user_content(message),
                }
            )
        elif message.role == "assistant":
            items.extend(item.data for item in message.reasoning if item.api == "responses")
            if message.content:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": message.content}],
                    }
                )
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": replay_name(call.name),
                    "arguments": call.arguments or "{}",
                }
                for call in message.tool_calls
            )
        else:
            items.append({"type": "message", "role": "user", "content": _user_content(message)})
    return items


def responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions tool definitions, flattened to the Responses shape."""
    flat: list[dict[str, Any]] = []
    for tool in tools:
        function = _dict(tool.get("function"))
        if tool.get("type") != "function" or not function:
            flat.append(tool)
            continue
        entry: dict[str, Any] = {"type": "function", "name": function.get("name", "")}
        if "description" in function:
            entry["description"] = function["description"]
        entry["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
        entry["strict"] = bool(function.get("strict", False))
        flat.append(entry)
    return flat


def build_request_body(
    *,
    model: str,
    system: str,
    messages: list[Message],
    tools: list[dict[str, Any]],
    max_tokens: int | None,
    stream: bool,
    reasoning_effort: str | None = None,
) -> dict[str, Any]:
    """The JSON body for ``POST /responses``: nothing stored server-side, encrypted
    reasoning asked for; no ``tools`` key when there are none. Nothing in it varies between
    requests but the new items, so the prefix cache can serve the rest."""
    body: dict[str, Any] = {"model": model}
    if system:
        body["instructions"] = system
    if tools:  # before the input, which is the only part that grows
        body["tools"] = responses_tools(tools)
    body["input"] = input_items(messages)
    body["store"] = False
    body["include"] = list(INCLUDE)
    body["stream"] = stream
    if max_tokens is not None:
        body["max_output_tokens"] = max_tokens
    if reasoning_effort:
        body["reasoning"] = {"effort": reasoning_effort, "summary": "auto"}
    return body


class ResponsesProvider(HttpProvider):
    """The Responses API over HTTP, streaming or not, with retries before the first event."""

    api_name = "OpenAI Responses API"
    key_env = "OPENAI_API_KEY"
    name = "openai-responses"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str = DEFAULT_BASE_URL,
        stream: bool = True,
        client: httpx.AsyncClient | None = None,
        max_retries: int = 4,
        timeout: float | httpx.Timeout | None = None,
        backoff_base: float = 0.5,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        reasoning_effort: str | None = None,
    ) -> None:
        """``max_retries`` counts every attempt, the first included; ``reasoning_effort``
        (``low``, ``medium``, ``high``…) asks a reasoning model for that much effort and a
        summary of its reasoning."""
        self._connect(
            model,
            api_key=api_key,
            base_url=base_url,
            stream=stream,
            client=client,
            max_retries=max_retries,
            timeout=timeout,
            backoff_base=backoff_base,
            idle_timeout=idle_timeout,
            deadline=deadline,
        )
        self.reasoning_effort = reasoning_effort or None

    @property
    def tool_format(self) -> Literal["openai"]:
        return "openai"

    @property
    def url(self) -> str:
        return f"{self.base_url}/responses"

    def _headers(self) -> dict[str, str]:
        headers = self._accept()
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def stream(
        self,
        *,
        system: str,
        messages: list[Message],
        tools: list[dict[str, Any]],
        max_tokens: int | None = None,
    ) -> AsyncIterator[ProviderEvent]:
        body = build_request_body(
            model=self.model,
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=max_tokens,
            stream=self.streaming,
            reasoning_effort=self.reasoning_effort,
        )
        parse = self._parse_stream if self.streaming else self._parse_json
        return self._transport.stream(self.url, body, self._headers(), parse)

    async def _parse_json(self, response: httpx.Response) -> AsyncGenerator[ProviderEvent, None]:
        for event in events_from_response(self._load(await response.aread(), "a response")):
            yield event

    async def _parse_stream(self, response: httpx.Response) -> AsyncGenerator[ProviderEvent, None]:
        if self._answered_json(response):
            async for event in self._parse_json(response):
                yield event
            return
        assembler = ResponsesStreamAssembler()
        try:
            events = aiter_sse_bytes(response.aiter_bytes())
            async for sse in events:
                data = sse.data.strip()
                if not data or data == "[DONE]":
                    continue
                try:
                    loaded = self._load(data, "a stream event", stream=True)
                except ProviderError:
                    if sse.complete:
                        raise
                    break  # the connection closed mid-line: judged below as any early end
                for event in assembler.feed(loaded):
                    yield event
                if assembler.response is not None:
                    await drain_rest(events)
                    break
        except httpx.TransportError:
            if assembler.response is None:
                raise  # the retry layer reports it as StreamInterrupted
        if assembler.response is None:
            raise StreamInterrupted(
                "the OpenAI Responses API stream ended before response.completed",
                retryable=True,
            )
        yield assembler.finish()

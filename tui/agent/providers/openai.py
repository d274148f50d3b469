"""The OpenAI Chat Completions wire format, and every server that copies it.

Chat Completions is the lingua franca of local and hosted model servers (OpenAI, Ollama,
vLLM, llama.cpp, OpenRouter), so this provider sticks to the common subset and is lenient
where those servers differ: a missing ``index`` on tool-call deltas, a ``stop`` finish reason
on a turn that called tools, a JSON answer to a streaming request, no key at all.

Streamed tool calls arrive in pieces keyed by ``index``: the first piece of each call carries
its id and name, later ones only fragments of the arguments text. ``ChatStreamAssembler``
joins them; it is separate from the HTTP code so the recorded real streams can drive it.

Token usage travels only in ``Completed.usage``: no separate ``UsageReport`` event is yielded,
because the loop adds both and would count the turn twice.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2 as httpx

from tui.agent.providers.base import (
    Completed,
    Message,
    ProviderError,
    ProviderEvent,
    StreamInterrupted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    UsageReport,
    replay_name,
)
from tui.agent.providers.http import HttpProvider
from tui.agent.providers.retry import (
    DEFAULT_DEADLINE,
    DEFAULT_IDLE_TIMEOUT,
    error_message_from_body,
)
from tui.agent.providers.sse import aiter_sse_bytes, drain_rest
from tui.agent.providers.wire_json import dump_arguments

__all__ = [
    "DEFAULT_BASE_URL",
    "ChatStreamAssembler",
    "OpenAIProvider",
    "build_request_body",
    "events_from_completion",
    "normalise_finish_reason",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_FINISH_REASONS = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
}


def normalise_finish_reason(reason: str | None, *, has_tool_calls: bool) -> str:
    """OpenAI's words to the loop's; ``stop`` with tool calls counts as ``tool_use``.

    Ollama and some vLLM versions finish a tool-calling turn with ``stop``; the calls are
    still there and still need running.
    """
    if has_tool_calls and reason in (None, "stop", "tool_calls", "function_call"):
        return "tool_use"
    if reason is None:
        return "end_turn"
    return _FINISH_REASONS.get(reason, reason)


def _usage(data: Any) -> UsageReport | None:
    if not isinstance(data, dict):
        return None
    prompt = _dict(data.get("prompt_tokens_details"))
    completion = _dict(data.get("completion_tokens_details"))
    return UsageReport(
        input_tokens=_int(data.get("prompt_tokens")),
        output_tokens=_int(data.get("completion_tokens")),
        cache_read_tokens=_int(prompt.get("cached_tokens")),
        cache_write_tokens=_int(prompt.get("cache_write_tokens")),
        reasoning_tokens=_int(completion.get("reasoning_tokens")),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    """A non-empty string or ``None``: servers send ``""`` and ``null`` for "absent" alike."""
    return value if isinstance(value, str) and value else None


def _new_call_id() -> str:
    """For servers that send calls without ids: the loop needs one to pair the result."""
    return f"call_{uuid.uuid4().hex[:24]}"


def _text_of(content: Any) -> str:
    """``content`` as a string, whether the server sent a string, null or text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


@dataclass
class _CallInProgress:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass
class ChatStreamAssembler:
    """Folds ``chat.completion.chunk`` objects into events and, at the end, one ``Completed``."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _CallInProgress] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: UsageReport | None = None

    def feed(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        error = chunk.get("error")
        if error is not None:
            raise _stream_error(error)
        usage = _usage(chunk.get("usage"))
        if usage is not None:
            self.usage = usage
        events: list[ProviderEvent] = []
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return events
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # n > 1 is never requested; ignore extra choices
            delta = choice.get("delta")
            if isinstance(delta, dict):
                content = delta.get("content")
                if isinstance(content, str) and content:
                    self.text.append(content)
                    events.append(TextDelta(content))
                for piece in delta.get("tool_calls") or []:
                    if isinstance(piece, dict):
                        event = self._tool_piece(piece)
                        if event is not None:
                            events.append(event)
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        return events

    def _tool_piece(self, piece: dict[str, Any]) -> ToolCallDelta | None:
        function = _dict(piece.get("function"))
        call_id = _str(piece.get("id"))
        name = _str(function.get("name"))
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send an object, not text
            arguments = dump_arguments(arguments)
        arguments = arguments if isinstance(arguments, str) else ""
        index = self._index_for(piece.get("index"), call_id, name)
        call = self.calls.get(index)
        first = call is None
        if call is None:
            call = self.calls[index] = _CallInProgress(id=call_id or _new_call_id(), name="")
        if name and name != call.name:
            # Normally the whole name comes once; append in case a server streams it.
            call.name = name if not call.name else call.name + name
        if arguments:
            call.arguments.append(arguments)
        if not first and not arguments and not name:
            return None
        return ToolCallDelta(
            index=index,
            id=call.id if first else None,
            name=name or None,
            arguments_delta=arguments,
        )

    def _index_for(self, index: Any, call_id: str | None, name: str | None) -> int:
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        # No index (some Ollama versions): a new id or name starts a new call.
        for known, call in self.calls.items():
            if call_id is not None and call.id == call_id:
                return known
        if call_id is not None or name or not self.calls:
            return max(self.calls, default=-1) + 1
        return max(self.calls)

    def finish(self) -> Completed:
        """Everything assembled; usage is zero when the server sent none."""
        calls = [
            ToolCall(id=call.id, name=call.name, arguments="".join(call.arguments) or "{}")
            for _, call in sorted(self.calls.items())
        ]
        return Completed(
            text="".join(self.text),
            tool_calls=calls,
            stop_reason=normalise_finish_reason(self.finish_reason, has_tool_calls=bool(calls)),
            usage=self.usage or UsageReport(),
        )


def _stream_error(error: Any) -> ProviderError:
    """An error object inside a 200 stream (OpenRouter, vLLM do this)."""
    message = error_message_from_body(json.dumps({"error": error}).encode())
    kind = ""
    code: Any = None
    if isinstance(error, dict):
        kind = str(error.get("type") or "")
        code = error.get("code")
    retryable = (
        any(word in kind for word in ("server", "overloaded", "rate_limit", "timeout"))
        or (isinstance(code, int) and (code >= 500 or code == 429))
        or (isinstance(code, str) and code.isdigit() and (int(code) >= 500 or code == "429"))
    )
    return ProviderError(f"OpenAI API error in the stream: {message}", retryable=retryable)


def events_from_completion(data: dict[str, Any]) -> list[ProviderEvent]:
    """A whole ``chat.completion`` (``stream=False``) as the events a stream would end with."""
    if "error" in data and not data.get("choices"):
        raise _stream_error(data["error"])
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError("OpenAI API answered without any choices")
    choice = choices[0]
    message = _dict(choice.get("message"))
    text = _text_of(message.get("content"))
    calls: list[ToolCall] = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, dict):
            continue
        function = _dict(raw.get("function"))
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = dump_arguments(arguments)
        calls.append(
            ToolCall(
                id=_str(raw.get("id")) or _new_call_id(),
                name=str(function.get("name") or ""),
                arguments=arguments if isinstance(arguments, str) and arguments else "{}",
            )
        )
    usage = _usage(data.get("usage"))
    events: list[ProviderEvent] = []
    if text:
        events.append(TextDelta(text))
    events.append(
        Completed(
            text=text,
            tool_calls=calls,
            stop_reason=normalise_finish_reason(
                choice.get("finish_reason"), has_tool_calls=bool(calls)
            ),
            usage=usage or UsageReport(),
        )
    )
    return events


def _messages_to_wire(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation as Chat Completions messages. A tool message carries text only, so
    the images tools returned follow their results in one user message, naming each call:
    the model sees them at the same point of the conversation as in the other wire formats."""
    wire: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for message in messages:
        if message.role != "tool" and images:
            wire.append({"role": "user", "content": images})
            images = []
        wire.append(_message_to_wire(message))
        if message.role == "tool" and message.images:
            images.append(
                {"type": "text", "text": f"Images returned by tool call {message.tool_call_id}:"}
            )
            images.extend(_image_parts(message))
    if images:
        wire.append({"role": "user", "content": images})
    return wire


def _image_parts(message: Message) -> list[dict[str, Any]]:
    return [
        {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}
        for image in message.images
    ]


def _message_to_wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    if message.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant"}
        if message.tool_calls:
            wire["content"] = message.content or None
            wire["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": replay_name(call.name),
                        "arguments": call.arguments or "{}",
                    },
                }
                for call in message.tool_calls
            ]
        else:
            wire["content"] = message.content
        return wire
    if not message.images:
        return {"role": "user", "content": message.content}
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "text": message.content})
    parts.extend(_image_parts(message))
    return {"role": "user", "content": parts}


def build_request_body(
    *,
    model: str,
    system: str,
    messages: list[Message],
    tools: list[dict[str, Any]],
    max_tokens: int | None,
    stream: bool,
    max_tokens_field: str = "max_tokens",
    reasoning_effort: str | None = None,
) -> dict[str, Any]:
    """The JSON body for ``POST /chat/completions``; no ``tools`` key when there are none.

    Some servers reject ``"tools": []``, and sending it would also change what others do.
    Nothing here varies between requests but the new messages (no timestamps, no ids, keys
    in a fixed order), so the body of one request is a byte prefix of the next one's and
    the server's automatic prefix cache can serve it.
    """
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    wire.extend(_messages_to_wire(messages))
    body: dict[str, Any] = {"model": model}
    if tools:  # before the messages, which are the only part that grows
        body["tools"] = tools
    body["messages"] = wire
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    if max_tokens is not None:
        body[max_tokens_field] = max_tokens
    if reasoning_effort:
        body["reasoning_effort"] = reasoning_effort
    return body


class OpenAIProvider(HttpProvider):
    """Chat Completions over HTTP, streaming or not, with retries before the first event."""

    api_name = "OpenAI API"
    key_env = "OPENAI_API_KEY"
    name = "openai"

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
        max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None,
        reasoning_effort: str | None = None,
    ) -> None:
        """``max_retries`` counts every attempt, the first included; ``reasoning_effort``
        (``low``, ``medium``, ``high``…) is sent as is to reasoning models.

        ``max_tokens_field`` defaults to ``max_completion_tokens`` for api.openai.com (whose
        newer models reject ``max_tokens``) and ``max_tokens`` for everyone else.
        """
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
        if max_tokens_field is None:
            official = httpx.URL(self.base_url).host == "api.openai.com"
            max_tokens_field = "max_completion_tokens" if official else "max_tokens"
        self.max_tokens_field = max_tokens_field

    @property
    def tool_format(self) -> Literal["openai"]:
        return "openai"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

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
            max_tokens_field=self.max_tokens_field,
            reasoning_effort=self.reasoning_effort,
        )
        parse = self._parse_stream if self.streaming else self._parse_json
        return self._transport.stream(self.url, body, self._headers(), parse)

    async def _parse_json(self, response: httpx.Response) -> AsyncGenerator[ProviderEvent, None]:
        data = self._load(await response.aread(), "a response")
        for event in events_from_completion(data):
            yield event

    async def _parse_stream(self, response: httpx.Response) -> AsyncGenerator[ProviderEvent, None]:
        if self._answered_json(response):  # a server that ignored "stream": true
            async for event in self._parse_json(response):
                yield event
            return
        assembler = ChatStreamAssembler()
        done = False
        try:
            events = aiter_sse_bytes(response.aiter_bytes())
            async for sse in events:
                data = sse.data.strip()
                if not data:
                    continue
                if data == "[DONE]":
                    done = True
                    await drain_rest(events)
                    break
                try:
                    chunk = self._load(data, "a stream chunk", stream=True)
                except ProviderError:
                    if sse.complete:
                        raise
                    break  # the connection closed mid-line: judged below as any early end
                if sse.event == "error" and "error" not in chunk:
                    chunk = {"error": chunk}
                for event in assembler.feed(chunk):
                    yield event
        except httpx.TransportError:
            if assembler.finish_reason is None:
                raise  # the retry layer reports it as StreamInterrupted
        if not done and assembler.finish_reason is None:
            raise StreamInterrupted(
                "the OpenAI API stream ended before [DONE]",
                retryable=True,
            )
        # A finish_reason means the answer is whole even when the connection then dropped:
        # only the usage chunk and [DONE] are lost, and some servers never send [DONE].
        yield assembler.finish()

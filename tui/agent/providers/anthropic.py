"""The Anthropic Messages wire format.

Messages differs from Chat Completions in ways that matter to the loop: the system prompt is
a top-level field, tool results are ``tool_result`` blocks inside a *user* message (several
results of one turn must share one message), and a streamed tool input is JSON text in
``input_json_delta`` pieces that is only valid once the block is complete. When the model hits
``max_tokens`` mid-call the text is cut; it is passed on as is so the tool registry rejects it
with a message the model can act on, instead of this module guessing or crashing.

``MessagesStreamAssembler`` is separate from the HTTP code so recorded real streams can drive it.
Token usage travels only in ``Completed.usage``: no separate ``UsageReport`` event is yielded,
because the loop adds both and would count the turn twice.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2 as httpx

from tui.agent.providers.anthropic_cache import MAX_BREAKPOINTS, cache_conversation, mark
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
from tui.agent.providers.http import HttpProvider
from tui.agent.providers.retry import (
    DEFAULT_DEADLINE,
    DEFAULT_IDLE_TIMEOUT,
    error_message_from_body,
)
from tui.agent.providers.sse import aiter_sse_bytes, drain_rest
from tui.agent.providers.wire_json import dump_arguments
from tui.safe_text import loads_strict

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "AnthropicProvider",
    "MessagesStreamAssembler",
    "build_request_body",
    "events_from_message",
    "normalise_stop_reason",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192

_RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


def normalise_stop_reason(reason: str | None, *, has_tool_calls: bool) -> str:
    """``stop_sequence`` is an ordinary end of turn for the loop; unknown words pass through."""
    if reason is None:
        return "tool_use" if has_tool_calls else "end_turn"
    if reason == "stop_sequence":
        return "end_turn"
    return reason


_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _merge_usage(data: Any, into: dict[str, int]) -> dict[str, int]:
    """Merge a ``usage`` object; later events repeat or update earlier counts."""
    if isinstance(data, dict):
        for key in _USAGE_KEYS:
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                into[key] = value
    return into


def _usage(counts: dict[str, int]) -> UsageReport:
    """Anthropic's ``input_tokens`` leaves out what was read from or written to the cache;
    ``UsageReport.input_tokens`` is the whole prompt, so the three are added up."""
    read = counts.get("cache_read_input_tokens", 0)
    write = counts.get("cache_creation_input_tokens", 0)
    return UsageReport(
        input_tokens=counts.get("input_tokens", 0) + read + write,
        output_tokens=counts.get("output_tokens", 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _error(error: Any) -> ProviderError:
    """An ``error`` event or body; overloads and server errors may be retried."""
    kind = error.get("type") if isinstance(error, dict) else None
    message = error_message_from_body(json.dumps({"error": error}).encode(), "unknown error")
    label = f" ({kind})" if isinstance(kind, str) and kind else ""
    return ProviderError(
        f"Anthropic API error{label}: {message}", retryable=kind in _RETRYABLE_ERROR_TYPES
    )


@dataclass
class _ToolBlock:
    ordinal: int
    id: str
    name: str
    initial_input: Any
    partial_json: list[str] = field(default_factory=list)

    def arguments(self) -> str:
        """The raw input text; ``{}`` for none. Cut-off JSON stays cut off, on purpose."""
        text = "".join(self.partial_json)
        if text.strip():
            return text
        if isinstance(self.initial_input, dict) and self.initial_input:
            return dump_arguments(self.initial_input)
        return "{}"


@dataclass
class _ThinkingBlock:
    """A thinking block as it streams: the start block plus the joined deltas."""

    start: dict[str, Any]
    text: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)

    def item(self) -> ReasoningItem:
        return reasoning_item(self.block())

    def block(self) -> dict[str, Any]:
        """The block as the non-streaming API would have sent it."""
        if self.start.get("type") == "redacted_thinking":
            return dict(self.start)
        block = dict(self.start)
        block["thinking"] = "".join(self.text)
        if self.signature:
            block["signature"] = "".join(self.signature)
        return block


def reasoning_item(block: dict[str, Any]) -> ReasoningItem:
    text = block.get("thinking") if block.get("type") == "thinking" else ""
    return ReasoningItem(api="anthropic", data=block, text=text if isinstance(text, str) else "")


@dataclass
class MessagesStreamAssembler:
    """Folds Messages stream events into provider events and, at the end, one ``Completed``."""

    text: list[str] = field(default_factory=list)
    tools: dict[int, _ToolBlock] = field(default_factory=dict)
    """By content block index."""
    stop_reason: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    stopped: bool = False
    thinking: dict[int, _ThinkingBlock] = field(default_factory=dict)
    """By content block index: thinking and redacted_thinking blocks, in arrival order."""

    def feed(self, name: str, data: dict[str, Any]) -> list[ProviderEvent]:
        kind = data.get("type") if isinstance(data.get("type"), str) else name
        if kind == "error":
            raise _error(data.get("error", data))
        if kind == "message_start":
            message = data.get("message")
            if isinstance(message, dict) and "usage" in message:
                _merge_usage(message["usage"], self.counts)
        elif kind == "content_block_start":
            return self._block_start(data)
        elif kind == "content_block_delta":
            return self._block_delta(data)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self.stop_reason = delta["stop_reason"]
            if "usage" in data:
                _merge_usage(data["usage"], self.counts)
        elif kind == "message_stop":
            self.stopped = True
        # ping, content_block_stop and unknown events carry nothing the loop needs.
        return []

    def _block_start(self, data: dict[str, Any]) -> list[ProviderEvent]:
        index = data.get("index")
        block = data.get("content_block")
        if not isinstance(block, dict) or not isinstance(index, int):
            return []
        if block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                self.text.append(text)
                return [TextDelta(text)]
        elif block.get("type") == "tool_use":
            tool = _ToolBlock(
                ordinal=len(self.tools),
                id=str(block.get("id") or f"toolu_{len(self.tools)}"),
                name=str(block.get("name") or ""),
                initial_input=block.get("input"),
            )
            self.tools[index] = tool
            return [
                ToolCallDelta(index=tool.ordinal, id=tool.id, name=tool.name, arguments_delta="")
            ]
        elif block.get("type") in ("thinking", "redacted_thinking"):
            self.thinking[index] = _ThinkingBlock(start=block)
            text = block.get("thinking")
            if isinstance(text, str) and text:
                self.thinking[index].text.append(text)
                return [ReasoningDelta(text)]
        return []  # server tools: not surfaced

    def _block_delta(self, data: dict[str, Any]) -> list[ProviderEvent]:
        delta = data.get("delta")
        if not isinstance(delta, dict):
            return []
        if delta.get("type") == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and text:
                self.text.append(text)
                return [TextDelta(text)]
        elif delta.get("type") == "input_json_delta":
            tool = self.tools.get(data.get("index"))  # type: ignore[arg-type]
            piece = delta.get("partial_json")
            if tool is not None and isinstance(piece, str) and piece:
                tool.partial_json.append(piece)
                return [
                    ToolCallDelta(index=tool.ordinal, id=None, name=None, arguments_delta=piece)
                ]
        elif delta.get("type") in ("thinking_delta", "signature_delta"):
            block = self.thinking.get(data.get("index"))  # type: ignore[arg-type]
            key = "thinking" if delta["type"] == "thinking_delta" else "signature"
            piece = delta.get(key)
            if block is not None and isinstance(piece, str) and piece:
                (block.text if key == "thinking" else block.signature).append(piece)
                if key == "thinking":
                    return [ReasoningDelta(piece)]
        return []

    def finish(self) -> Completed:
        """Everything assembled, including a cut-off tool input after ``max_tokens``."""
        calls = [
            ToolCall(id=tool.id, name=tool.name, arguments=tool.arguments())
            for tool in sorted(self.tools.values(), key=lambda tool: tool.ordinal)
        ]
        return Completed(
            text="".join(self.text),
            tool_calls=calls,
            stop_reason=normalise_stop_reason(self.stop_reason, has_tool_calls=bool(calls)),
            usage=_usage(self.counts),
            reasoning=[block.item() for _, block in sorted(self.thinking.items())],
        )


def events_from_message(data: dict[str, Any]) -> list[ProviderEvent]:
    """A whole ``message`` object (``stream=False``) as the events a stream ends with."""
    if data.get("type") == "error" or ("error" in data and "content" not in data):
        raise _error(data.get("error", data))
    content = data.get("content")
    if not isinstance(content, list):
        raise ProviderError("Anthropic API answered without any content")
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningItem] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") in ("thinking", "redacted_thinking"):
            reasoning.append(reasoning_item(block))
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif block.get("type") == "tool_use":
            raw_input = block.get("input")
            calls.append(
                ToolCall(
                    id=str(block.get("id") or f"toolu_{len(calls)}"),
                    name=str(block.get("name") or ""),
                    arguments=dump_arguments(raw_input) if raw_input else "{}",
                )
            )
    joined = "".join(text)
    events: list[ProviderEvent] = []
    if joined:
        events.append(TextDelta(joined))
    usage = _usage(_merge_usage(data.get("usage"), {}))
    stop = data.get("stop_reason") if isinstance(data.get("stop_reason"), str) else None
    events.append(
        Completed(
            text=joined,
            tool_calls=calls,
            stop_reason=normalise_stop_reason(stop, has_tool_calls=bool(calls)),
            usage=usage,
            reasoning=reasoning,
        )
    )
    return events


def _tool_input(arguments: str) -> dict[str, Any]:
    """The API wants an object; a call whose text never parsed is replayed as ``{}``.

    Parsed strictly: ``NaN``, ``1e999`` or a 5,000-digit integer would make the body invalid
    JSON (or unwritable), and a lone surrogate unencodable, on this request and every resume.
    """
    try:
        value = loads_strict(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _image_blocks(message: Message) -> list[dict[str, Any]]:
    return [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
        }
        for image in message.images
    ]


def _is_tool_results(wire: dict[str, Any]) -> bool:
    content = wire.get("content")
    return (
        wire.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and content[0].get("type") == "tool_result"
    )


def _messages_to_wire(messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            # Images a tool returned (a screenshot, an image file) travel inside its result.
            result: str | list[dict[str, Any]] = message.content
            if message.images:
                result = [{"type": "text", "text": message.content}, *_image_blocks(message)]
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": result,
                "is_error": message.is_error,
            }
            if wire and _is_tool_results(wire[-1]):
                # One user message holds every result of a turn, results before any text.
                content = wire[-1]["content"]
                position = next(
                    (i for i, b in enumerate(content) if b.get("type") != "tool_result"),
                    len(content),
                )
                content.insert(position, block)
            else:
                wire.append({"role": "user", "content": [block]})
        elif message.role == "assistant":
            # Thinking blocks go first and exactly as received: the API checks signatures
            # and refuses a tool_result turn whose thinking block was dropped or changed.
            blocks: list[dict[str, Any]] = [
                item.data for item in message.reasoning if item.api == "anthropic"
            ]
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": replay_name(call.name),
                    "input": _tool_input(call.arguments),
                }
                for call in message.tool_calls
            )
            if blocks:  # the API rejects an empty assistant turn
                wire.append({"role": "assistant", "content": blocks})
        else:
            extra = _image_blocks(message)
            if message.content or not extra:
                extra.append({"type": "text", "text": message.content})
            if wire and _is_tool_results(wire[-1]):
                wire[-1]["content"].extend(extra)
            elif message.images:
                wire.append({"role": "user", "content": extra})
            else:
                wire.append({"role": "user", "content": message.content})
    return wire


def build_request_body(
    *,
    model: str,
    system: str,
    messages: list[Message],
    tools: list[dict[str, Any]],
    max_tokens: int,
    stream: bool,
    thinking_budget: int | None = None,
    cache: bool = True,
) -> dict[str, Any]:
    """The JSON body for ``POST /v1/messages``; no ``tools`` key when there are none.

    With ``cache``, ``cache_control`` breakpoints go on the last tool, the system prompt and
    the last two user turns (four, the API's limit), so a long session pays for its prefix
    once and then reads it at a tenth of the price. With ``thinking_budget``, extended
    thinking is on; the API wants ``max_tokens`` above the budget, so it is raised if needed.
    """
    wire = _messages_to_wire(messages)
    used = 0
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    if thinking_budget:
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
        body["max_tokens"] = max(max_tokens, thinking_budget + DEFAULT_MAX_TOKENS)
    if system:
        if cache:
            body["system"] = [mark({"type": "text", "text": system})]
            used += 1
        else:
            body["system"] = system
    if tools:
        if cache:
            tools = [*tools[:-1], mark(tools[-1])]
            used += 1
        body["tools"] = tools
    if cache:
        wire = cache_conversation(wire, min(2, MAX_BREAKPOINTS - used))
    body["messages"] = wire
    body["stream"] = stream
    return body


class AnthropicProvider(HttpProvider):
    """Messages over HTTP, streaming or not, with retries before the first event."""

    api_name = "Anthropic API"
    key_env = "ANTHROPIC_API_KEY"
    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str = DEFAULT_BASE_URL,
        stream: bool = True,
        client: httpx.AsyncClient | None = None,
        max_retries: int = 4,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float | httpx.Timeout | None = None,
        backoff_base: float = 0.5,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        deadline: float = DEFAULT_DEADLINE,
        thinking_budget: int | None = None,
        cache: bool = True,
    ) -> None:
        """``max_retries`` counts every attempt, the first included; ``max_tokens`` is the
        default for requests that name none (the API requires one); ``thinking_budget``
        turns extended thinking on; ``cache`` places prompt-cache breakpoints."""
        self.thinking_budget = thinking_budget or None
        self.cache = cache
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
        # ANTHROPIC_BASE_URL has no /v1, but forgive it.
        self.base_url = self.base_url.removesuffix("/v1")
        self.max_tokens = max_tokens

    @property
    def tool_format(self) -> Literal["anthropic"]:
        return "anthropic"

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION, **self._accept()}
        if self._api_key:
            headers["x-api-key"] = self._api_key
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
            max_tokens=max_tokens if max_tokens is not None else self.max_tokens,
            stream=self.streaming,
            thinking_budget=self.thinking_budget,
            cache=self.cache,
        )
        parse = self._parse_stream if self.streaming else self._parse_json
        return self._transport.stream(self.url, body, self._headers(), parse)

    async def _parse_json(self, response: httpx.Response) -> AsyncGenerator[ProviderEvent, None]:
        for event in events_from_message(self._load(await response.aread(), "a response")):
            yield event

    async def _parse_stream(self, response: httpx.Response) -> AsyncGenerator[ProviderEvent, None]:
        if self._answered_json(response):
            async for event in self._parse_json(response):
                yield event
            return
        assembler = MessagesStreamAssembler()
        try:
            events = aiter_sse_bytes(response.aiter_bytes())
            async for sse in events:
                if not sse.data.strip():
                    continue
                try:
                    loaded = self._load(sse.data, "a stream event", stream=True)
                except ProviderError:
                    if sse.complete:
                        raise
                    break  # the connection closed mid-line: judged below as any early end
                for event in assembler.feed(sse.event, loaded):
                    yield event
                if assembler.stopped:
                    await drain_rest(events)
                    break
        except httpx.TransportError:
            if assembler.stop_reason is None:
                raise  # the retry layer reports it as StreamInterrupted
        if not assembler.stopped and assembler.stop_reason is None:
            raise StreamInterrupted(
                "the Anthropic API stream ended before message_stop",
                retryable=True,
            )
        # message_delta carries the stop reason; after it only message_stop can be missing,
        # so the answer is whole even if the connection then dropped.
        yield assembler.finish()

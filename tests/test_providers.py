"""Providers against real bytes on a real socket: recorded API streams and a scripted server.

Nothing here mocks httpx. The recorded fixtures prove we assemble what the real APIs really
send; the scripted server (itself checked against the official SDKs in
``test_wire_format_sdks.py``) drives retries, cuts, hangs and cancellation.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import logging
import socket
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from pathlib import Path
from typing import Any, Literal, cast

import httpx2 as httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

from tests.scripted_server import ScriptedServer
from tui.agent.providers.anthropic import AnthropicProvider
from tui.agent.providers.base import (
    Completed,
    ImagePart,
    Message,
    Provider,
    ProviderError,
    ProviderEvent,
    Retrying,
    StreamInterrupted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    UsageReport,
)
from tui.agent.providers.factory import make_provider
from tui.agent.providers.openai import ChatStreamAssembler, OpenAIProvider
from tui.agent.providers.retry import RetryPolicy, error_message_from_body, parse_retry_after
from tui.agent.providers.sse import SSEEvent, aiter_sse_bytes, aiter_sse_lines
from tui.errors import InvalidArguments
from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult

FIXTURES = Path(__file__).parent / "fixtures"
OPENAI_PARALLEL = FIXTURES / "openai_chat_stream_parallel_tool_calls.sse"
OPENAI_SINGLE = FIXTURES / "openai_chat_stream_single_tool_call.sse"
ANTHROPIC_TOOL_USE = FIXTURES / "anthropic_messages_stream_tool_use.sse"
ANTHROPIC_MAX_TOKENS = FIXTURES / "anthropic_messages_stream_tool_use_max_tokens.sse"

Api = Literal["openai", "anthropic"]
SECRET = "sk-test-SECRET-0123456789abcdef"
DEADLINE = 10.0
"""No test waits longer than this for anything: a hang fails instead of blocking the suite."""

# Event counts that stop each wire format after some text but before the finish reason.
# OpenAI: role chunk, text, text. Anthropic: message_start, block start, ping, text, text.
CUT_MID_ANSWER = {"openai": 3, "anthropic": 5}
# ...and before any text at all (OpenAI: role chunk; Anthropic: message_start, block, ping).
CUT_BEFORE_TEXT = {"openai": 1, "anthropic": 3}


# -- helpers -------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(base_dir=Path(__file__).parent) as running:
        yield running


def make(
    api: Api,
    server: ScriptedServer,
    *,
    stream: bool = True,
    api_key: str | None = "test-key",
    **kwargs: Any,
) -> Provider:
    kwargs.setdefault("backoff_base", 0.01)
    if api == "openai":
        return OpenAIProvider(
            "gpt-test", api_key=api_key, base_url=server.openai_base_url, stream=stream, **kwargs
        )
    return AnthropicProvider(
        "claude-test", api_key=api_key, base_url=server.base_url, stream=stream, **kwargs
    )


async def collect(
    provider: Provider,
    messages: list[Message] | None = None,
    *,
    system: str = "You are terse.",
    tools: list[dict[str, Any]] | None = None,
    max_tokens: int | None = None,
    into: list[ProviderEvent] | None = None,
) -> tuple[list[ProviderEvent], Completed]:
    """Every event of one response, bounded in time; ``into`` keeps them if it raises."""
    events: list[ProviderEvent] = [] if into is None else into

    async def run() -> None:
        stream = provider.stream(
            system=system,
            messages=messages or [Message("user", "hello")],
            tools=tools or [],
            max_tokens=max_tokens,
        )
        async with aclosing(cast(AsyncGenerator[ProviderEvent, None], stream)) as events_iter:
            async for event in events_iter:
                events.append(event)

    try:
        await asyncio.wait_for(run(), DEADLINE)
    finally:
        await provider.aclose()
    assert events, "no events at all"
    last = events[-1]
    assert isinstance(last, Completed), f"last event is {last!r}"
    assert sum(isinstance(event, Completed) for event in events) == 1
    return events, last


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def tool_definitions(api: Api) -> list[dict[str, Any]]:
    schema = {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "what to run"}},
        "required": ["command"],
    }
    if api == "openai":
        return [
            {
                "type": "function",
                "function": {"name": "run_shell", "description": "Run.", "parameters": schema},
            }
        ]
    return [{"name": "run_shell", "description": "Run.", "input_schema": schema}]


def replay(path: Path, chunk_size: int | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"raw_file": str(path)}
    if chunk_size:
        step["chunk_size"] = chunk_size
    return step


both_apis = pytest.mark.parametrize("api", ["openai", "anthropic"])
all_modes = pytest.mark.parametrize(
    ("api", "streaming"),
    [("openai", True), ("openai", False), ("anthropic", True), ("anthropic", False)],
)


# -- the recorded fixtures, replayed byte for byte -----------------------------------------


def test_openai_fixture_is_intact() -> None:
    """Its upstream name is its sha256: a changed byte (say, CRLF) would void the replay."""
    digest = hashlib.sha256(OPENAI_PARALLEL.read_bytes()).hexdigest()
    assert digest == "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b"


@pytest.mark.parametrize("chunk_size", [None, 1, 7, 64])
async def test_replay_openai_parallel_tool_calls(
    server: ScriptedServer, chunk_size: int | None
) -> None:
    server.add(replay(OPENAI_PARALLEL, chunk_size))
    events, done = await collect(make("openai", server))

    assert done.stop_reason == "tool_use"
    assert done.text == ""
    assert [call.name for call in done.tool_calls] == ["GetWeatherArgs", "get_stock_price"]
    assert [call.id for call in done.tool_calls] == [
        "call_JMW1whyEaYG438VE1OIflxA2",
        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
    ]
    weather, stock = (json.loads(call.arguments) for call in done.tool_calls)
    assert weather == {"city": "Edinburgh", "country": "GB", "units": "c"}
    assert stock == {"ticker": "AAPL", "exchange": "NASDAQ"}
    assert done.usage == UsageReport(input_tokens=149, output_tokens=60)
    assert not any(isinstance(event, UsageReport) for event in events), "counted twice"

    deltas = [event for event in events if isinstance(event, ToolCallDelta)]
    firsts = [delta for delta in deltas if delta.id is not None]
    assert [(d.index, d.name) for d in firsts] == [(0, "GetWeatherArgs"), (1, "get_stock_price")]
    for index, call in enumerate(done.tool_calls):
        joined = "".join(d.arguments_delta for d in deltas if d.index == index)
        assert joined == call.arguments
    assert len(deltas) > 10, "arguments should have streamed in pieces"


async def test_replay_openai_single_tool_call(server: ScriptedServer) -> None:
    server.add(replay(OPENAI_SINGLE, 13))
    _, done = await collect(make("openai", server))
    assert done.tool_calls == [
        ToolCall("call_4XzlGBLtUe9dy3GVNV4jhq7h", "get_weather", '{"city":"New York City"}')
    ]
    assert done.stop_reason == "tool_use"
    assert done.usage == UsageReport(input_tokens=44, output_tokens=16)


@pytest.mark.parametrize("chunk_size", [None, 1, 5])
async def test_replay_anthropic_tool_use(server: ScriptedServer, chunk_size: int | None) -> None:
    """The file lacks the blank line after ``message_stop`` (the SSE tests cover the flush)."""
    assert not ANTHROPIC_TOOL_USE.read_bytes().endswith(b"\n")
    server.add(replay(ANTHROPIC_TOOL_USE, chunk_size))
    events, done = await collect(make("anthropic", server))

    assert done.text == "I'll check the current weather in Paris for you."
    assert text_of(events) == done.text
    assert len(done.tool_calls) == 1
    call = done.tool_calls[0]
    assert (call.id, call.name) == ("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather")
    assert json.loads(call.arguments) == {"location": "Paris"}
    assert done.stop_reason == "tool_use"
    assert done.usage == UsageReport(input_tokens=377, output_tokens=65)
    deltas = [event for event in events if isinstance(event, ToolCallDelta)]
    assert deltas[0] == ToolCallDelta(0, "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", "")
    assert "".join(d.arguments_delta for d in deltas) == call.arguments


class MakeFileParams(ToolParams):
    filename: str = Field(description="file name")
    lines_of_text: list[str] = Field(description="lines")


class MakeFileTool(Tool[MakeFileParams]):
    """Only parsed, never run: stands in for the tool the recorded model called."""

    name = "make_file"
    label = "Make file"
    Params = MakeFileParams
    description = "test tool"

    async def execute(self, params: MakeFileParams, ctx: ToolContext) -> ToolResult:
        raise AssertionError("never run")


async def test_replay_anthropic_max_tokens_keeps_cut_arguments(server: ScriptedServer) -> None:
    """Cut-off tool JSON is passed on untouched so the registry can tell the model."""
    server.add(replay(ANTHROPIC_MAX_TOKENS, 11))
    _, done = await collect(make("anthropic", server))

    assert done.stop_reason == "max_tokens"
    assert done.text.startswith("I'll create a comprehensive tax guide")
    assert done.text.endswith("Let me do that for you now.")
    [call] = done.tool_calls
    assert call.name == "make_file"
    assert call.arguments.startswith('{"filename": "taxes.txt", "lines_of_text": [')
    assert call.arguments.endswith('\n"Filing taxes')
    with pytest.raises(json.JSONDecodeError):
        json.loads(call.arguments)
    assert done.usage == UsageReport(input_tokens=450, output_tokens=124)

    tool = MakeFileTool()
    with pytest.raises(InvalidArguments, match="not valid JSON"):
        ToolRegistry([tool]).parse_arguments(tool, call.arguments)


def test_openai_assembler_tolerates_ollama_style_chunks() -> None:
    """Whole calls in one chunk, no ``index``, an object for arguments, ``stop`` to finish."""
    assembler = ChatStreamAssembler()
    call = {"id": "call_x", "function": {"name": "run_shell", "arguments": {"command": "ls"}}}
    other = {"function": {"name": "time", "arguments": ""}}
    assembler.feed({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    assembler.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    assembler.feed({"choices": [{"index": 0, "delta": {"tool_calls": [other]}}]})
    assembler.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    done = assembler.finish()
    assert done.stop_reason == "tool_use"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in done.tool_calls] == [
        ("call_x", "run_shell", {"command": "ls"}),
        (done.tool_calls[1].id, "time", {}),
    ]
    assert done.tool_calls[1].id.startswith("call_") and done.tool_calls[1].id != "call_x"


# -- the SSE parser ------------------------------------------------------------------------


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def sse_from_bytes(*parts: bytes) -> list[SSEEvent]:
    return [event async for event in aiter_sse_bytes(_chunks(*parts))]


async def test_sse_fields_comments_and_multiline_data() -> None:
    body = (
        b": keep-alive comment\n"
        b"event: first\n"
        b"data: line one\n"
        b"data: line two\n"
        b"id: 7\n"
        b"\n"
        b"data:no space\n"
        b"\n"
        b"event: empty-is-dropped\n"
        b"\n"
        b'data: {"a": 1}\n'
        b"unknown: ignored\n"
        b"\n"
    )
    events = await sse_from_bytes(body)
    assert events == [
        SSEEvent(data="line one\nline two", event="first", id="7"),
        SSEEvent(data="no space", event="message", id="7"),
        SSEEvent(data='{"a": 1}', event="message", id="7"),
    ]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
async def test_sse_line_endings_and_flush_at_eof(newline: bytes) -> None:
    body = newline.join([b"event: a", b"data: 1", b"", b"event: b", b"data: 2"])
    assert await sse_from_bytes(body) == [SSEEvent("1", "a"), SSEEvent("2", "b")]


async def test_sse_crlf_split_between_chunks_is_one_line_break() -> None:
    events = await sse_from_bytes(b"data: x\r", b"\n\r", b"\ndata: y\r\n\r\n")
    assert events == [SSEEvent("x"), SSEEvent("y")]


async def test_sse_utf8_split_inside_a_character() -> None:
    encoded = "data: héllo ✓\n\n".encode()
    cut = encoded.index("✓".encode()) + 1
    assert await sse_from_bytes(encoded[:cut], encoded[cut:]) == [SSEEvent("héllo ✓")]


async def test_sse_lines_interface_matches_bytes_interface() -> None:
    raw = ANTHROPIC_TOOL_USE.read_bytes()
    from_bytes = await sse_from_bytes(raw)
    from_lines = [event async for event in aiter_sse_lines(raw.decode().split("\n"))]
    assert from_lines == from_bytes
    assert [event.event for event in from_bytes][-1] == "message_stop"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from([OPENAI_PARALLEL.name, ANTHROPIC_TOOL_USE.name]),
    crlf=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40),
)
def test_sse_any_chunking_gives_the_same_events(name: str, crlf: bool, cuts: list[int]) -> None:
    raw = (FIXTURES / name).read_bytes()
    if crlf:
        raw = raw.replace(b"\n", b"\r\n")
    points = sorted({cut % (len(raw) + 1) for cut in cuts})
    parts = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    whole = asyncio.run(sse_from_bytes((FIXTURES / name).read_bytes()))
    assert asyncio.run(sse_from_bytes(*parts)) == whole
    assert len(whole) > 10


# -- retry helpers -------------------------------------------------------------------------


def test_parse_retry_after_forms() -> None:
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(httpx.Headers({"retry-after": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500"})) == 1.5
    assert 28 <= (parse_retry_after(httpx.Headers({"retry-after": date}), now=now) or 0) <= 31
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after(httpx.Headers({"retry-after": past}), now=now) == 0.0
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


def test_backoff_grows_with_jitter_and_retry_after_is_capped() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_max=8.0, retry_after_cap=60.0)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delays = {policy.delay(attempt) for _ in range(50)}
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
        assert len(delays) > 1, "no jitter"
    assert policy.delay(1, retry_after=3600) == 60.0
    assert policy.delay(1, retry_after=2.5) == 2.5


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"error": {"message": "m1", "type": "server_error"}}', "m1"),
        (b'{"type": "error", "error": {"type": "overloaded_error", "message": "m2"}}', "m2"),
        (b'{"detail": "m3"}', "m3"),
        (b'{"error": "m4"}', "m4"),
        (b"plain text failure", "plain text failure"),
        (b"<html>502 Bad Gateway</html>", "fallback"),
        (b"", "fallback"),
    ],
)
def test_error_message_from_body(body: bytes, expected: str) -> None:
    assert error_message_from_body(body, "fallback") == expected


# -- answers through the scripted server ---------------------------------------------------


@all_modes
async def test_text_only(server: ScriptedServer, api: Api, streaming: bool) -> None:
    server.add(
        {"text": "The answer is forty-two.", "usage": {"input_tokens": 5, "output_tokens": 9}}
    )
    events, done = await collect(make(api, server, stream=streaming))
    assert done.text == "The answer is forty-two."
    assert text_of(events) == done.text
    assert done.tool_calls == []
    assert done.stop_reason == "end_turn"
    assert done.usage == UsageReport(input_tokens=5, output_tokens=9)
    # The loop adds UsageReport events *and* Completed.usage: only the latter may carry it.
    assert not any(isinstance(event, UsageReport) for event in events)
    assert [type(event) for event in events[-2:]] == [TextDelta, Completed]
    if streaming:
        assert len([e for e in events if isinstance(e, TextDelta)]) > 1, "should stream in pieces"
    assert server.requests[0].body["stream"] is streaming


@all_modes
async def test_one_tool_call(server: ScriptedServer, api: Api, streaming: bool) -> None:
    arguments = '{"command": "ls -la /tmp"}'
    server.add(
        {
            "text": "Listing.",
            "tool_calls": [{"id": "call_1", "name": "run_shell", "arguments": arguments}],
        }
    )
    events, done = await collect(make(api, server, stream=streaming), tools=tool_definitions(api))
    assert done.text == "Listing."
    assert done.stop_reason == "tool_use"
    [call] = done.tool_calls
    assert (call.id, call.name) == ("call_1", "run_shell")
    assert json.loads(call.arguments) == {"command": "ls -la /tmp"}
    if streaming:
        deltas = [e for e in events if isinstance(e, ToolCallDelta)]
        assert deltas[0].id == "call_1" and deltas[0].name == "run_shell"
        assert "".join(d.arguments_delta for d in deltas) == arguments


@all_modes
async def test_parallel_tool_calls(server: ScriptedServer, api: Api, streaming: bool) -> None:
    calls = [
        {"id": "call_a", "name": "run_shell", "arguments": '{"command": "uptime"}'},
        {"id": "call_b", "name": "read_file", "arguments": '{"path": "README.md", "limit": 5}'},
        {"id": "call_c", "name": "time", "arguments": ""},
    ]
    server.add({"tool_calls": calls})
    events, done = await collect(make(api, server, stream=streaming), tools=tool_definitions(api))
    assert done.text == ""
    assert done.stop_reason == "tool_use"
    assert [(c.id, c.name) for c in done.tool_calls] == [
        ("call_a", "run_shell"),
        ("call_b", "read_file"),
        ("call_c", "time"),
    ]
    assert [json.loads(c.arguments) for c in done.tool_calls] == [
        {"command": "uptime"},
        {"path": "README.md", "limit": 5},
        {},
    ]
    if streaming:
        indices = [e.index for e in events if isinstance(e, ToolCallDelta) and e.id]
        assert indices == [0, 1, 2]


@all_modes
async def test_max_tokens_stop_reason(server: ScriptedServer, api: Api, streaming: bool) -> None:
    server.add({"text": "and then the", "stop_reason": "max_tokens"})
    _, done = await collect(make(api, server, stream=streaming))
    assert done.stop_reason == "max_tokens"


# -- what the client sends -----------------------------------------------------------------


CONVERSATION = [
    Message("user", "What is here?", images=[ImagePart("aGVsbG8=", "image/png")]),
    Message(
        "assistant",
        "Let me look.",
        tool_calls=[
            ToolCall("call_1", "run_shell", '{"command": "ls"}'),
            ToolCall("call_2", "read_file", '{"path": "a.txt"}'),
        ],
    ),
    Message("tool", '{"result": "a.txt b.txt"}', tool_call_id="call_1", tool_name="run_shell"),
    Message("tool", "no such file", tool_call_id="call_2", tool_name="read_file", is_error=True),
    Message("assistant", "", tool_calls=[ToolCall("call_3", "run_shell", "{cut off")]),
    Message("tool", "InvalidArguments", tool_call_id="call_3", is_error=True),
    Message("user", "Thanks."),
]


async def test_openai_request_mapping(server: ScriptedServer) -> None:
    await collect(make("openai", server), CONVERSATION, system="Be brief.", max_tokens=100)
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 100
    assert "tools" not in body
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is here?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "run_shell", "arguments": '{"command": "ls"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"result": "a.txt b.txt"}'},
        {"role": "tool", "tool_call_id": "call_2", "content": "no such file"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "run_shell", "arguments": "{cut off"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "InvalidArguments"},
        {"role": "user", "content": "Thanks."},
    ]


async def test_anthropic_request_mapping(server: ScriptedServer) -> None:
    # The mapping alone; cache breakpoints on top of it: test_prompt_cache.py.
    await collect(make("anthropic", server, cache=False), CONVERSATION, system="Be brief.")
    request = server.requests[0]
    assert request.path == "/v1/messages"
    body = request.body
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 8192
    assert body["stream"] is True
    assert body["system"] == "Be brief."
    assert "tools" not in body
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="},
                },
                {"type": "text", "text": "What is here?"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "run_shell",
                    "input": {"command": "ls"},
                },
                {
                    "type": "tool_use",
                    "id": "call_2",
                    "name": "read_file",
                    "input": {"path": "a.txt"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": '{"result": "a.txt b.txt"}',
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "no such file",
                    "is_error": True,
                },
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_3", "name": "run_shell", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_3",
                    "content": "InvalidArguments",
                    "is_error": True,
                },
                {"type": "text", "text": "Thanks."},
            ],
        },
    ]


@all_modes
async def test_tools_sent_only_when_there_are_some(
    server: ScriptedServer, api: Api, streaming: bool
) -> None:
    await collect(make(api, server, stream=streaming), tools=[])
    await collect(make(api, server, stream=streaming), tools=tool_definitions(api))
    without, with_tools = (request.body for request in server.requests)
    assert "tools" not in without
    sent = [{k: v for k, v in tool.items() if k != "cache_control"} for tool in with_tools["tools"]]
    assert sent == tool_definitions(api)  # cache_control: test_prompt_cache.py
    assert ("stream_options" in without) == (api == "openai" and streaming)


async def test_openai_max_completion_tokens_for_the_official_host() -> None:
    official = OpenAIProvider("gpt-test", api_key="k")
    local = OpenAIProvider("m", api_key=None, base_url="http://127.0.0.1:1/v1")
    assert official.max_tokens_field == "max_completion_tokens"
    assert local.max_tokens_field == "max_tokens"
    for provider in (official, local):
        await provider.aclose()


@pytest.mark.parametrize("key", ["the-key", None, ""])
async def test_auth_headers(server: ScriptedServer, key: str | None) -> None:
    await collect(make("openai", server, api_key=key))
    await collect(make("anthropic", server, api_key=key))
    openai_headers, anthropic_headers = (request.headers for request in server.requests)
    if key:
        assert openai_headers["authorization"] == f"Bearer {key}"
        assert anthropic_headers["x-api-key"] == key
    else:
        assert "authorization" not in openai_headers
        assert "x-api-key" not in anthropic_headers
    assert "x-api-key" not in openai_headers
    assert "authorization" not in anthropic_headers
    assert anthropic_headers["anthropic-version"] == "2023-06-01"
    for headers in (openai_headers, anthropic_headers):
        assert headers["content-type"] == "application/json"


async def test_anthropic_base_url_with_v1_is_forgiven(server: ScriptedServer) -> None:
    provider = AnthropicProvider("c", api_key="k", base_url=server.base_url + "/v1/")
    await collect(provider)
    assert server.requests[0].path == "/v1/messages"


# -- failures and retries ------------------------------------------------------------------


@all_modes
async def test_500_then_success_is_retried(
    server: ScriptedServer, api: Api, streaming: bool
) -> None:
    server.add({"status": 500}, {"status": 503}, {"text": "third time lucky"})
    _, done = await collect(make(api, server, stream=streaming))
    assert done.text == "third time lucky"
    assert len(server.requests) == 3
    assert server.requests[0].body == server.requests[2].body


@both_apis
async def test_429_retry_after_is_honoured(server: ScriptedServer, api: Api) -> None:
    server.add({"status": 429, "retry_after": 1}, {"text": "ok"})
    _, done = await collect(make(api, server, backoff_base=0.001))
    assert done.text == "ok"
    first, second = server.requests
    # The backoff alone would be about a millisecond; only Retry-After explains a second.
    assert second.received_at - first.received_at >= 0.9


@both_apis
async def test_429_with_http_date_retry_after(server: ScriptedServer, api: Api) -> None:
    past = email.utils.formatdate(time.time() - 5, usegmt=True)
    server.add({"status": 429, "retry_after": past}, {"text": "ok"})
    _, done = await collect(make(api, server))
    assert done.text == "ok"
    assert len(server.requests) == 2


@all_modes
async def test_401_is_not_retried_and_names_the_key(
    server: ScriptedServer, api: Api, streaming: bool
) -> None:
    server.add({"status": 401, "message": "invalid x-api-key"}, {"text": "never sent"})
    with pytest.raises(ProviderError) as caught:
        await collect(make(api, server, stream=streaming))
    assert len(server.requests) == 1
    message = str(caught.value)
    assert "401" in message
    assert "invalid x-api-key" in message
    assert ("OPENAI_API_KEY" if api == "openai" else "ANTHROPIC_API_KEY") in message
    assert caught.value.status == 401
    assert not caught.value.retryable


@both_apis
async def test_400_is_not_retried(server: ScriptedServer, api: Api) -> None:
    server.add({"status": 400, "message": "messages: roles must alternate"}, {"text": "never"})
    with pytest.raises(ProviderError, match="returned 400: messages: roles must alternate"):
        await collect(make(api, server))
    assert len(server.requests) == 1


@all_modes
async def test_500_forever_gives_up_with_status_and_message(
    server: ScriptedServer, api: Api, streaming: bool
) -> None:
    server.add(*[{"status": 500, "message": "the model is on fire"}] * 3, {"text": "too late"})
    with pytest.raises(ProviderError) as caught:
        await collect(make(api, server, stream=streaming, max_retries=3))
    name = "OpenAI API" if api == "openai" else "Anthropic API"
    assert str(caught.value) == f"{name} returned 500 after 3 attempts: the model is on fire"
    assert caught.value.status == 500
    assert len(server.requests) == 3


@both_apis
async def test_unreachable_server_fails_after_retries(api: Api) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now; connecting is refused at once.
    base = f"http://127.0.0.1:{port}"
    provider: Provider
    if api == "openai":
        provider = OpenAIProvider("m", api_key=SECRET, base_url=base + "/v1", backoff_base=0.01)
    else:
        provider = AnthropicProvider("m", api_key=SECRET, base_url=base, backoff_base=0.01)
    with pytest.raises(ProviderError) as caught:
        await collect(provider)
    message = str(caught.value)
    assert f"could not reach the {'OpenAI' if api == 'openai' else 'Anthropic'} API" in message
    assert f"127.0.0.1:{port}" in message
    assert "after 4 attempts" in message
    assert "ConnectError" in message
    assert SECRET not in message


@both_apis
@pytest.mark.parametrize("end_body", [False, True])
async def test_stream_cut_mid_answer_is_asked_again(
    server: ScriptedServer, api: Api, end_body: bool
) -> None:
    """Cut with the socket torn down, or with a clean HTTP end but no end marker: nothing
    ran, so the request goes again, and the consumer is told to drop the half it saw."""
    whole = "one two three four five six"
    server.add(
        {"text": whole, "cut_after_events": CUT_MID_ANSWER[api], "end_body": end_body},
        {"text": whole},
    )
    events, done = await collect(make(api, server, backoff_base=0.001))
    (retry,) = [event for event in events if isinstance(event, Retrying)]
    before = events[: events.index(retry)]
    after = events[events.index(retry) + 1 :]
    received = text_of(before)
    assert received and whole.startswith(received) and received != whole
    assert retry.discard and retry.attempt == 2
    assert ("ended before" if end_body else "cut off mid-answer") in retry.reason
    assert retry.describe().startswith("retrying in ")
    assert text_of(after) == whole == done.text
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


@both_apis
async def test_stream_always_cut_mid_answer_fails_after_the_attempts(
    server: ScriptedServer, api: Api
) -> None:
    server.add(*[{"text": "one two three", "cut_after_events": CUT_MID_ANSWER[api]}] * 2)
    events: list[ProviderEvent] = []
    with pytest.raises(StreamInterrupted, match=r"cut off mid-answer.*after 2 attempts"):
        await collect(make(api, server, max_retries=2, backoff_base=0.001), into=events)
    assert [e.discard for e in events if isinstance(e, Retrying)] == [True]
    assert len(server.requests) == 2


@both_apis
@pytest.mark.parametrize("end_body", [False, True])
async def test_stream_cut_after_the_finish_reason_is_complete(
    server: ScriptedServer, api: Api, end_body: bool
) -> None:
    """Only the usage / end marker is lost: the answer itself is whole, so it is accepted."""
    # "abc" streams as 3 deltas. OpenAI: role, a, b, c, finish | usage, [DONE].
    # Anthropic: message_start, block start, ping, a, b, c, block stop, message_delta | stop.
    cut = {"openai": 5, "anthropic": 8}[api]
    server.add(
        {"text": "abc", "cut_after_events": cut, "end_body": end_body},
        {"text": "must not be replayed"},
    )
    _, done = await collect(make(api, server))
    assert done.text == "abc"
    assert done.stop_reason == "end_turn"
    assert len(server.requests) == 1


@both_apis
async def test_stream_cut_before_any_event_is_retried(server: ScriptedServer, api: Api) -> None:
    server.add(
        {"text": "lost", "cut_after_events": CUT_BEFORE_TEXT[api]},
        {"text": "lost too", "cut_after_events": CUT_BEFORE_TEXT[api], "end_body": True},
        {"text": "whole answer"},
    )
    events, done = await collect(make(api, server))
    assert done.text == "whole answer"
    assert text_of(events) == "whole answer"
    assert len(server.requests) == 3


@both_apis
async def test_non_streaming_cut_body_is_retried(server: ScriptedServer, api: Api) -> None:
    server.add({"text": "half", "cut_after_events": 1}, {"text": "whole"})
    _, done = await collect(make(api, server, stream=False))
    assert done.text == "whole"
    assert len(server.requests) == 2


@both_apis
async def test_stream_always_cut_gives_interrupted_after_retries(
    server: ScriptedServer, api: Api
) -> None:
    server.add(*[{"text": "x", "cut_after_events": CUT_BEFORE_TEXT[api]}] * 2)
    with pytest.raises(StreamInterrupted, match="after 2 attempts"):
        await collect(make(api, server, max_retries=2))
    assert len(server.requests) == 2


async def test_anthropic_overloaded_error_event_before_output_is_retried(
    server: ScriptedServer,
) -> None:
    server.add(
        {"stream_error": {"type": "overloaded_error", "message": "Overloaded"}, "after_events": 1},
        {"text": "recovered"},
    )
    _, done = await collect(make("anthropic", server))
    assert done.text == "recovered"
    assert len(server.requests) == 2


async def test_anthropic_overloaded_event_after_output_is_asked_again(
    server: ScriptedServer,
) -> None:
    server.add(
        {"stream_error": {"type": "overloaded_error", "message": "Overloaded"}, "after_events": 4},
        {"text": "recovered"},
    )
    events, done = await collect(make("anthropic", server, backoff_base=0.001))
    (retry,) = [event for event in events if isinstance(event, Retrying)]
    assert text_of(events[: events.index(retry)]), "the error came after some text"
    assert retry.discard
    assert "Anthropic API error (overloaded_error): Overloaded" in retry.reason
    assert done.text == "recovered"
    assert len(server.requests) == 2


async def test_anthropic_invalid_request_error_event_is_not_retried(
    server: ScriptedServer,
) -> None:
    server.add(
        {"stream_error": {"type": "invalid_request_error", "message": "bad"}, "after_events": 1},
        {"text": "never"},
    )
    with pytest.raises(ProviderError, match="invalid_request_error"):
        await collect(make("anthropic", server))
    assert len(server.requests) == 1


async def test_openai_error_chunk_in_stream_is_asked_again(server: ScriptedServer) -> None:
    server.add(
        {"stream_error": {"type": "server_error", "message": "upstream died"}, "after_events": 2},
        {"text": "whole answer"},
    )
    events, done = await collect(make("openai", server, backoff_base=0.001))
    (retry,) = [event for event in events if isinstance(event, Retrying)]
    received = text_of(events[: events.index(retry)])
    assert received and "partial answer".startswith(received)
    assert retry.discard and "upstream died" in retry.reason
    assert done.text == "whole answer"
    assert len(server.requests) == 2


@both_apis
async def test_json_answer_to_a_streaming_request_is_accepted(
    server: ScriptedServer, api: Api, tmp_path: Path
) -> None:
    """Some servers ignore ``stream: true``; their whole answer is still an answer."""
    if api == "openai":
        payload: dict[str, Any] = {
            "choices": [{"index": 0, "message": {"content": "plain"}, "finish_reason": "stop"}]
        }
    else:
        payload = {"content": [{"type": "text", "text": "plain"}], "stop_reason": "end_turn"}
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(payload))
    server.add({"raw_file": str(path), "content_type": "application/json"})
    _, done = await collect(make(api, server))
    assert done.text == "plain"
    assert done.stop_reason == "end_turn"


@both_apis
async def test_garbage_stream_chunk_is_retried_then_reported(
    server: ScriptedServer, api: Api, tmp_path: Path
) -> None:
    """A whole line that is not JSON: a server's mistake, retried like a cut (nothing ran),
    and named as what it is when it persists."""
    path = tmp_path / "garbage.sse"
    path.write_bytes(b"data: {not json\n\n")
    server.add({"raw_file": str(path)}, {"raw_file": str(path)})
    with pytest.raises(ProviderError, match=r"not JSON.*after 2 attempts"):
        await collect(make(api, server, max_retries=2, backoff_base=0.001))
    assert len(server.requests) == 2


# -- hangs and cancellation ----------------------------------------------------------------


@all_modes
async def test_cancel_of_hung_request_closes_the_connection(
    server: ScriptedServer, api: Api, streaming: bool
) -> None:
    server.add({"hang": True})
    provider = make(api, server, stream=streaming)

    async def consume() -> None:
        async for _ in provider.stream(system="", messages=[Message("user", "hi")], tools=[]):
            pass

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(server.hang_started.wait, DEADLINE)
    started = time.monotonic()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=DEADLINE)
    assert task in done and task.cancelled()
    assert time.monotonic() - started < 1.0
    assert await asyncio.to_thread(server.wait_for_disconnects, 1, DEADLINE)
    assert len(server.requests) == 1
    await provider.aclose()


@both_apis
async def test_read_timeout_before_output_is_retried(server: ScriptedServer, api: Api) -> None:
    server.add({"hang": True}, {"text": "awake"})
    provider = make(api, server, timeout=httpx.Timeout(DEADLINE, read=0.3))
    _, done = await collect(provider)
    assert done.text == "awake"
    assert len(server.requests) == 2
    assert await asyncio.to_thread(server.wait_for_disconnects, 1, DEADLINE)


@both_apis
async def test_slow_stream_within_timeout_is_fine(server: ScriptedServer, api: Api) -> None:
    server.add({"text": "slow but steady", "delay_between_events": 0.05})
    provider = make(api, server, timeout=httpx.Timeout(DEADLINE, read=2.0))
    _, done = await collect(provider)
    assert done.text == "slow but steady"


# -- the key stays secret ------------------------------------------------------------------


@both_apis
async def test_api_key_never_in_errors_logs_or_repr(
    server: ScriptedServer, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = f"Incorrect API key provided: {SECRET}"
    server.add(
        {"status": 401, "message": echo},
        {"status": 400, "body": {"error": {"message": echo, "key": SECRET}}},
        *[{"status": 500, "message": echo}] * 2,
        {"status": 429, "retry_after": 0, "message": echo},
        {"status": 503, "message": echo},
        {"text": "some text first", "cut_after_events": CUT_MID_ANSWER[api]},
        {"stream_error": {"type": "api_error", "message": echo}, "after_events": 4},
    )
    failures: list[ProviderError] = []
    retries: list[Retrying] = []
    for _ in range(5):
        provider = make(api, server, api_key=SECRET, max_retries=2)
        assert SECRET not in repr(provider)
        assert SECRET not in str(provider)
        events: list[ProviderEvent] = []
        with pytest.raises(ProviderError) as caught:
            await collect(provider, into=events)
        failures.append(caught.value)
        retries += [event for event in events if isinstance(event, Retrying)]
    assert len(server.requests) == 8
    # The cut stream is asked again, and the stream's error event ends that second try.
    assert [failure.status for failure in failures] == [401, 400, 500, 503, None]
    assert any("cut off mid-answer" in retry.reason for retry in retries)
    for retry in retries:
        assert SECRET not in retry.reason and SECRET not in retry.describe()
    for failure in failures:
        for text in (str(failure), repr(failure), failure.msg, *map(str, failure.args)):
            assert SECRET not in text
        assert failure.__cause__ is None
    assert "[redacted]" in str(failures[0])
    assert SECRET not in caplog.text
    assert "retrying" in caplog.text, "retries should be logged (without the key)"


# -- the factory ---------------------------------------------------------------------------


async def test_factory_reads_the_environment() -> None:
    env = {
        "OPENAI_API_KEY": "env-openai",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "ANTHROPIC_API_KEY": "env-anthropic",
    }
    openai = make_provider("openai", "gpt-x", environ=env)
    assert isinstance(openai, OpenAIProvider)
    assert (openai.model, openai.base_url) == ("gpt-x", "http://127.0.0.1:9/v1")
    assert openai._api_key == "env-openai"
    assert openai.tool_format == "openai"
    anthropic = make_provider("anthropic", "claude-x", environ=env, stream=False)
    assert isinstance(anthropic, AnthropicProvider)
    assert anthropic.base_url == "https://api.anthropic.com"
    assert anthropic._api_key == "env-anthropic"
    assert anthropic.streaming is False
    assert anthropic.tool_format == "anthropic"
    for provider in (openai, anthropic):
        await provider.aclose()


async def test_factory_explicit_arguments_win(server: ScriptedServer) -> None:
    env = {"OPENAI_API_KEY": "env-key", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    provider = make_provider(
        "openai", "gpt-x", api_key="flag-key", base_url=server.openai_base_url, environ=env
    )
    await collect(provider)
    assert server.requests[0].headers["authorization"] == "Bearer flag-key"


async def test_factory_uses_os_environ(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-os-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    await collect(make_provider("anthropic", "claude-x"))
    assert server.requests[0].headers["x-api-key"] == "from-os-env"


def test_factory_local_server_needs_no_key() -> None:
    provider = make_provider("openai", "llama3", environ={"OPENAI_BASE_URL": "http://x/v1"})
    assert isinstance(provider, OpenAIProvider)
    assert provider._api_key is None


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_factory_missing_key_is_a_clear_error(name: Api) -> None:
    variable = "OPENAI_API_KEY" if name == "openai" else "ANTHROPIC_API_KEY"
    with pytest.raises(ProviderError, match=f"{variable} is not set"):
        make_provider(name, "m", environ={variable: "  "})


def test_factory_unknown_provider() -> None:
    with pytest.raises(ProviderError, match="unknown provider 'gemini'"):
        make_provider("gemini", "m", environ={})  # type: ignore[arg-type]


# -- the scripted server as a subprocess ---------------------------------------------------


async def test_scripted_server_runs_as_a_subprocess(tmp_path: Path) -> None:
    """The form CLI tests use: script file in, port file and request log out."""
    (tmp_path / "recorded.sse").write_bytes(ANTHROPIC_TOOL_USE.read_bytes())
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from a subprocess"}, {"raw_file": "recorded.sse"}]))
    port_file, log = tmp_path / "port", tmp_path / "requests.jsonl"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.scripted_server",
        "--script",
        str(script),
        "--port-file",
        str(port_file),
        "--log",
        str(log),
        cwd=Path(__file__).parent.parent,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), DEADLINE)
        assert b"listening on" in line
        port = int(port_file.read_text())
        base = f"http://127.0.0.1:{port}"
        _, done = await collect(OpenAIProvider("m", api_key="k", base_url=base + "/v1"))
        assert done.text == "from a subprocess"
        _, done = await collect(AnthropicProvider("m", api_key="k", base_url=base))
        assert json.loads(done.tool_calls[0].arguments) == {"location": "Paris"}
        _, done = await collect(AnthropicProvider("m", api_key="k", base_url=base))
        assert done.text == "(script exhausted)"
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), DEADLINE) == 0
    logged = [json.loads(entry) for entry in log.read_text().splitlines()]
    assert [entry["path"] for entry in logged] == [
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/messages",
    ]
    assert logged[0]["body"]["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hello"},
    ]

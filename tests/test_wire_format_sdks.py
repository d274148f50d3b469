"""The scripted server speaks the real wire formats: the official SDKs read it correctly.

Every other provider test trusts ``tests/scripted_server.py``. If its streams drifted from
what OpenAI and Anthropic really send, those tests would pass against a fiction. Here the
vendors' own SDKs, with their own SSE decoders and stream accumulators, consume the server's
output and must rebuild exactly the scripted text and tool calls, and our providers must agree
with them on the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from tests.scripted_server import ScriptedServer
from tui.agent.providers.anthropic import AnthropicProvider
from tui.agent.providers.base import Completed, Message, Provider, ToolCall, ToolCallDelta
from tui.agent.providers.openai import OpenAIProvider

if TYPE_CHECKING:  # the SDKs are imported by the tests that use them: collection stays light
    import anthropic
    import openai

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 10.0

STEP: dict[str, Any] = {
    "text": "Checking two things at once, with unicode: café ✓.",
    "tool_calls": [
        {"id": "call_weather", "name": "get_weather", "arguments": '{"city": "Edinburgh"}'},
        {
            "id": "call_shell",
            "name": "run_shell",
            "arguments": '{"command": "ls -la \\"my dir\\"", "timeout": 30}',
        },
    ],
    "usage": {"input_tokens": 321, "output_tokens": 45},
}
EXPECTED_CALLS = [
    ToolCall(call["id"], call["name"], call["arguments"]) for call in STEP["tool_calls"]
]

OPENAI_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} for tests",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name in ("get_weather", "run_shell")
]
ANTHROPIC_TOOLS: list[dict[str, Any]] = [
    {
        "name": name,
        "description": f"{name} for tests",
        "input_schema": {"type": "object", "properties": {}},
    }
    for name in ("get_weather", "run_shell")
]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(base_dir=Path(__file__).parent) as running:
        yield running


@pytest.fixture
async def openai_client(server: ScriptedServer) -> AsyncIterator[openai.AsyncOpenAI]:
    import openai

    client = openai.AsyncOpenAI(
        api_key="sdk-key", base_url=server.openai_base_url, max_retries=0, timeout=TIMEOUT
    )
    yield client
    await client.close()


@pytest.fixture
async def anthropic_client(server: ScriptedServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    import anthropic

    client = anthropic.AsyncAnthropic(
        api_key="sdk-key", base_url=server.base_url, max_retries=0, timeout=TIMEOUT
    )
    yield client
    await client.close()


async def ours(
    api: Literal["openai", "anthropic"], server: ScriptedServer, stream: bool
) -> Completed:
    """Our provider's reading of the next scripted step, for comparison with the SDK's."""
    provider: Provider
    if api == "openai":
        provider = OpenAIProvider("m", api_key="k", base_url=server.openai_base_url, stream=stream)
        tools = OPENAI_TOOLS
    else:
        provider = AnthropicProvider("m", api_key="k", base_url=server.base_url, stream=stream)
        tools = ANTHROPIC_TOOLS
    try:
        events = [
            event
            async for event in provider.stream(
                system="", messages=[Message("user", "hi")], tools=tools
            )
        ]
    finally:
        await provider.aclose()
    last = events[-1]
    assert isinstance(last, Completed)
    return last


# -- OpenAI ---------------------------------------------------------------------------------


async def test_openai_sdk_reads_the_stream(
    server: ScriptedServer, openai_client: openai.AsyncOpenAI
) -> None:
    server.add(STEP, STEP)
    pieces: list[str] = []
    async with openai_client.chat.completions.stream(
        model="gpt-test",
        messages=[{"role": "user", "content": "hi"}],
        tools=OPENAI_TOOLS,  # type: ignore[arg-type]
        stream_options={"include_usage": True},
    ) as stream:
        async for event in stream:
            if event.type == "content.delta":
                pieces.append(event.delta)
        final = await stream.get_final_completion()

    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == STEP["text"]
    assert len(pieces) > 1 and "".join(pieces) == STEP["text"]
    calls = [
        ToolCall(call.id, call.function.name, call.function.arguments)
        for call in choice.message.tool_calls or []
    ]
    assert calls == EXPECTED_CALLS
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (321, 45)
    assert final.object == "chat.completion"

    mine = await ours("openai", server, stream=True)
    assert (mine.text, mine.tool_calls, mine.stop_reason) == (
        STEP["text"],
        EXPECTED_CALLS,
        "tool_use",
    )
    assert server.requests[0].body["stream"] is True


async def test_openai_sdk_reads_raw_chunks(
    server: ScriptedServer, openai_client: openai.AsyncOpenAI
) -> None:
    """Without the helper: every chunk validates as ``ChatCompletionChunk``; no usage chunk
    unless asked for, as the real API does."""
    server.add({"text": "hi there"})
    stream = await openai_client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    chunks = [chunk async for chunk in stream]
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1
    assert all(chunk.choices for chunk in chunks), "no usage chunk was requested"
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "hi there"
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_openai_sdk_reads_the_json_answer(
    server: ScriptedServer, openai_client: openai.AsyncOpenAI
) -> None:
    server.add(STEP, STEP)
    completion = await openai_client.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "user", "content": "hi"}],
        tools=OPENAI_TOOLS,  # type: ignore[arg-type]
    )
    choice = completion.choices[0]
    assert choice.message.content == STEP["text"]
    calls = [
        ToolCall(call.id, call.function.name, call.function.arguments)  # type: ignore[union-attr]
        for call in choice.message.tool_calls or []
    ]
    assert calls == EXPECTED_CALLS
    assert choice.finish_reason == "tool_calls"
    assert completion.usage is not None and completion.usage.total_tokens == 366

    mine = await ours("openai", server, stream=False)
    assert (mine.text, mine.tool_calls) == (STEP["text"], EXPECTED_CALLS)
    assert server.requests[0].body.get("stream") in (None, False)


async def test_openai_sdk_reads_error_statuses(
    server: ScriptedServer, openai_client: openai.AsyncOpenAI
) -> None:
    import openai

    server.add({"status": 500, "message": "boom"}, {"status": 429, "retry_after": 7})
    with pytest.raises(openai.InternalServerError) as server_error:
        await openai_client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert server_error.value.status_code == 500
    assert server_error.value.body == {
        "message": "boom",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    with pytest.raises(openai.RateLimitError) as limited:
        await openai_client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert limited.value.response.headers["retry-after"] == "7"


async def test_openai_sdk_reads_an_error_chunk(
    server: ScriptedServer, openai_client: openai.AsyncOpenAI
) -> None:
    import openai

    server.add({"stream_error": {"type": "server_error", "message": "died"}, "after_events": 2})
    stream = await openai_client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with pytest.raises(openai.APIError, match="died"):
        async for _ in stream:
            pass


# -- Anthropic ------------------------------------------------------------------------------


async def test_anthropic_sdk_reads_the_stream(
    server: ScriptedServer, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.add(STEP, STEP)
    pieces: list[str] = []
    async with anthropic_client.messages.stream(
        model="claude-test",
        max_tokens=1024,
        messages=[{"role": "user", "content": "hi"}],
        tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
    ) as stream:
        async for text in stream.text_stream:
            pieces.append(text)
        message = await stream.get_final_message()

    assert message.stop_reason == "tool_use"
    assert message.role == "assistant"
    texts = [block.text for block in message.content if block.type == "text"]
    assert texts == [STEP["text"]]
    assert len(pieces) > 1 and "".join(pieces) == STEP["text"]
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [(use.id, use.name) for use in uses] == [(c.id, c.name) for c in EXPECTED_CALLS]
    assert [use.input for use in uses] == [json.loads(c.arguments) for c in EXPECTED_CALLS]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (321, 45)

    mine = await ours("anthropic", server, stream=True)
    assert (mine.text, mine.tool_calls, mine.stop_reason) == (
        STEP["text"],
        EXPECTED_CALLS,
        "tool_use",
    )
    assert [request.path for request in server.requests] == ["/v1/messages"] * 2


async def test_anthropic_sdk_reads_the_json_answer(
    server: ScriptedServer, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.add(STEP, STEP)
    message = await anthropic_client.messages.create(
        model="claude-test",
        max_tokens=1024,
        messages=[{"role": "user", "content": "hi"}],
        tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
    )
    assert message.stop_reason == "tool_use"
    assert [block.text for block in message.content if block.type == "text"] == [STEP["text"]]
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [(use.id, use.name, use.input) for use in uses] == [
        (c.id, c.name, json.loads(c.arguments)) for c in EXPECTED_CALLS
    ]

    mine = await ours("anthropic", server, stream=False)
    assert mine.text == STEP["text"]
    # Non-streaming input arrives as an object: compare meaning, not spacing.
    assert [(c.id, c.name, json.loads(c.arguments)) for c in mine.tool_calls] == [
        (c.id, c.name, json.loads(c.arguments)) for c in EXPECTED_CALLS
    ]


async def test_anthropic_sdk_reads_error_statuses(
    server: ScriptedServer, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    import anthropic

    server.add({"status": 529, "message": "Overloaded"}, {"status": 401})
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        await anthropic_client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert overloaded.value.status_code == 529
    assert overloaded.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    with pytest.raises(anthropic.AuthenticationError):
        await anthropic_client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )


async def test_anthropic_sdk_reads_an_error_event(
    server: ScriptedServer, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    import anthropic

    server.add(
        {"stream_error": {"type": "overloaded_error", "message": "Overloaded"}, "after_events": 4}
    )
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with anthropic_client.messages.stream(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            async for _ in stream:
                pass
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


@pytest.mark.parametrize(
    "fixture",
    ["anthropic_messages_stream_tool_use.sse", "openai_chat_stream_parallel_tool_calls.sse"],
)
async def test_sdks_and_we_agree_on_the_recorded_streams(
    server: ScriptedServer,
    openai_client: openai.AsyncOpenAI,
    anthropic_client: anthropic.AsyncAnthropic,
    fixture: str,
) -> None:
    """The same recorded bytes, read by the SDK and by us, give the same calls."""
    step = {"raw_file": f"fixtures/{fixture}"}
    server.add(step, step)
    sdk_calls: list[tuple[str, str, Any]]
    if fixture.startswith("anthropic"):
        async with anthropic_client.messages.stream(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            message = await stream.get_final_message()
        sdk_calls = [
            (block.id, block.name, block.input)
            for block in message.content
            if block.type == "tool_use"
        ]
        mine = await ours("anthropic", server, stream=True)
    else:
        async with openai_client.chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "hi"}]
        ) as chat_stream:
            final = await chat_stream.get_final_completion()
        sdk_calls = [
            (call.id, call.function.name, json.loads(call.function.arguments))
            for call in final.choices[0].message.tool_calls or []
        ]
        mine = await ours("openai", server, stream=True)
    assert sdk_calls
    assert [(c.id, c.name, json.loads(c.arguments)) for c in mine.tool_calls] == sdk_calls


# -- OpenAI Responses API and reasoning ---------------------------------------------------------

REASONING_ITEM: dict[str, Any] = {
    "type": "reasoning",
    "id": "rs_scripted_1",
    "summary": [{"type": "summary_text", "text": "**Thinking** about the weather."}],
    "encrypted_content": "gAAAAABscripted-encrypted==",
}
RESPONSES_STEP: dict[str, Any] = {
    **STEP,
    "reasoning": [REASONING_ITEM],
    "usage": {**STEP["usage"], "cached_tokens": 256, "reasoning_tokens": 30},
}
RESPONSES_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "name": name, "parameters": {"type": "object", "properties": {}}}
    for name in ("get_weather", "run_shell")
]


async def ours_responses(
    server: ScriptedServer, stream: bool, into: list[Any] | None = None
) -> Completed:
    from tui.agent.providers.responses import ResponsesProvider

    provider = ResponsesProvider("m", api_key="k", base_url=server.openai_base_url, stream=stream)
    try:
        events = [
            event
            async for event in provider.stream(
                system="", messages=[Message("user", "hi")], tools=OPENAI_TOOLS
            )
        ]
    finally:
        await provider.aclose()
    if into is not None:
        into.extend(events)
    last = events[-1]
    assert isinstance(last, Completed)
    return last


async def test_openai_sdk_reads_the_responses_stream(
    server: ScriptedServer, openai_client: openai.AsyncOpenAI
) -> None:
    """The SDK's own accumulator rebuilds the response, and every raw event validates as a
    ``ResponseStreamEvent``; our provider reads the same bytes the same way."""
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    server.add(RESPONSES_STEP, RESPONSES_STEP, RESPONSES_STEP)
    deltas: list[str] = []
    async with openai_client.responses.stream(
        model="gpt-test",
        input="hi",
        tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
        store=False,
        include=["reasoning.encrypted_content"],
    ) as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = await stream.get_final_response()

    assert final.status == "completed"
    assert final.output_text == STEP["text"] and "".join(deltas) == STEP["text"]
    calls = [
        ToolCall(item.call_id, item.name, item.arguments)
        for item in final.output
        if item.type == "function_call"
    ]
    assert calls == EXPECTED_CALLS
    reasoning = [item for item in final.output if item.type == "reasoning"]
    assert [item.encrypted_content for item in reasoning] == ["gAAAAABscripted-encrypted=="]
    assert final.usage is not None
    assert final.usage.input_tokens_details.cached_tokens == 256
    assert final.usage.output_tokens_details.reasoning_tokens == 30

    raw = await openai_client.responses.with_raw_response.create(
        model="gpt-test", input="hi", stream=True
    )
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    kinds = []
    async for line in raw.http_response.aiter_lines():
        if line.startswith("data: "):
            kinds.append(adapter.validate_python(json.loads(line[6:])).type)
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert "response.reasoning_summary_text.delta" in kinds

    events: list[Any] = []
    mine = await ours_responses(server, stream=True, into=events)
    previews: dict[int, str] = {}
    for event in events:
        if isinstance(event, ToolCallDelta):
            previews[event.index] = previews.get(event.index, "") + event.arguments_delta
    assert list(previews.values()) == [call.arguments for call in EXPECTED_CALLS]  # live
    assert (mine.text, mine.tool_calls, mine.stop_reason) == (
        STEP["text"],
        EXPECTED_CALLS,
        "tool_use",
    )
    assert [item.data for item in mine.reasoning] == [REASONING_ITEM]
    assert mine.usage.cache_read_tokens == 256 and mine.usage.reasoning_tokens == 30


async def test_openai_sdk_reads_the_responses_json_answer(
    server: ScriptedServer, openai_client: openai.AsyncOpenAI
) -> None:
    server.add(RESPONSES_STEP, RESPONSES_STEP)
    response = await openai_client.responses.create(
        model="gpt-test",
        input="hi",
        tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
    )
    assert response.output_text == STEP["text"]
    assert [item.type for item in response.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    mine = await ours_responses(server, stream=False)
    assert (mine.text, mine.tool_calls) == (STEP["text"], EXPECTED_CALLS)
    assert [item.data for item in mine.reasoning] == [REASONING_ITEM]


async def test_openai_sdk_reads_the_responses_full_window_refusals() -> None:
    """A too-long input, as the Responses API refuses it. Streamed: a 200 stream that ends on
    ``response.failed`` with ``error.code == "context_length_exceeded"`` (what Codex CLI met
    with an API key, "stream disconnected before completion: Your input exceeds the context
    window of this model", openai/codex #4441, #2921). The SDK's ``ResponseError.code`` enum
    does not list that code yet, so the event is validated with a listed code in its place:
    every other field must be the SDK's. Not streamed: the SDK's ``BadRequestError``."""
    import openai
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    with ScriptedServer(window_tokens=10) as server:
        client = openai.AsyncOpenAI(
            api_key="sdk-key", base_url=server.openai_base_url, max_retries=0, timeout=TIMEOUT
        )
        try:
            raw = await client.responses.with_raw_response.create(
                model="gpt-test", input="a prompt too long for ten tokens", stream=True
            )
            events = [
                json.loads(line[6:])
                async for line in raw.http_response.aiter_lines()
                if line.startswith("data: ")
            ]
            with pytest.raises(openai.BadRequestError) as refused:
                await client.responses.create(model="gpt-test", input="too long, not streamed")
        finally:
            await client.close()
    assert raw.http_response.status_code == 200
    *opening, failed = events
    assert [adapter.validate_python(e).type for e in opening] == [
        "response.created",
        "response.in_progress",
    ]
    assert failed["response"]["error"]["code"] == "context_length_exceeded"
    listed = {**failed["response"]["error"], "code": "server_error"}
    checked = adapter.validate_python(
        {**failed, "response": {**failed["response"], "error": listed}}
    )
    assert checked.type == "response.failed" and checked.response.status == "failed"
    assert refused.value.code == "context_length_exceeded" and refused.value.param == "input"


THINKING_BLOCKS: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "Weather first, then files.", "signature": "c2lnbmVk=="},
    {"type": "redacted_thinking", "data": "b3BhcXVl=="},
]


async def test_anthropic_sdk_reads_thinking_blocks(
    server: ScriptedServer, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    """The SDK's accumulator rebuilds thinking blocks with their signatures from our stream,
    and ours keeps the same blocks for the next request."""
    step = {**STEP, "thinking": THINKING_BLOCKS}
    server.add(step, step)
    async with anthropic_client.messages.stream(
        model="claude-test",
        max_tokens=4096,
        messages=[{"role": "user", "content": "hi"}],
        tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        thinking={"type": "enabled", "budget_tokens": 2048},
    ) as stream:
        final = await stream.get_final_message()
    blocks = [block.model_dump(exclude_none=True) for block in final.content[:2]]
    assert [{k: v for k, v in b.items() if k != "citations"} for b in blocks] == THINKING_BLOCKS

    mine = await ours("anthropic", server, stream=True)
    assert [item.data for item in mine.reasoning] == THINKING_BLOCKS


def test_a_request_whose_client_went_mid_body_is_not_recorded_and_spends_no_step() -> None:
    """A client killed while sending (a SIGKILLed agent-tui) made no request, as a real server
    sees it: nothing is recorded and the next request gets the first step."""
    import socket
    import urllib.request

    with ScriptedServer([{"text": "first"}]) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as cut:
            cut.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                b'{"model": "m", "mess'
            )
        body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}]}
        request = urllib.request.Request(
            f"{server.openai_base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            assert "first" in answer.read().decode()
        assert len(server.requests) == 1 and server.requests[0].body == body

"""The Responses API provider on its own: how it fails, and how it ends a cut-off answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scripted_server import ScriptedServer
from tests.scripted_windows import RESPONSES_TOO_LONG
from tui.agent.providers.base import Completed, Message, ProviderError, ProviderEvent
from tui.agent.providers.context_errors import ContextLengthExceeded
from tui.agent.providers.responses import ResponsesProvider, ResponsesStreamAssembler

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


async def run(server: ScriptedServer, *, stream: bool = True) -> list[ProviderEvent]:
    provider = ResponsesProvider(
        "m",
        api_key="key-not-secret",
        base_url=server.openai_base_url,
        stream=stream,
        backoff_base=0.01,
    )
    try:
        return [
            event
            async for event in provider.stream(
                system="sys", messages=[Message("user", "hi")], tools=[], max_tokens=64
            )
        ]
    finally:
        await provider.aclose()


async def test_an_error_event_in_the_stream_is_a_provider_error(server: ScriptedServer) -> None:
    server.add(
        {
            "stream_error": {"type": "context_length_exceeded", "message": "input too long"},
            "after_events": 2,
        }
    )
    with pytest.raises(ProviderError) as caught:
        await run(server)
    assert "input too long" in caught.value.msg and "context_length_exceeded" in caught.value.msg
    assert not caught.value.retryable
    assert isinstance(caught.value, ContextLengthExceeded)  # the loop compacts, then retries


async def test_a_server_error_is_retried_and_the_key_never_shown(server: ScriptedServer) -> None:
    server.add({"status": 500, "message": "boom key-not-secret"}, {"text": "fine"})
    events = await run(server)
    assert isinstance(events[-1], Completed) and events[-1].text == "fine"
    assert len(server.requests) == 2
    server.add({"status": 401, "message": "bad key key-not-secret"})
    with pytest.raises(ProviderError) as caught:
        await run(server)
    assert "key-not-secret" not in caught.value.msg


@pytest.mark.parametrize("stream", [True, False])
async def test_max_output_tokens_ends_as_max_tokens(server: ScriptedServer, stream: bool) -> None:
    server.add({"text": "cut sho", "stop_reason": "max_tokens"})
    events = await run(server, stream=stream)
    done = events[-1]
    assert isinstance(done, Completed)
    assert done.stop_reason == "max_tokens" and done.text == "cut sho"
    body = server.requests[0].body
    assert body["max_output_tokens"] == 64 and body["instructions"] == "sys"


@pytest.mark.parametrize("end_body", [False, True])
async def test_a_stream_cut_before_completion_is_interrupted(
    server: ScriptedServer, end_body: bool
) -> None:
    """A dropped connection, or a body that ends cleanly without ``response.completed``."""
    step = {"text": "partial answer", "cut_after_events": 4, "end_body": end_body}
    server.add(step, step, step, step)
    with pytest.raises(ProviderError) as caught:
        await run(server)
    assert "stream" in caught.value.msg.lower()


@pytest.mark.parametrize(
    ("stream", "style", "answer"),
    [
        (True, "auto", "response.failed"),  # what the API does with a streamed request
        (True, "responses", "400"),
        (False, "auto", "400"),
    ],
)
async def test_a_full_window_is_a_context_length_error(
    stream: bool, style: str, answer: str
) -> None:
    """Either way OpenAI says it, the loop gets ``ContextLengthExceeded``, not a failed turn,
    and the request is not retried as it is (it cannot fit)."""
    with ScriptedServer(window_tokens=10, window_error=style) as server:
        with pytest.raises(ContextLengthExceeded) as caught:
            await run(server, stream=stream)
        assert len(server.requests) == 1 and server.rejected == 1
    assert RESPONSES_TOO_LONG in caught.value.msg
    assert caught.value.limit is None  # the API states none: the loop shrinks its own guess
    assert caught.value.status == (None if answer == "response.failed" else 400)


@pytest.mark.parametrize(
    ("code", "full"), [("context_length_exceeded", True), ("server_error", False)]
)
def test_only_a_full_window_failure_is_a_context_length_error(code: str, full: bool) -> None:
    """Any other ``response.failed`` stays an ordinary failure: compacting would not help."""
    failed = {
        "type": "response.failed",
        "sequence_number": 2,
        "response": {"status": "failed", "error": {"code": code, "message": "it failed"}},
    }
    with pytest.raises(ProviderError) as caught:
        ResponsesStreamAssembler().feed(failed)
    assert isinstance(caught.value, ContextLengthExceeded) is full
    assert code in caught.value.msg and "it failed" in caught.value.msg

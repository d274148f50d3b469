"""Long sessions pay for their prefix once: cache breakpoints, byte-stable prefixes, and the
cached, reasoning and cost figures that reach the bus, in each wire format.

Everything runs through ``build_session`` against the loopback ``ScriptedServer``; what the
model "received" is read back from the recorded requests, raw bytes included.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from tests.scripted_server import RecordedRequest, ScriptedServer
from tests.test_loop import Recorder, check_request, shell, submit, tools_step
from tui.config import load_settings
from tui.events import Usage
from tui.session import AgentSession
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """Afterwards every request is checked for call/result pairing, in its own format."""
    with ScriptedServer() as running:
        yield running
    for request in running.requests:
        check_request(request)


@contextlib.asynccontextmanager
async def session_for(
    name: str, server: ScriptedServer, workspace: Path, **provider: Any
) -> AsyncIterator[tuple[AgentSession, Recorder]]:
    """A full-auto session for provider ``name`` (any of the three) against ``server``."""
    base = server.base_url if name == "anthropic" else server.openai_base_url
    overrides = {
        "provider": {
            "name": name,
            "model": "scripted-model",
            "base_url": base,
            "api_key": "test-key-not-secret",
            **provider,
        },
        "approval": {"mode": "full-auto"},
    }
    session = build_session(workspace, load_settings(workspace, overrides=overrides))
    recorder = Recorder()
    session._bus.add_listener(recorder)
    try:
        assert session._loop is not None, session._provider_error
        yield session, recorder
    finally:
        await session.aclose()


def marked(body: dict[str, Any]) -> list[str]:
    """Where the ``cache_control`` breakpoints are, as readable paths."""
    found: list[str] = []
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            found.append(f"tools[{i}]")
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system[{i}]" for i, block in enumerate(system) if "cache_control" in block]
    for i, message in enumerate(body["messages"]):
        if isinstance(message["content"], list):
            for j, block in enumerate(message["content"]):
                if "cache_control" in block:
                    found.append(f"messages[{i}].content[{j}]")
    return found


def without_marks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_marks(v) for v in value]
    return value


# -- Anthropic: breakpoints --------------------------------------------------------------------


async def test_anthropic_breakpoints_on_tools_system_and_prefix(
    server: ScriptedServer, workspace: Path
) -> None:
    server.add(
        tools_step(shell("call_1", "echo one")),
        tools_step(shell("call_2", "echo two")),
        {"text": "done"},
    )
    async with session_for("anthropic", server, workspace) as (session, _):
        outcome = await submit(session, "run two things")
    assert outcome.reason == "completed"
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 3
    for body in bodies:
        spots = marked(body)
        assert len(spots) <= 4, spots  # the API's limit
        assert f"tools[{len(body['tools']) - 1}]" in spots  # every tool definition cached
        assert "system[0]" in spots
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        # The newest user turn carries a breakpoint on its last block.
        last = len(body["messages"]) - 1
        assert body["messages"][last]["role"] == "user"
        assert f"messages[{last}].content[{len(body['messages'][last]['content']) - 1}]" in spots
    # Stable: the breakpoint a request put on its last turn is still there, on the same
    # unchanged content, in the next request, so that one reads what this one wrote.
    for before, after in itertools.pairwise(bodies):
        last = len(before["messages"]) - 1
        spot = f"messages[{last}].content[{len(before['messages'][last]['content']) - 1}]"
        assert spot in marked(after)
        assert without_marks(after["messages"][: last + 1]) == without_marks(
            before["messages"][: last + 1]
        )
        assert after["system"] == before["system"] and after["tools"] == before["tools"]


# -- OpenAI-compatible: byte-stable prefixes ---------------------------------------------------


def _split(raw: str) -> tuple[str, str]:
    """The raw body up to the end of the ``messages``/``input`` list, and the rest."""
    # Chat Completions: "messages" is followed by "stream"; Responses: "input" by "store".
    # Neither key can occur unescaped inside the conversation's strings.
    cuts = [raw.index(key) for key in (',"stream":', ',"store":') if key in raw]
    assert cuts, f"no end of the conversation in {raw[:200]}"
    cut = min(cuts)
    assert raw[cut - 1] == "]"
    return raw[: cut - 1], raw[cut:]


@pytest.mark.parametrize("name", ["openai", "openai-responses"])
async def test_consecutive_requests_share_their_prefix_byte_for_byte(
    name: str, server: ScriptedServer, workspace: Path
) -> None:
    server.add(
        tools_step(shell("call_1", "echo one")),
        tools_step(shell("call_2", "echo two")),
        {"text": "done"},
    )
    async with session_for(name, server, workspace) as (session, _):
        assert (await submit(session, "run two things")).reason == "completed"
    raws = [request.raw for request in server.requests]
    assert len(raws) == 3
    for before, after in itertools.pairwise(raws):
        head_before, tail_before = _split(before)
        head_after, tail_after = _split(after)
        assert head_after.startswith(head_before), "the conversation prefix changed"
        assert len(head_after) > len(head_before)
        assert tail_after == tail_before, "something after the conversation changed"


# -- usage and cost ------------------------------------------------------------------------------

USAGE = {
    "input_tokens": 10_000,
    "output_tokens": 500,
    "cached_tokens": 6_000,
    "cache_write_tokens": 3_000,
    "reasoning_tokens": 120,
}
KNOWN = {
    "anthropic": ("claude-sonnet-4-5", "anthropic"),
    "openai": ("gpt-4.1", "openai"),
    "openai-responses": ("gpt-5", "openai"),
}


def _expected_usage(name: str) -> dict[str, int]:
    """What each wire format can say: Anthropic does not count reasoning tokens apart."""
    expected = dict(USAGE)
    if name == "anthropic":
        expected["reasoning_tokens"] = 0
    return expected


@pytest.mark.parametrize("name", ["openai", "openai-responses", "anthropic"])
@pytest.mark.parametrize("streaming", [True, False])
async def test_cached_reasoning_tokens_and_cost_reach_the_bus(
    name: str, streaming: bool, server: ScriptedServer, workspace: Path
) -> None:
    model, provider_id = KNOWN[name]
    server.add({"text": "ok", "usage": USAGE}, {"text": "ok", "usage": USAGE})
    async with session_for(name, server, workspace, model=model, stream=streaming) as (
        session,
        recorder,
    ):
        await submit(session, "hello")
        await submit(session, "again")
        assert session._loop is not None
        loop_usage, loop_cost = session._loop.usage, session._loop.cost_usd
    expected = _expected_usage(name)
    usages: list[Usage] = recorder.of(Usage)
    assert len(usages) == 2
    price = calc_price(
        PriceUsage(
            input_tokens=expected["input_tokens"],
            cache_read_tokens=expected["cached_tokens"],
            cache_write_tokens=expected["cache_write_tokens"] or None,
            output_tokens=expected["output_tokens"],
        ),
        model,
        provider_id=provider_id,
    )
    for event in usages:
        assert event.input_tokens == expected["input_tokens"]
        assert event.output_tokens == expected["output_tokens"]
        assert event.cached_tokens == expected["cached_tokens"]
        assert event.cache_write_tokens == expected["cache_write_tokens"]
        assert event.reasoning_tokens == expected["reasoning_tokens"]
        assert event.cost_usd == pytest.approx(float(price.total_price))
    assert loop_usage.cache_read_tokens == 2 * expected["cached_tokens"]
    assert loop_cost == pytest.approx(2 * float(price.total_price))


async def test_unknown_model_shows_tokens_without_a_cost(
    server: ScriptedServer, workspace: Path
) -> None:
    server.add({"text": "ok", "usage": USAGE})
    async with session_for("openai", server, workspace) as (session, recorder):
        await submit(session, "hello")
        assert session._loop is not None and session._loop.cost_usd is None
    (event,) = recorder.of(Usage)
    assert event.input_tokens == 10_000 and event.cached_tokens == 6_000
    assert event.cost_usd is None


def _first(requests: list[RecordedRequest]) -> dict[str, Any]:
    body = requests[0].body
    assert isinstance(body, dict)
    return body


async def test_reasoning_effort_is_sent(server: ScriptedServer, workspace: Path) -> None:
    server.add({"text": "ok"})
    async with session_for("openai", server, workspace, reasoning_effort="high") as (session, _):
        await submit(session, "hello")
    assert _first(server.requests)["reasoning_effort"] == "high"
    assert json.loads(server.requests[0].raw)["reasoning_effort"] == "high"

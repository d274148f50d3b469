"""Reasoning survives the tool loop: Anthropic thinking blocks and Responses API encrypted
reasoning items come back in the next request exactly as they were received.

The fixtures are in the documented shapes (``tests/fixtures/reasoning_blocks.json``, sources
in ``tests/fixtures/README.md``), with characters chosen to catch any re-encoding.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import with_metadata
from tests.scripted_server import ScriptedServer
from tests.test_loop import shell, submit
from tests.test_prompt_cache import server as server
from tests.test_prompt_cache import session_for
from tui.agent.providers.base import Message, ReasoningItem, ToolCall
from tui.agent.transcript import message_from_json, message_to_json
from tui.events import AssistantMessage, Usage

pytestmark = pytest.mark.timeout(60)

FIXTURES = json.loads(
    (Path(__file__).parent / "fixtures" / "reasoning_blocks.json").read_text(encoding="utf-8")
)
THINKING = FIXTURES["anthropic_thinking"]
REDACTED = FIXTURES["anthropic_redacted_thinking"]
REASONING = FIXTURES["responses_reasoning"]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def assert_sent_verbatim(raw: str, block: dict[str, Any]) -> None:
    """Every string of ``block`` appears in the raw request as JSON would write it."""
    for text in _strings(block):
        spellings = {json.dumps(text), json.dumps(text, ensure_ascii=False)}
        assert any(spelling in raw for spelling in spellings), f"{text[:40]!r} not sent as is"


@pytest.mark.parametrize("streaming", [True, False])
async def test_anthropic_thinking_round_trips_byte_exact(
    streaming: bool, server: ScriptedServer, workspace: Path
) -> None:
    server.add(
        {"thinking": [THINKING, REDACTED], "tool_calls": [shell("toolu_1", "echo hi")]},
        {"text": "done"},
    )
    async with session_for(
        "anthropic", server, workspace, stream=streaming, thinking_budget=2048
    ) as (session, recorder):
        outcome = await submit(session, "list things")
    assert outcome.reason == "completed"
    first, second = (request.body for request in server.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert first["max_tokens"] > 2048
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    # First in the turn, unchanged, then the call they led to; the result follows.
    assert assistant["content"][:2] == [THINKING, REDACTED]
    assert assistant["content"][2]["type"] == "tool_use"
    assert second["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"
    assert_sent_verbatim(server.requests[1].raw, THINKING)
    assert_sent_verbatim(server.requests[1].raw, REDACTED)
    shown = [event.thinking for event in recorder.of(AssistantMessage)]
    assert shown[0] == THINKING["thinking"]  # the readable part, for the chat


async def test_responses_tool_loop_carries_encrypted_reasoning(
    server: ScriptedServer, workspace: Path
) -> None:
    second_reasoning = {**REASONING, "id": "rs_second", "encrypted_content": "gAAAAB-second"}
    server.add(
        {
            "reasoning": [REASONING],
            "tool_calls": [shell("call_ls", "echo listed")],
            "usage": {"input_tokens": 900, "output_tokens": 80, "reasoning_tokens": 64},
        },
        {"reasoning": [second_reasoning], "text": "All listed."},
    )
    async with session_for("openai-responses", server, workspace, reasoning_effort="low") as (
        session,
        recorder,
    ):
        outcome = await submit(session, "list the files")
    assert outcome.reason == "completed" and outcome.final_text == "All listed."
    first, second = (request.body for request in server.requests)
    assert server.requests[0].path == "/v1/responses"
    for body in (first, second):
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["reasoning"] == {"effort": "low", "summary": "auto"}
        assert all(tool["type"] == "function" and "name" in tool for tool in body["tools"])
    assert first["input"] == [{"type": "message", "role": "user", "content": "list the files"}]
    items = second["input"]
    assert items[1] == REASONING  # verbatim, before the call it led to
    assert items[2] == {
        "type": "function_call",
        "call_id": "call_ls",
        "name": "run_shell",
        "arguments": json.dumps(with_metadata("run_shell", {"command": "echo listed"})),
    }
    assert items[3]["type"] == "function_call_output" and items[3]["call_id"] == "call_ls"
    assert json.loads(items[3]["output"])["result"]["stdout"] == "listed\n"
    assert_sent_verbatim(server.requests[1].raw, REASONING)
    usage = recorder.of(Usage)[0]
    assert usage.reasoning_tokens == 64 and usage.input_tokens == 900
    summaries = [event.thinking for event in recorder.of(AssistantMessage)]
    assert summaries[0] == REASONING["summary"][0]["text"]


def test_reasoning_survives_a_saved_session() -> None:
    message = Message(
        "assistant",
        "",
        tool_calls=[ToolCall("toolu_1", "run_shell", '{"command": "ls"}')],
        reasoning=[ReasoningItem("anthropic", THINKING, THINKING["thinking"])],
    )
    line = json.dumps(message_to_json(message), ensure_ascii=False)
    assert message_from_json(json.loads(line)).reasoning == message.reasoning


def test_an_unsendable_reasoning_item_is_dropped_not_altered() -> None:
    """A lone surrogate cannot be sent; cleaning it would break the signature, so the block
    is left out (the API then treats the turn as one without thinking)."""
    broken = {**THINKING, "thinking": "bad \ud800 half"}
    message = Message(
        "assistant",
        "x",
        reasoning=[
            ReasoningItem("anthropic", broken, "bad"),
            ReasoningItem("anthropic", THINKING, "ok"),
        ],
    )
    restored = message_from_json(message_to_json(message))
    assert [item.data for item in restored.reasoning] == [THINKING]


def test_only_reasoning_blocks_replay_verbatim() -> None:
    """A saved session edited to carry a tool result or a call as "reasoning" would pass the
    call/result pairing unseen: such items are dropped on the way in."""
    smuggled = [
        ReasoningItem("anthropic", {"type": "tool_result", "tool_use_id": "x", "content": "ok"}),
        ReasoningItem("responses", {"type": "function_call_output", "call_id": "x", "output": "1"}),
        ReasoningItem("responses", REASONING, "summary"),
    ]
    restored = message_from_json(message_to_json(Message("assistant", "x", reasoning=smuggled)))
    assert [item.data for item in restored.reasoning] == [REASONING]

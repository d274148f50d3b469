"""A thousand turns with summaries that always fail: compaction's fallback stays bounded, every
request fits the window, and the saved session resumes and goes on."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_loop import answer, call, check_request, tools_step
from tui.agent.providers.openai import OpenAIProvider
from tui.config import load_settings
from tui.events import Compacted, Event
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(600)

WINDOW = 24_000
"""The tool definitions and system prompt alone are ~9,700 tokens: room for ~10,000 more."""
TURNS = 1_000


def provider(server: ScriptedServer) -> OpenAIProvider:
    return OpenAIProvider(
        "scripted-model",
        api_key="test-key",
        base_url=server.openai_base_url,
        backoff_base=0.001,
        max_retries=2,
    )


async def test_a_thousand_turns_with_failing_summaries_stay_in_the_window(
    workspace: Path,
) -> None:
    # Small outputs under long, distinct paths: stubbing old outputs frees nothing, so every
    # compaction needs a summary, and each failed one falls back to listing the calls.
    names = [
        f"{n:03d}-notes-of-a-project-with-rather-long-file-names-{'x' * 40}.txt" for n in range(100)
    ]
    for name in names:
        (workspace / name).write_text(f"{name}\nshort\n")
    steps = [
        tools_step(call(f"c{n}", "read_file", {"path": names[n % 100], "limit": 1 + n % 7}))
        for n in range(TURNS)
    ]
    overrides = {
        "provider": {"name": "openai", "model": "scripted-model", "context_window": WINDOW},
        "approval": {"mode": "full-auto"},
    }
    with ScriptedServer(
        [*steps, answer("all read"), answer("still here")],
        window_tokens=WINDOW,
        summary_status=500,
        record_bodies=False,
    ) as server:
        loaded = load_settings(workspace, overrides=overrides, env={})
        session = build_session(workspace, loaded, provider=provider(server))
        events: list[Event] = []
        session._bus.add_listener(events.append)
        started = time.monotonic()
        try:
            outcome = await session.submit("read the notes a thousand times")
        finally:
            await session.aclose()
        took = time.monotonic() - started
        compactions = [e for e in events if isinstance(e, Compacted)]
        assert outcome.reason == "completed", outcome.error
        assert outcome.final_text == "all read" and outcome.turns == TURNS + 1
        assert server.rejected == 0, "a request went over the window"
        assert compactions and all(e.tokens_after <= WINDOW for e in compactions)
        assert any(e.fallback for e in compactions), "the summaries were meant to fail"
        assert server.summary_requests >= len([e for e in compactions if e.stage == "summary"])
        sizes = [r.body["bytes"] for r in server.requests if isinstance(r.body, dict)]
        print(
            f"{TURNS} turns in {took:.1f} s, {len(compactions)} compactions, largest request "
            f"{max(sizes) // 4} of {WINDOW} tokens"
        )
        assert max(sizes) // 4 <= WINDOW

        # The saved session resumes, fits, and goes on.
        again = build_session(
            workspace, loaded, resume=session.session_id, provider=provider(server)
        )
        try:
            resumed = await again.submit("still there?")
        finally:
            await again.aclose()
        assert resumed.reason == "completed" and resumed.final_text == "still here"
        assert server.rejected == 0
        assert server.requests[-1].body["bytes"] // 4 <= WINDOW


def test_the_fallback_summary_is_bounded() -> None:
    """Unit check of the bound itself: however many failed summaries fold into each other."""
    import asyncio

    from tui.agent.compaction import FILES_MAX_CHARS, SUMMARY_MAX_CHARS, summarise
    from tui.agent.providers.base import Message, ToolCall

    async def failing(system: str, prompt: str) -> str:
        raise RuntimeError("summaries are down")

    messages: list[Message] = [Message(role="user", content="go")]
    for round_ in range(40):
        for n in range(30):
            call_id = f"r{round_}c{n}"
            arguments = json.dumps({"path": f"/very/long/path/number/{round_}/{n}/file.txt"})
            messages.append(
                Message(role="assistant", tool_calls=[ToolCall(call_id, "read_file", arguments)])
            )
            messages.append(
                Message(role="tool", content="ok", tool_call_id=call_id, tool_name="read_file")
            )
        done = asyncio.run(summarise(messages, window=WINDOW, summarise_fn=failing))
        assert done is not None and done.fallback
        messages = done.messages
        summary = next(m for m in messages if m.content.startswith("[Summary"))
        assert len(summary.content) <= SUMMARY_MAX_CHARS + FILES_MAX_CHARS + 1_000
    assert next(m.content for m in messages if m.role == "user") == "go"


__all__ = ["check_request"]


def test_a_thousand_messages_from_the_person_are_kept_within_a_budget() -> None:
    """The person's words are kept word for word while they fit; past a quarter of the
    window the oldest (but the first, the task) are shortened into the summary."""
    import asyncio

    from tui.agent.compaction import summarise
    from tui.agent.providers.base import Message, ToolCall

    async def summary(system: str, prompt: str) -> str:
        return "worked on it"

    messages: list[Message] = []
    for n in range(1_000):
        messages.append(Message(role="user", content=f"message {n}: " + "please " * 30))
        messages.append(Message(role="assistant", tool_calls=[ToolCall(f"c{n}", "time", "{}")]))
        messages.append(Message(role="tool", content="now", tool_call_id=f"c{n}", tool_name="time"))
    done = asyncio.run(summarise(messages, window=WINDOW, summarise_fn=summary))
    assert done is not None
    kept = [m.content for m in done.messages if m.role == "user" and m.content.startswith("mess")]
    assert kept[0].startswith("message 0:") and kept[-1].startswith("message 999:")
    assert not any(text.startswith("message 500:") for text in kept)  # shortened instead
    assert sum(map(len, kept)) <= WINDOW + 3 * 250  # a quarter of the window (chars), + tail
    (marker,) = [m.content for m in done.messages if m.content.startswith("[Summary")]
    assert "Earlier messages from the person (shortened to fit):" in marker

"""A context that never overflows, end to end against a loopback model server with a window.

The server (``ScriptedServer(window_tokens=N)``) refuses any request over its window with the
error its kind of server really sends (the Responses API's inside its stream, as
``response.failed``), and answers the rest with a prompt usage it counted itself. Each test
runs in each wire format: Chat Completions, Anthropic Messages and the Responses API. Steps
are real shell commands, each appending its own line to a file: that file is the proof that no
step ran twice and none was lost, whatever compaction did in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.scripted_server import RecordedRequest, ScriptedServer
from tests.scripted_windows import RESPONSES_TOO_LONG, STYLES, context_error
from tests.test_headless_cli import Cli, ServerProcess, headless
from tests.test_headless_cli import cli as cli  # the fixtures, for the headless test
from tests.test_headless_cli import model_server as model_server
from tests.test_loop import (
    Recorder,
    answer,
    check_messages,
    check_request,
    open_session,
    shell,
    tools_step,
    user_texts,
)
from tests.test_prompt_cache import session_for as named_session
from tui.agent.compaction import SUMMARY_HEADER, stub_outputs, summarise
from tui.agent.context_window import table_window
from tui.agent.providers.base import Message, ToolCall
from tui.agent.providers.context_errors import classify
from tui.agent.transcript import SessionStore
from tui.config import load_settings
from tui.events import Compacted, Notice, TurnEnded
from tui.exec.local import LocalBackend
from tui.session import AgentSession
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.registry import ToolRegistry
from tui.tools.truncation import envelope
from tui.wiring import build_session

Api = Literal["openai", "anthropic", "openai-responses"]
RESPONSES = "openai-responses"
every_api = pytest.mark.parametrize("api", ["openai", "anthropic", RESPONSES])
SUMMARY = "The agent ran numbered steps that each append a line to steps.log."
OUTPUT_CHARS = 4_500
"""Under run_shell's 5,000-character cut, so every result reaches the model whole (~1.1k
tokens each)."""


def step(number: int, chars: int = OUTPUT_CHARS) -> dict[str, Any]:
    command = f"echo step-{number} >> steps.log && head -c {chars} /dev/zero | tr '\\0' y"
    return tools_step(shell(f"call_{number}", command))


def definition_tokens() -> int:
    """What the built-in tools' definitions take of every request, as the server counts it."""
    registry = ToolRegistry(builtin_tools(LocalBackend()))
    return len(json.dumps(registry.definitions())) // 4


def steps_run(workspace: Path) -> list[str]:
    path = workspace / "steps.log"
    return path.read_text().split() if path.exists() else []


@contextlib.contextmanager
def windowed(window: int, style: str = "auto") -> Any:
    with ScriptedServer(window_tokens=window, window_error=style, summary_text=SUMMARY) as server:
        yield server
    for request in server.requests:
        if request.body.get("tools"):
            check_request(request)


@contextlib.asynccontextmanager
async def _opened(
    api: Api, server: ScriptedServer, workspace: Path
) -> AsyncIterator[tuple[AgentSession, Recorder]]:
    if api == "openai" or api == "anthropic":
        async with open_session(api, server, workspace) as opened:
            yield opened
        return
    async with named_session(RESPONSES, server, workspace) as (session, rec):
        yield session, rec
        assert session._loop is not None
        check_messages(session._loop.messages)


@contextlib.asynccontextmanager
async def session_for(
    api: Api, server: ScriptedServer, workspace: Path, **provider: Any
) -> AsyncIterator[tuple[AgentSession, Recorder]]:
    async with _opened(api, server, workspace) as (session, rec):
        if provider.get("context_window"):
            assert session._loop is not None
            session._loop.context.meter.override = provider["context_window"]
        yield session, rec


def person_texts(request: RecordedRequest) -> list[str]:
    """The person's words in a request, in any of the three wire formats."""
    if not request.path.endswith("/responses"):
        return user_texts(request)
    texts: list[str] = []
    for item in request.body["input"]:
        if item.get("type") != "message" or item.get("role") != "user":
            continue
        content = item["content"]
        parts = [content] if isinstance(content, str) else [p.get("text", "") for p in content]
        texts += [part for part in parts if part]
    return texts


def request_tokens(server: ScriptedServer) -> list[int]:
    """Each request's size as the server counts it against the window (body bytes / 4)."""
    return [len(r.raw.encode()) // 4 for r in server.requests]


# -- classification ---------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
def test_each_servers_context_error_is_recognised_with_its_limit(style: str) -> None:
    body = json.dumps(context_error(style, "openai", 9_000, 8_192)).encode()
    message = "server said so"  # the real message is read from the body too
    error = classify(400, body, message)
    assert error is not None
    assert error.limit == (None if style in ("ollama", "responses") else 8_192)


def test_a_token_rate_limit_is_not_a_full_window() -> None:
    body = b'{"error": {"message": "Rate limit reached: too many tokens per minute"}}'
    assert classify(429, body, "too many tokens per minute") is None
    assert classify(400, b'{"error": {"message": "bad tool schema"}}', "bad tool schema") is None


def test_the_window_table_matches_by_family() -> None:
    assert table_window("claude-sonnet-4-5") == 200_000
    assert table_window("gpt-4o-mini-2024-07-18") == 128_000
    assert table_window("gpt-4") == 8_192
    assert table_window("openrouter/qwen/qwen3-coder") == 262_144


# -- recovery from a "too long" answer ---------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "style"),
    [
        ("openai", "auto"),
        ("anthropic", "auto"),
        ("openai", "vllm"),
        ("openai", "llamacpp"),
        ("openai", "ollama"),
        (RESPONSES, "auto"),  # streamed: response.failed inside a 200 stream
        (RESPONSES, "responses"),  # the Responses API's 400 body
    ],
)
async def test_a_full_window_is_compacted_and_the_request_retried_once(
    api: Api, style: str, workspace: Path
) -> None:
    window = 16_000
    with windowed(window, style) as server:
        server.add(*(step(n) for n in range(1, 9)), answer("all eight done"))
        async with session_for(api, server, workspace) as (session, rec):
            assert session._loop is not None
            assert session._loop.context.meter.window == table_window("scripted-model")
            outcome = await asyncio.wait_for(session.submit("run the eight steps"), 60)
            learned = session._loop.context.meter.learned

    assert outcome.reason == "completed", outcome.error
    assert outcome.final_text == "all eight done"
    assert steps_run(workspace) == [f"step-{n}" for n in range(1, 9)]
    assert server.rejected >= 1
    assert any(e.reason == "overflow" for e in rec.of(Compacted))
    if api == RESPONSES:  # refused in its own way, in words that state no limit
        assert set(server.refusals) == {"response.failed" if style == "auto" else "400"}
        assert any(RESPONSES_TOO_LONG in notice.message for notice in rec.of(Notice))
    if style == "ollama" or api == RESPONSES:
        assert learned is not None and learned < table_window("scripted-model")
    else:
        assert learned == window
    # Every request the server accepted fit; every one carried the person's words.
    accepted = [r for r in server.requests if r.body.get("tools")]
    assert all("run the eight steps" in person_texts(r) for r in accepted)


# -- a long session --------------------------------------------------------------------------


@every_api
async def test_three_hundred_steps_compact_many_times_and_each_runs_once(
    api: Api, workspace: Path
) -> None:
    # Room above the built-in tools' definitions for stubs: the same room however the set of
    # tools and their descriptions grows (the server counts body bytes / 4).
    window = definition_tokens() + 18_000
    with windowed(window) as server:
        server.add(*(step(n) for n in range(1, 301)), answer("finished"))
        async with session_for(api, server, workspace, context_window=window) as (session, rec):
            outcome = await asyncio.wait_for(session.submit("run all 300 steps"), 240)
            transcript = session._transcript.path

    assert outcome.reason == "completed", outcome.error
    assert outcome.turns == 301
    assert steps_run(workspace) == [f"step-{n}" for n in range(1, 301)]
    compactions = rec.of(Compacted)
    assert len(compactions) >= 5
    assert {c.stage for c in compactions} == {"stubs", "summary"}
    assert server.rejected == 0  # the estimate kept every request under the window
    assert max(request_tokens(server)) <= window
    assert server.summary_requests >= 1
    # Every summary request fit the window too: a refused one would have left the mechanical
    # fallback in place of the model's summary.
    assert not any(c.fallback for c in compactions)
    assert max(c.tokens_after for c in compactions) < window
    tool_requests = [r for r in server.requests if r.body.get("tools")]
    assert len(tool_requests) == 301
    assert all("run all 300 steps" in person_texts(r) for r in tool_requests)
    # The transcript kept everything: every step's full output, though the model no longer has it.
    saved = SessionStore().read(transcript.stem)
    outputs = [m for m in saved.saved_messages if m.role == "tool"]
    assert len(outputs) == 300 and all("y" * OUTPUT_CHARS in m.content for m in outputs)
    assert saved.compactions == len(compactions)


@every_api
async def test_no_turn_cap_unless_asked(api: Api, workspace: Path) -> None:
    with windowed(200_000) as server:
        server.add(*(step(n, chars=10) for n in range(1, 61)), answer("sixty"))
        async with session_for(api, server, workspace) as (session, rec):
            outcome = await asyncio.wait_for(session.submit("go"), 60)
    assert outcome.reason == "completed" and outcome.turns == 61
    assert steps_run(workspace) == [f"step-{n}" for n in range(1, 61)]
    assert rec.of(TurnEnded)[-1].reason == "completed"


# -- resume --------------------------------------------------------------------------------------


@every_api
async def test_resuming_a_compacted_session_sends_the_compacted_form(
    api: Api, workspace: Path
) -> None:
    with windowed(200_000) as server:
        server.add(*(step(n) for n in range(1, 6)), answer("five done"))
        async with session_for(api, server, workspace) as (session, rec):
            await asyncio.wait_for(session.submit("run five steps"), 60)
            assert session._loop is not None
            assert await session._loop.compact("the step numbers")
            compacted = [m.content for m in session._loop.messages]
            session_id = session.session_id
        assert rec.of(Compacted)[-1].reason == "manual"
        assert rec.of(Compacted)[-1].focus == "the step numbers"
        # The summary request carried the focus.
        assert "the step numbers" in json.dumps(server.requests[-1].body)
        before = len(server.requests)

        server.add(answer("resumed"))
        overrides = {
            "provider": {
                "name": api,
                "model": "scripted-model",
                "base_url": server.base_url if api == "anthropic" else server.openai_base_url,
                "api_key": "test-key-not-secret",
            },
            "approval": {"mode": "full-auto"},
        }
        resumed = build_session(
            workspace, load_settings(workspace, overrides=overrides), resume=session_id
        )
        try:
            assert resumed._loop is not None
            assert [m.content for m in resumed._loop.messages] == compacted
            outcome = await asyncio.wait_for(resumed.submit("and now?"), 30)
        finally:
            await resumed.aclose()

    assert outcome.final_text == "resumed"
    sent = json.dumps(server.requests[before].body, ensure_ascii=False)
    assert SUMMARY_HEADER in sent and SUMMARY in sent
    # Steps 1-3 stayed summarised; the last turns (steps 4 and 5) were kept word for word.
    assert sent.count("y" * OUTPUT_CHARS) == 2
    assert "run five steps" in sent and "and now?" in sent
    assert steps_run(workspace) == [f"step-{n}" for n in range(1, 6)]


# -- what a compaction keeps -------------------------------------------------------------------


def tool_message(call_id: str, name: str, text: str) -> Message:
    return Message(role="tool", content=envelope(text), tool_call_id=call_id, tool_name=name)


def test_stubs_name_a_file_holding_exactly_their_own_output(workspace: Path) -> None:
    # Models reuse ids across turns: two outputs of "call_1" must not share one file.
    first, second = "a" * 2_000, "b" * 2_000
    messages = [
        Message(role="user", content="go"),
        Message(role="assistant", tool_calls=[ToolCall("call_1", "run_shell", "{}")]),
        tool_message("call_1", "run_shell", first),
        Message(role="assistant", tool_calls=[ToolCall("call_1", "run_shell", "{}")]),
        tool_message("call_1", "run_shell", second),
    ]
    stubbed, count = stub_outputs(messages, keep_from=len(messages))
    assert count == 2
    paths = [re.search(r"full output in (\S+) ", m.content).group(1) for m in stubbed[2::2]]  # type: ignore[union-attr]
    assert [Path(p).read_text() for p in paths] == [first, second]


async def test_a_summary_keeps_the_persons_words_tasks_files_and_open_calls() -> None:
    todo = '{"todos": [{"content": "Fix the parser", "status": "in_progress"}]}'
    messages = [
        Message(role="user", content="please fix the parser"),
        Message(role="assistant", tool_calls=[ToolCall("t1", "todo_write", todo)]),
        tool_message("t1", "todo_write", "Task list updated: 0/1 completed.\n[>] Fix the parser"),
        Message(
            role="assistant",
            tool_calls=[ToolCall("e1", "edit_file", '{"path": "src/parser.py", "old": "a"}')],
        ),
        tool_message("e1", "edit_file", "edited"),
        Message(role="assistant", tool_calls=[ToolCall("open", "run_shell", '{"command": "x"}')]),
        Message(role="user", content="also keep the tests green"),
        *[
            m
            for n in range(4)
            for m in (
                Message(role="assistant", tool_calls=[ToolCall(f"s{n}", "run_shell", "{}")]),
                tool_message(f"s{n}", "run_shell", "ok"),
            )
        ],
    ]
    prompts: list[str] = []

    async def model(system: str, prompt: str) -> str:
        prompts.append(prompt)
        return "Edited the parser."

    result = await summarise(messages, window=100_000, summarise_fn=model, focus="the parser")
    assert result is not None
    users = [m.content for m in result.messages if m.role == "user"]
    assert users[0] == "please fix the parser"
    summary = next(u for u in users if u.startswith(SUMMARY_HEADER))
    assert "Edited the parser." in summary
    assert "Files touched: src/parser.py" in summary
    assert "[>] Fix the parser" in summary
    # The call still waiting for its result stays, and everything after it, verbatim.
    assert any(c.id == "open" for m in result.messages for c in m.tool_calls)
    assert "also keep the tests green" in users
    assert "the parser" in prompts[0]


@every_api
async def test_a_long_history_is_summarised_in_requests_that_each_fit(
    api: Api, workspace: Path
) -> None:
    window = 16_000
    history: list[Message] = [Message(role="user", content="a long job")]
    for n in range(120):  # ~180k characters of results: far more than one request can carry
        history += [
            Message(role="assistant", tool_calls=[ToolCall(f"c{n}", "run_shell", "{}")]),
            tool_message(f"c{n}", "run_shell", f"result {n} " + "z" * 1_500),
        ]
    with windowed(window) as server:
        async with session_for(api, server, workspace, context_window=window) as (session, rec):
            assert session._loop is not None
            session._loop.messages = list(history)
            assert await session.compact()
            sent = session._loop.messages
    event = rec.of(Compacted)[-1]
    assert not event.fallback and server.rejected == 0
    assert server.summary_requests >= 3  # chunked, each chunk folding in the summary so far
    assert sent[0].content == "a long job" and sent[1].content.startswith(SUMMARY_HEADER)
    assert len(sent) < len(history) // 10


def test_headless_runs_past_fifty_turns_with_no_cap_set(
    cli: Cli,
    model_server: Callable[..., ServerProcess],
) -> None:
    server = model_server([step(n, chars=10) for n in range(1, 56)] + [answer("fifty-five")])
    done = cli.run(*headless(server, "go", "--approval-mode", "full-auto"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "fifty-five\n"
    assert steps_run(cli.workspace) == [f"step-{n}" for n in range(1, 56)]


@every_api
async def test_cancel_stops_a_compaction_and_the_session_goes_on(api: Api, workspace: Path) -> None:
    with ScriptedServer() as server:  # no summary_text: the summary request gets the hang step
        server.add(*(step(n, chars=10) for n in range(1, 5)), answer("four"))
        server.add({"hang": True}, answer("still here"))
        async with session_for(api, server, workspace) as (session, rec):
            assert session._loop is not None
            await asyncio.wait_for(session.submit("four steps"), 30)
            before = list(session._loop.messages)
            compacting = asyncio.ensure_future(session.compact())
            assert await asyncio.to_thread(server.hang_started.wait, 10)
            session._loop.cancel()
            assert await asyncio.wait_for(compacting, 10) is False
            assert await asyncio.to_thread(server.wait_for_disconnects, 1, 10)
            assert session._loop.messages == before  # nothing half-compacted
            outcome = await asyncio.wait_for(session.submit("are you there?"), 30)
    assert outcome.final_text == "still here"
    assert not rec.of(Compacted)

"""The agent loop end to end in-process: build_session against a real loopback model server.

Why in-process: these tests drive the loop's own behaviour (strategies, steering, cancel,
sub-agents, hooks) and need to reach into the session while it runs (steer, cancel, read the
bus). Everything below the loop is real: the provider speaks HTTP to ``ScriptedServer`` on
127.0.0.1 in both wire formats, tools run real subprocesses through the real policy, hooks are
real shell commands. What the model "saw" is read back from the server's recorded requests.

A rule every wire protocol enforces is checked generically for every test: each tool call in a
request has exactly one result, right after the assistant message that made it
(``check_requests``, run by the ``server`` fixture on every recorded request, and
``check_messages`` on the loop's own conversation at the end of each session).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.conftest import with_metadata
from tests.scripted_server import RecordedRequest, ScriptedServer
from tests.waiting import until
from tui.agent.hooks import PreToolDecision, ToolCallInfo
from tui.agent.providers.base import Message
from tui.config import load_settings
from tui.events import (
    AssistantMessage,
    AssistantTextDelta,
    ErrorEvent,
    Event,
    Notice,
    ToolCallCompleted,
    ToolCallSkipped,
    ToolCallStarted,
    TurnEnded,
    UserMessage,
)
from tui.security.approval import NoApprover
from tui.session import AgentSession
from tui.wiring import build_session

Api = Literal["openai", "anthropic"]
DEADLINE = 15.0
"""No test waits longer than this for anything: a hang fails instead of blocking the suite."""

# Events that stop each wire format after some text but before the finish (see
# test_providers.py): OpenAI role chunk + 2 text chunks; Anthropic start, block, ping, 2 texts.
CUT_MID_ANSWER = {"openai": 3, "anthropic": 5}

both_apis = pytest.mark.parametrize("api", ["openai", "anthropic"])
all_modes = pytest.mark.parametrize(
    ("api", "streaming"),
    [("openai", True), ("openai", False), ("anthropic", True), ("anthropic", False)],
)


# -- reading the wire ----------------------------------------------------------------------


def api_of(request: RecordedRequest) -> Api:
    return "openai" if request.path.endswith("/chat/completions") else "anthropic"


def body_of(request: RecordedRequest) -> dict[str, Any]:
    assert isinstance(request.body, dict), f"not a JSON body: {request.body!r}"
    return request.body


def wire_calls(request: RecordedRequest) -> list[tuple[str, str]]:
    """(id, name) of every tool call the assistant made, in conversation order."""
    found: list[tuple[str, str]] = []
    for message in body_of(request)["messages"]:
        if message["role"] != "assistant":
            continue
        if api_of(request) == "openai":
            for call in message.get("tool_calls") or []:
                found.append((call["id"], call["function"]["name"]))
        elif isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    found.append((block["id"], block["name"]))
    return found


def wire_results(request: RecordedRequest) -> dict[str, dict[str, Any]]:
    """Tool results by call id: ``text`` (the raw content), ``envelope`` (parsed), ``is_error``.

    A duplicate id fails here: each call must have exactly one result.
    """
    results: dict[str, dict[str, Any]] = {}

    def add(call_id: str, text: str, is_error: bool | None) -> None:
        assert call_id not in results, f"two results for {call_id}"
        results[call_id] = {"text": text, "envelope": json.loads(text), "is_error": is_error}

    for message in body_of(request)["messages"]:
        if api_of(request) == "openai":
            if message["role"] == "tool":
                add(message["tool_call_id"], message["content"], None)
        elif message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    if isinstance(content, list):  # the text, then images the tool returned
                        content = next(p["text"] for p in content if p.get("type") == "text")
                    add(block["tool_use_id"], content, block.get("is_error"))
    return results


def result_value(request: RecordedRequest, call_id: str) -> Any:
    """The ``result`` inside the harness envelope of one call's result, checking the envelope:
    text, or an object where the tool's contract gives it one (run_shell's exit_code/stdout/
    stderr)."""
    entry = wire_results(request)[call_id]
    envelope = entry["envelope"]
    assert set(envelope) == {"harness_timestamp", "result"}, envelope
    assert envelope["harness_timestamp"]["source"] == "harness"
    assert abs(envelope["harness_timestamp"]["unix_millis"] / 1000 - time.time()) < 600
    return envelope["result"]


def result_text(request: RecordedRequest, call_id: str) -> str:
    """``result_value`` as text (an object as its JSON)."""
    value = result_value(request, call_id)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def check_request(request: RecordedRequest) -> None:
    """Every tool call has exactly one result, placed where the wire format demands it.

    OpenAI: the ``tool`` messages directly follow the assistant message, one per call.
    Anthropic: the next message is a user message whose leading blocks are the results.
    """
    if request.path.endswith("/responses"):
        check_responses_request(body_of(request)["input"])
        return
    messages = body_of(request)["messages"]
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        if api_of(request) == "openai":
            ids = [call["id"] for call in message.get("tool_calls") or []]
            if not ids:
                continue
            following = messages[index + 1 : index + 1 + len(ids)]
            answered = [m.get("tool_call_id") for m in following if m["role"] == "tool"]
            assert sorted(answered) == sorted(ids), f"calls {ids} answered by {answered}"
            rest = messages[index + 1 + len(ids) :]
            assert all(m["role"] != "tool" or m["tool_call_id"] not in ids for m in rest), (
                "a second result for the same call"
            )
        else:
            content = message["content"] if isinstance(message["content"], list) else []
            ids = [b["id"] for b in content if b.get("type") == "tool_use"]
            if not ids:
                continue
            assert index + 1 < len(messages), f"calls {ids} have no results at all"
            reply = messages[index + 1]
            assert reply["role"] == "user" and isinstance(reply["content"], list)
            blocks = reply["content"]
            lead = [b["tool_use_id"] for b in blocks[: len(ids)] if b["type"] == "tool_result"]
            assert sorted(lead) == sorted(ids), f"calls {ids} answered by {lead}"
            later = [b for b in blocks[len(ids) :] if b.get("type") == "tool_result"]
            assert not later, "results beyond the calls made"
    wire_results(request)  # no duplicate ids anywhere, every result an envelope


def check_responses_request(items: list[dict[str, Any]]) -> None:
    """Responses API: every ``function_call`` is answered by exactly one
    ``function_call_output``, after it and before the next user message."""
    for index, item in enumerate(items):
        if item.get("type") != "function_call":
            continue
        answers = [
            later
            for later in items[index + 1 :]
            if later.get("type") == "function_call_output" and later["call_id"] == item["call_id"]
        ]
        assert len(answers) == 1, f"call {item['call_id']} answered {len(answers)} times"
        position = items.index(answers[0])
        between = items[index + 1 : position]
        assert all(b.get("role") != "user" for b in between), "a user turn before the result"


def check_messages(messages: list[Message]) -> None:
    """The loop's own conversation obeys the same rule (it is what the next request sends)."""
    for index, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        ids = [call.id for call in message.tool_calls]
        following = messages[index + 1 : index + 1 + len(ids)]
        assert sorted(m.tool_call_id or "" for m in following if m.role == "tool") == sorted(ids), (
            f"calls {ids} not answered exactly once in {following}"
        )
    answers = [m.tool_call_id for m in messages if m.role == "tool"]
    assert len(answers) == len(set(answers)), "a call answered twice"


def system_prompt_of(request: RecordedRequest) -> str:
    body = body_of(request)
    if api_of(request) == "openai":
        first = body["messages"][0]
        assert first["role"] == "system"
        return str(first["content"])
    return str(body["system"])


def tool_names_of(request: RecordedRequest) -> list[str]:
    tools = body_of(request).get("tools") or []
    if api_of(request) == "openai":
        return [tool["function"]["name"] for tool in tools]
    return [tool["name"] for tool in tools]


def user_texts(request: RecordedRequest) -> list[str]:
    """Every piece of user-typed text in the request, in order (not tool results)."""
    texts: list[str] = []
    for message in body_of(request)["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
            continue
        for block in content:
            if block.get("type") == "text":
                texts.append(block["text"])
    return texts


# -- scripting -------------------------------------------------------------------------------


def call(call_id: str, name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    """A scripted tool call; a dict gets the safety metadata a well-behaved model sends with
    a tool that requires it (``with_metadata``), a string is sent exactly as given."""
    raw = arguments if isinstance(arguments, str) else json.dumps(with_metadata(name, arguments))
    return {"id": call_id, "name": name, "arguments": raw}


def shell(call_id: str, command: str, **extra: Any) -> dict[str, Any]:
    return call(call_id, "run_shell", {"command": command, **extra})


def answer(text: str) -> dict[str, Any]:
    return {"text": text}


def tools_step(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    return {"text": text, "tool_calls": list(calls)}


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A fresh server per test; afterwards every request it got is checked for call/result
    pairing, so no test can pass while the loop sends an unanswered or doubly answered call."""
    with ScriptedServer() as running:
        yield running
    for request in running.requests:
        check_request(request)


class Recorder:
    """Every bus event in publish order, plus a way to await a condition on them."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = asyncio.Event()

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()

    async def wait_for(self, predicate: Callable[[Event], bool], what: str) -> Event:
        async def scan() -> Event:
            seen = 0
            while True:
                for event in self.events[seen:]:
                    if predicate(event):
                        return event
                seen = len(self.events)
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(scan(), DEADLINE)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None

    def of(self, kind: type[Event]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]


@contextlib.asynccontextmanager
async def open_session(
    api: Api,
    server: ScriptedServer,
    workspace: Path,
    *,
    streaming: bool = True,
    approval: str = "full-auto",
    agent: dict[str, Any] | None = None,
    security: dict[str, Any] | None = None,
    approver: bool = False,
    trust: bool | None = None,
) -> AsyncIterator[tuple[AgentSession, Recorder]]:
    """A session wired by ``build_session`` from real settings, pointed at ``server``.

    ``approver=True`` installs the fail-closed ``NoApprover`` (what headless mode uses with no
    TTY); without it calls that ask would wait on the in-app broker for ever.
    """
    overrides: dict[str, Any] = {
        "provider": {
            "name": api,
            "model": "scripted-model",
            "base_url": server.openai_base_url if api == "openai" else server.base_url,
            "api_key": "test-key-not-secret",
            "stream": streaming,
        },
        "approval": {"mode": approval},
        "agent": agent or {},
    }
    if security:
        overrides["security"] = security
    loaded = load_settings(workspace, overrides=overrides, trust=trust)
    session = build_session(
        workspace,
        loaded,
        approver_factory=(lambda bus: NoApprover("no UI in this test")) if approver else None,
    )
    recorder = Recorder()
    session._bus.add_listener(recorder)
    try:
        assert session._loop is not None, session._provider_error
        yield session, recorder
        check_messages(session._loop.messages)
    finally:
        await session.aclose()


async def submit(session: AgentSession, prompt: str, timeout: float = DEADLINE) -> Any:
    return await asyncio.wait_for(session.submit(prompt), timeout)


# -- /proc helpers ---------------------------------------------------------------------------


def processes() -> dict[int, tuple[str, int, str]]:
    """pid -> (state, process group, command line) for every process we can see."""
    found: dict[int, tuple[str, int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        found[int(entry)] = (fields[0], int(fields[2]), cmdline.strip())
    return found


def live_with(marker: str) -> dict[int, tuple[str, int, str]]:
    return {pid: info for pid, info in processes().items() if marker in info[2] and info[0] != "Z"}


def live_in_group(pgid: int) -> list[int]:
    """Members of a process group that are still alive (zombies are dead and excluded)."""
    return [pid for pid, info in processes().items() if info[1] == pgid and info[0] != "Z"]


# -- basics ----------------------------------------------------------------------------------


@all_modes
async def test_text_only_answer(
    api: Api, streaming: bool, server: ScriptedServer, workspace: Path
) -> None:
    server.add({"text": "Hello there, human.", "usage": {"input_tokens": 30, "output_tokens": 5}})
    async with open_session(api, server, workspace, streaming=streaming) as (session, rec):
        outcome = await submit(session, "say hello")

    assert outcome.reason == "completed"
    assert outcome.final_text == "Hello there, human."
    assert outcome.turns == 1
    assert outcome.usage.input_tokens == 30 and outcome.usage.output_tokens == 5
    assert len(server.requests) == 1
    assert body_of(server.requests[0])["stream"] is streaming
    assert user_texts(server.requests[0]) == ["say hello"]
    assert "run_shell" in tool_names_of(server.requests[0])
    kinds = [event.kind for event in rec.events]  # type: ignore[attr-defined]
    assert kinds[0] == "user_message" and kinds[-1] == "turn_ended"
    if streaming:
        deltas = rec.of(AssistantTextDelta)
        assert len(deltas) > 1 and "".join(d.text for d in deltas) == "Hello there, human."
    assert rec.of(TurnEnded)[-1].reason == "completed"


@all_modes
async def test_one_tool_call_result_goes_back_to_the_model(
    api: Api, streaming: bool, server: ScriptedServer, workspace: Path
) -> None:
    server.add(tools_step(shell("call_echo_1", "echo from-the-tool"), text="Let me look."))
    server.add(answer("The tool said from-the-tool."))
    async with open_session(api, server, workspace, streaming=streaming) as (session, rec):
        outcome = await submit(session, "run echo")

    assert outcome.reason == "completed" and outcome.turns == 2
    assert outcome.final_text == "The tool said from-the-tool."
    second = server.requests[1]
    assert wire_calls(second) == [("call_echo_1", "run_shell")]
    # Buddy's shape for a finished command.
    assert result_value(second, "call_echo_1") == {
        "exit_code": 0,
        "stdout": "from-the-tool\n",
        "stderr": "",
    }
    assert wire_results(second)["call_echo_1"]["is_error"] in (None, False)
    started = rec.of(ToolCallStarted)
    assert [(e.tool_call_id, e.command) for e in started] == [("call_echo_1", "echo from-the-tool")]
    completed = rec.of(ToolCallCompleted)
    assert [(e.tool_call_id, e.is_error, e.exit_code) for e in completed] == [
        ("call_echo_1", False, 0)
    ]


# -- execution strategies ----------------------------------------------------------------------


def tool_timeline(rec: Recorder) -> list[tuple[str, str]]:
    """("start"|"end", call id) in bus order."""
    line: list[tuple[str, str]] = []
    for event in rec.events:
        if isinstance(event, ToolCallStarted):
            line.append(("start", event.tool_call_id))
        elif isinstance(event, ToolCallCompleted):
            line.append(("end", event.tool_call_id))
    return line


@both_apis
async def test_parallel_strategy_runs_calls_concurrently(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    ids = ["call_p1", "call_p2", "call_p3"]
    server.add(tools_step(*(shell(i, f"sleep 0.5; echo done-{i}") for i in ids)))
    server.add(answer("all slept"))
    async with open_session(api, server, workspace, agent={"strategy": "parallel"}) as (
        session,
        rec,
    ):
        started = time.perf_counter()
        outcome = await submit(session, "sleep thrice")
        elapsed = time.perf_counter() - started

    assert outcome.reason == "completed"
    timeline = tool_timeline(rec)
    assert [kind for kind, _ in timeline[:3]] == ["start"] * 3, timeline
    assert elapsed < 1.3, f"3 x sleep 0.5 took {elapsed:.2f} s: not concurrent"
    for call_id in ids:
        assert f"done-{call_id}" in result_text(server.requests[1], call_id)
    # Results go back in the order the model made the calls.
    assert list(wire_results(server.requests[1])) == ids


@both_apis
async def test_sequential_strategy_runs_one_at_a_time(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    ids = ["call_s1", "call_s2", "call_s3"]
    server.add(tools_step(*(shell(i, f"sleep 0.1; echo {i}") for i in ids)))
    server.add(answer("in order"))
    async with open_session(api, server, workspace, agent={"strategy": "sequential"}) as (
        session,
        rec,
    ):
        outcome = await submit(session, "go")

    assert outcome.reason == "completed"
    assert tool_timeline(rec) == [(kind, i) for i in ids for kind in ("start", "end")]
    for call_id in ids:
        assert call_id in result_text(server.requests[1], call_id)


@both_apis
async def test_batched_strategy_runs_groups_of_n(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    ids = ["call_b1", "call_b2", "call_b3", "call_b4", "call_b5"]
    server.add(tools_step(*(shell(i, f"sleep 0.1; echo {i}") for i in ids)))
    server.add(answer("batched"))
    async with open_session(
        api, server, workspace, agent={"strategy": "batched", "batch_size": 2}
    ) as (session, rec):
        outcome = await submit(session, "go")

    assert outcome.reason == "completed"
    timeline = tool_timeline(rec)
    position = {entry: index for index, entry in enumerate(timeline)}
    groups = [["call_b1", "call_b2"], ["call_b3", "call_b4"], ["call_b5"]]
    for group in groups:  # inside a group: every call starts before any of them ends
        assert max(position[("start", i)] for i in group) < min(
            position[("end", i)] for i in group
        ), timeline
    for before, after in itertools.pairwise(groups):  # groups do not overlap
        assert max(position[("end", i)] for i in before) < min(
            position[("start", i)] for i in after
        ), timeline
    assert list(wire_results(server.requests[1])) == ids


# -- what the model sends wrong -------------------------------------------------------------


@both_apis
async def test_malformed_arguments_get_an_error_and_the_loop_continues(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    server.add(tools_step(call("call_bad", "run_shell", '{"command": "echo hi"')))
    server.add(tools_step(shell("call_fixed", "echo fixed")))
    server.add(answer("recovered"))
    async with open_session(api, server, workspace) as (session, _):
        outcome = await submit(session, "go")

    assert outcome.reason == "completed" and outcome.final_text == "recovered"
    assert len(server.requests) == 3
    text = result_text(server.requests[1], "call_bad")
    assert text.startswith("Error (InvalidArguments)"), text
    if api == "anthropic":
        # The Anthropic wire cannot carry broken JSON (input is an object), so what arrives
        # is an empty input; either way the model learns what to send.
        assert wire_results(server.requests[1])["call_bad"]["is_error"] is True
    assert "fixed" in result_text(server.requests[2], "call_fixed")


@both_apis
async def test_unknown_tool_gets_not_found_naming_close_tools(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    server.add(tools_step(call("call_typo", "run_shel", {"command": "ls"})))
    server.add(answer("oops"))
    async with open_session(api, server, workspace) as (session, _):
        outcome = await submit(session, "go")

    assert outcome.reason == "completed"
    text = result_text(server.requests[1], "call_typo")
    assert text.startswith("Error (NotFound)")
    assert "'run_shel'" in text and "Did you mean run_shell" in text


@both_apis
async def test_read_only_mode_denies_a_write_and_the_model_reads_why(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    server.add(tools_step(shell("call_touch", "touch made-by-model.txt")))
    server.add(answer("understood"))
    async with open_session(api, server, workspace, approval="read-only", approver=True) as (
        session,
        _,
    ):
        outcome = await submit(session, "make a file")

    assert outcome.reason == "completed"
    text = result_text(server.requests[1], "call_touch")
    assert text.startswith("Error (PermissionDenied)"), text
    assert "read-only" in text and "--approval-mode" in text
    assert not (workspace / "made-by-model.txt").exists()


@both_apis
async def test_deny_rule_denies_a_call_and_the_model_reads_why(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    server.add(tools_step(shell("call_touch", "touch denied.txt"), shell("call_ok", "echo ok")))
    server.add(answer("fine"))
    async with open_session(api, server, workspace, security={"deny": ["run_shell(touch:*)"]}) as (
        session,
        _,
    ):
        outcome = await submit(session, "go")

    assert outcome.reason == "completed"
    text = result_text(server.requests[1], "call_touch")
    assert "denied by the rule" in text and "[security].deny" in text
    assert "ok" in result_text(server.requests[1], "call_ok")
    assert not (workspace / "denied.txt").exists()


# -- provider trouble -----------------------------------------------------------------------


@both_apis
async def test_provider_500_then_success_is_retried(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    server.add({"status": 500}, answer("second time lucky"))
    async with open_session(api, server, workspace) as (session, rec):
        outcome = await submit(session, "hi")

    assert outcome.reason == "completed" and outcome.final_text == "second time lucky"
    assert len(server.requests) == 2
    assert body_of(server.requests[0]) == body_of(server.requests[1])
    assert not rec.of(ErrorEvent)


@both_apis
async def test_stream_cut_midway_is_asked_again_in_the_same_turn(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    """Nothing ran before the answer was whole: the request goes again, the person sees the
    half answer closed as cut off and "retrying in N s (reason)", and the conversation gets
    only the whole answer."""
    server.add(
        {"text": "this answer will be cut off here", "cut_after_events": CUT_MID_ANSWER[api]},
        answer("the whole answer"),
    )
    async with open_session(api, server, workspace) as (session, rec):
        outcome = await submit(session, "hi")
        assert outcome.reason == "completed" and outcome.final_text == "the whole answer"
        assert not rec.of(ErrorEvent)
        (cut, whole) = rec.of(AssistantMessage)
        assert cut.text.endswith("[cut off: asking again]") and whole.text == "the whole answer"
        (notice,) = [n for n in rec.of(Notice) if n.message.startswith("retrying in ")]
        assert "cut off mid-answer" in notice.message and notice.level == "warning"
        assert session._loop is not None
        assert [m.content for m in session._loop.messages if m.role == "assistant"] == [
            "the whole answer"
        ]
    assert len(server.requests) == 2
    assert body_of(server.requests[0]) == body_of(server.requests[1])


@both_apis
async def test_stream_always_cut_ends_the_turn_with_an_error(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    cut = {"text": "this answer will be cut off here", "cut_after_events": CUT_MID_ANSWER[api]}
    server.add(*[cut] * 4, answer("next turn works"))
    async with open_session(api, server, workspace) as (session, rec):
        outcome = await submit(session, "hi")
        assert outcome.reason == "error"
        assert outcome.error and "cut off" in outcome.error and "after 4 attempts" in outcome.error
        errors = rec.of(ErrorEvent)
        assert len(errors) == 1 and errors[0].message == outcome.error
        assert rec.of(TurnEnded)[-1].reason == "error"
        assert len([n for n in rec.of(Notice) if n.message.startswith("retrying in ")]) == 3
        # The session is still usable, and the model sees the partial text was interrupted.
        again = await submit(session, "try again")
    assert again.reason == "completed" and again.final_text == "next turn works"
    history = body_of(server.requests[-1])["messages"]
    assert any("[interrupted]" in json.dumps(m) for m in history)
    assert user_texts(server.requests[-1])[-1] == "try again"


# -- cancel and steering --------------------------------------------------------------------


@both_apis
async def test_cancel_mid_tool_kills_the_group_and_the_session_stays_usable(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    marker = f"{300 + (uuid.uuid4().int % 10**6) / 10**7:.7f}"  # a unique sleep length
    server.add(
        tools_step(
            shell("call_long", f"sleep 1{marker} & sleep {marker}; wait"),
            shell("call_other", f"sleep 2{marker}"),
        ),
        answer("after the cancel"),
    )
    async with open_session(api, server, workspace) as (session, rec):
        assert session._loop is not None
        task = asyncio.ensure_future(session.submit("sleep a lot"))
        running = await until(
            lambda: (
                (found := live_with(marker))
                and sum(info[2].startswith("sleep ") for info in found.values()) == 3
                and found
            ),
            "the three sleeps",
            DEADLINE,
        )
        groups = {info[1] for info in running.values()}
        started = time.perf_counter()
        session._loop.cancel()
        outcome = await asyncio.wait_for(task, 5)
        took = time.perf_counter() - started

        assert outcome.reason == "cancelled"
        assert took < 3, f"cancel took {took:.2f} s"
        assert not live_with(marker), "a sleep outlived the cancel"
        for pgid in groups:
            assert not live_in_group(pgid), f"process group {pgid} survived"
        completed = rec.of(ToolCallCompleted)
        assert sorted(e.tool_call_id for e in completed) == ["call_long", "call_other"]
        assert all(e.is_error and e.error_type == "Cancelled" for e in completed)
        assert rec.of(TurnEnded)[-1].reason == "cancelled"
        check_messages(session._loop.messages)

        again = await submit(session, "are you there?")
    assert again.reason == "completed" and again.final_text == "after the cancel"
    after = server.requests[-1]
    assert set(wire_results(after)) == {"call_long", "call_other"}
    assert result_text(after, "call_long").startswith("Error (Cancelled)")
    assert user_texts(after) == ["sleep a lot", "are you there?"]


@both_apis
async def test_steering_in_sequential_mode_skips_calls_not_started(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    gate = workspace / "gate"
    server.add(
        tools_step(
            shell("call_first", f"while [ ! -e {gate} ]; do sleep 0.01; done; echo first-done"),
            shell("call_second", "touch second-ran"),
            shell("call_third", "touch third-ran"),
        ),
        answer("ok, switching to what you said"),
    )
    async with open_session(api, server, workspace, agent={"strategy": "sequential"}) as (
        session,
        rec,
    ):
        assert session._loop is not None
        task = asyncio.ensure_future(session.submit("make files"))
        await rec.wait_for(
            lambda e: isinstance(e, ToolCallStarted) and e.tool_call_id == "call_first",
            "the first call to start",
        )
        session._loop.steer("stop, do something else")
        gate.touch()  # only now may the first call finish: it was running while we steered
        outcome = await asyncio.wait_for(task, DEADLINE)

    assert outcome.reason == "completed"
    assert outcome.final_text == "ok, switching to what you said"
    second = server.requests[1]
    assert "first-done" in result_text(second, "call_first")
    for skipped in ("call_second", "call_third"):
        text = result_text(second, skipped)
        assert text.startswith("Error (Skipped)") and "was NOT run" in text, text
    assert not (workspace / "second-ran").exists() and not (workspace / "third-ran").exists()
    assert user_texts(second) == ["make files", "stop, do something else"]
    steered = [e.text for e in rec.of(UserMessage) if e.steering]
    assert steered == ["stop, do something else"]
    skipped_events = [e for e in rec.of(ToolCallCompleted) if e.error_type == "Skipped"]
    assert sorted(e.tool_call_id for e in skipped_events) == ["call_second", "call_third"]


@both_apis
async def test_steering_while_parallel_calls_run_reaches_the_next_request(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    gate = workspace / "gate"
    wait = f"while [ ! -e {gate} ]; do sleep 0.01; done"
    server.add(
        tools_step(shell("call_a", f"{wait}; echo a"), shell("call_b", f"{wait}; echo b")),
        answer("noted"),
    )
    async with open_session(api, server, workspace) as (session, rec):
        assert session._loop is not None
        task = asyncio.ensure_future(session.submit("two things"))
        await rec.wait_for(
            lambda e: isinstance(e, ToolCallStarted) and e.tool_call_id == "call_b",
            "both calls to start",
        )
        session._loop.steer("also check the logs")
        gate.touch()
        outcome = await asyncio.wait_for(task, DEADLINE)

    assert outcome.reason == "completed"
    second = server.requests[1]
    assert result_value(second, "call_a")["stdout"] == "a\n"
    assert result_value(second, "call_b")["stdout"] == "b\n"
    assert user_texts(second) == ["two things", "also check the logs"]


# -- sub-agents ------------------------------------------------------------------------------


@both_apis
async def test_sub_agent_runs_its_own_loop(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    server.add(
        tools_step(
            call("call_agent", "agent", {"prompt": "count to three", "description": "count"})
        ),
        tools_step(shell("call_child_shell", "echo 1 2 3")),
        answer("child says: 1 2 3"),
        answer("the sub-agent counted"),
    )
    async with open_session(api, server, workspace) as (session, rec):
        outcome = await submit(session, "delegate")

    assert outcome.reason == "completed" and outcome.final_text == "the sub-agent counted"
    assert len(server.requests) == 4
    parent_first, child_first, child_second, parent_second = server.requests
    assert "agent" in tool_names_of(parent_first)
    assert "agent" not in tool_names_of(child_first)
    assert "run_shell" in tool_names_of(child_first)
    assert user_texts(child_first) == ["count to three"]  # the child sees only its prompt
    assert "1 2 3" in result_text(child_second, "call_child_shell")

    agent_done = [e for e in rec.of(ToolCallCompleted) if e.tool_call_id == "call_agent"]
    assert len(agent_done) == 1 and agent_done[0].loop_id == "main"
    child_id = agent_done[0].child_loop_id
    assert child_id and child_id.startswith("main.child-")
    child_shell = [e for e in rec.of(ToolCallStarted) if e.tool_call_id == "call_child_shell"]
    assert [e.loop_id for e in child_shell] == [child_id]
    child_ends = [e for e in rec.of(TurnEnded) if e.loop_id == child_id]
    assert [(e.reason, e.final_text) for e in child_ends] == [("completed", "child says: 1 2 3")]
    assert rec.of(TurnEnded)[-1].loop_id == "main"
    assert result_text(parent_second, "call_agent") == "child says: 1 2 3"


# -- hooks -----------------------------------------------------------------------------------


@both_apis
async def test_in_process_before_tool_callback_skips_a_call(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    server.add(
        tools_step(shell("call_skip", "touch skipped.txt"), shell("call_run", "touch ran.txt")),
        answer("done"),
    )
    seen: list[str] = []

    async def veto(info: ToolCallInfo) -> PreToolDecision | None:
        seen.append(info.tool_call_id)
        if "skipped.txt" in info.arguments:
            return PreToolDecision(deny_reason="the test said no")
        return None

    async with open_session(api, server, workspace) as (session, rec):
        assert session._loop is not None
        session._loop.hooks.before_tool.append(veto)
        outcome = await submit(session, "go")

    assert outcome.reason == "completed"
    assert sorted(seen) == ["call_run", "call_skip"]
    text = result_text(server.requests[1], "call_skip")
    assert text == "Error (PermissionDenied): blocked by a hook: the test said no"
    assert not (workspace / "skipped.txt").exists() and (workspace / "ran.txt").exists()
    assert [e.tool_call_id for e in rec.of(ToolCallStarted)] == ["call_run"]
    # phi-core's contract: a skipped call never starts and never ends; its result is all.
    assert [e.tool_call_id for e in rec.of(ToolCallCompleted)] == ["call_run"]
    skipped = rec.of(ToolCallSkipped)
    assert [(e.tool_call_id, e.result) for e in skipped] == [("call_skip", text)]


HOOK_SCRIPT = """\
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[2], "a") as log:
    log.write(json.dumps(data) + "\\n")
command = data["tool_input"].get("command", "")
if sys.argv[1] == "pre":
    if "forbidden" in command:
        print("forbidden commands are not allowed here", file=sys.stderr)
        sys.exit(2)
    if "json-deny" in command:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
              "permissionDecision": "deny", "permissionDecisionReason": "json says no"}}))
    if "block-me" in command:
        print(json.dumps({"decision": "block", "reason": "blocked the old way"}))
    if "rewrite-me" in command:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
              "updatedInput": {**data["tool_input"], "command": "echo rewritten-by-hook"}}}))
else:
    if "lint" in command:
        print("post hook: 2 lint warnings", file=sys.stderr)
        sys.exit(2)
"""


@both_apis
async def test_command_hooks_from_config_deny_rewrite_and_add_feedback(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    script = workspace / "hook.py"
    script.write_text(HOOK_SCRIPT, encoding="utf-8")
    log = workspace / "hook-log.jsonl"
    python = sys.executable
    (workspace / ".agent-tui.toml").write_text(
        "[[hooks.pre_tool_use]]\n"
        'matcher = "run_shell"\n'
        f"command = '{python} {script} pre {log}'\n"
        "\n"
        "[[hooks.post_tool_use]]\n"
        'matcher = "run_.*"\n'
        f"command = '{python} {script} post {log}'\n",
        encoding="utf-8",
    )
    server.add(
        tools_step(
            shell("call_forbidden", "touch forbidden.txt"),
            shell("call_rewrite", "echo rewrite-me"),
            shell("call_lint", "echo lint"),
            shell("call_json_deny", "touch json-deny"),
            shell("call_block", "touch block-me"),
            call("call_time", "time", {}),
        ),
        answer("hooks done"),
    )
    # The hooks come from the workspace file: they run once the workspace is trusted.
    async with open_session(api, server, workspace, trust=True) as (session, rec):
        outcome = await submit(session, "go")

    assert outcome.reason == "completed"
    second = server.requests[1]
    denied = result_text(second, "call_forbidden")
    assert denied.startswith("Error (PermissionDenied)")
    assert "forbidden commands are not allowed here" in denied
    assert not (workspace / "forbidden.txt").exists()
    assert result_text(second, "call_json_deny") == (
        "Error (PermissionDenied): blocked by a hook: json says no"
    )
    assert result_text(second, "call_block") == (
        "Error (PermissionDenied): blocked by a hook: blocked the old way"
    )
    assert not (workspace / "json-deny").exists() and not (workspace / "block-me").exists()
    rewritten = result_text(second, "call_rewrite")
    assert "rewritten-by-hook" in rewritten and "rewrite-me" not in rewritten
    assert [e.command for e in rec.of(ToolCallStarted) if e.tool_call_id == "call_rewrite"] == [
        "echo rewritten-by-hook"
    ]
    linted = result_value(second, "call_lint")
    assert linted["notices"] == ["[PostToolUse hook] post hook: 2 lint warnings"], linted
    assert "[PostToolUse hook]" not in result_text(second, "call_time")  # matcher excludes it

    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    pre = [r for r in records if r["hook_event_name"] == "PreToolUse"]
    post = [r for r in records if r["hook_event_name"] == "PostToolUse"]
    assert sorted(r["tool_use_id"] for r in pre) == [
        "call_block",
        "call_forbidden",
        "call_json_deny",
        "call_lint",
        "call_rewrite",
    ]
    assert all(r["session_id"] == session.session_id for r in records)
    assert all(r["cwd"] == str(workspace) and r["tool_name"] == "Bash" for r in pre)
    assert all(r["agent_tui_tool_name"] == "run_shell" for r in pre)
    # Post hooks see the calls that ran, with the input that actually ran.
    assert sorted(r["tool_use_id"] for r in post) == ["call_lint", "call_rewrite"]
    by_id = {r["tool_use_id"]: r for r in post}
    # Hooks speak Claude Code's names: run_shell's ``why`` reaches them as Bash's ``description``.
    expected = with_metadata("run_shell", {"command": "echo rewritten-by-hook"})
    expected["description"] = expected.pop("why")
    assert by_id["call_rewrite"]["tool_input"] == expected
    assert "rewritten-by-hook" in by_id["call_rewrite"]["tool_response"]["content"]
    assert session._loaded.trust.trusted and session._loaded.trust.held  # they waited for trust


# -- limits and prompt -------------------------------------------------------------------------


@both_apis
async def test_max_turns_stops_the_loop(api: Api, server: ScriptedServer, workspace: Path) -> None:
    for turn in range(1, 4):
        server.add(tools_step(shell(f"call_t{turn}", f"echo turn {turn}")))
    async with open_session(api, server, workspace, agent={"max_turns": 2}) as (session, rec):
        outcome = await submit(session, "loop forever")

    assert outcome.reason == "max_turns" and outcome.turns == 2
    assert len(server.requests) == 2
    assert rec.of(TurnEnded)[-1].reason == "max_turns"
    assert any("max_turns" in e.message for e in rec.of(Notice))
    assert [e.tool_call_id for e in rec.of(ToolCallCompleted)] == ["call_t1", "call_t2"]


@both_apis
async def test_agents_md_from_the_workspace_up_to_the_git_root(
    api: Api, server: ScriptedServer, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    repo = outside / "repo"
    workspace = repo / "services" / "api"
    workspace.mkdir(parents=True)
    (repo / ".git").mkdir()
    (outside / "AGENTS.md").write_text("OUTSIDE-THE-REPO rule", encoding="utf-8")
    (repo / "AGENTS.md").write_text("REPO-ROOT rule", encoding="utf-8")
    (repo / "services" / "AGENTS.md").write_text("SERVICES rule", encoding="utf-8")
    (workspace / "AGENTS.md").write_text("API-WORKSPACE rule", encoding="utf-8")
    server.add(answer("read them"))
    async with open_session(api, server, workspace) as (session, _):
        await submit(session, "hi")

    prompt = system_prompt_of(server.requests[0])
    assert "OUTSIDE-THE-REPO" not in prompt
    positions = [prompt.index(text) for text in ("REPO-ROOT", "SERVICES", "API-WORKSPACE")]
    assert positions == sorted(positions), "outermost AGENTS.md must come first"
    assert str(workspace) in prompt


@both_apis
async def test_a_crashing_hook_callback_fails_closed_and_the_loop_goes_on(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    server.add(
        tools_step(shell("call_vetoed", "touch vetoed.txt"), shell("call_fine", "echo fine")),
        answer("carried on"),
    )

    async def broken_check(info: ToolCallInfo) -> PreToolDecision | None:
        if info.tool_call_id == "call_vetoed":
            raise RuntimeError("bug in the check")
        return None

    async def broken_after(info: ToolCallInfo, result: Any) -> Any:
        raise ValueError("bug in the formatter")

    async with open_session(api, server, workspace) as (session, _):
        assert session._loop is not None
        session._loop.hooks.before_tool.append(broken_check)
        session._loop.hooks.after_tool.append(broken_after)
        outcome = await submit(session, "go")

    assert outcome.reason == "completed" and outcome.final_text == "carried on"
    second = server.requests[1]
    vetoed = result_text(second, "call_vetoed")
    assert vetoed.startswith("Error (PermissionDenied)")
    assert "RuntimeError: bug in the check" in vetoed
    assert not (workspace / "vetoed.txt").exists()
    fine = result_text(second, "call_fine")
    assert "fine" in fine and "ValueError: bug in the formatter" in fine


@both_apis
async def test_cancelling_the_task_itself_still_answers_every_call(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    """An embedder (or the app shutting down) may cancel the task running ``submit`` instead of
    calling ``loop.cancel()``: the conversation must stay valid for the next request."""
    marker = f"{400 + (uuid.uuid4().int % 10**6) / 10**7:.7f}"
    server.add(
        tools_step(shell("call_quick", "echo quick"), shell("call_slow", f"sleep {marker}")),
        answer("still here"),
    )
    async with open_session(api, server, workspace) as (session, rec):
        assert session._loop is not None
        task = asyncio.ensure_future(session.submit("go"))
        await rec.wait_for(
            lambda e: isinstance(e, ToolCallCompleted) and e.tool_call_id == "call_quick",
            "the quick call to finish",
        )
        await until(lambda: live_with(marker), "the slow call to run", DEADLINE)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        # The kill is a SIGKILL sent while the task unwinds (it cannot wait): death follows.
        await until(lambda: not live_with(marker), "the slow call to die", timeout=2)
        assert not session._loop.running
        again = await submit(session, "hello again")

    assert again.reason == "completed"
    after = server.requests[-1]
    assert "quick" in result_text(after, "call_quick")  # a finished result is kept
    assert result_text(after, "call_slow").startswith("Error (Interrupted)")
    ended = [e.tool_call_id for e in rec.of(ToolCallCompleted)]
    assert sorted(ended) == ["call_quick", "call_slow"]


@both_apis
async def test_tool_definitions_follow_changes_to_the_tool_set(
    api: Api, server: ScriptedServer, workspace: Path
) -> None:
    """The loop reuses the definitions between requests; a changed tool set must show."""
    server.add(answer("one"), answer("two"))
    async with open_session(api, server, workspace) as (session, _):
        await submit(session, "first")
        session._registry.unregister("time")
        await submit(session, "second")

    first, second = (tool_names_of(request) for request in server.requests)
    assert "time" in first and "time" not in second
    assert [name for name in first if name != "time"] == second

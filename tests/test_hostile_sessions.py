"""Hostile tool calls end to end: the run goes on, and the session it leaves can be resumed.

Why end to end: a lone surrogate or a ``NaN`` in a tool call is harmless until something
serialises it — the next request body, the transcript line, the printed event — and then it
fails again on every ``--continue``. So these tests drive the real loop over HTTP against the
scripted server in both wire formats, resume each session from its transcript and send once
more, and check that every request body was strict JSON in valid UTF-8.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.scripted_server import RecordedRequest, ScriptedServer
from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server  # noqa: F401
from tests.test_hostile_arguments import TOOL_NAMES, deep, hostile_text, json_like
from tests.test_loop import (
    Api,
    check_messages,
    check_request,
    result_text,
    tools_step,
    wire_results,
)
from tui.agent.transcript import SessionStore
from tui.config import load_settings
from tui.events import parse_event
from tui.security.approval import NoApprover
from tui.session import AgentSession
from tui.tools.truncation import envelope
from tui.wiring import build_session

DEADLINE = 15.0


def assert_strict_json(request: RecordedRequest) -> None:
    """The body as a real API would read it: JSON with no NaN/Infinity, valid UTF-8."""
    assert isinstance(request.body, dict), f"not a JSON object: {str(request.body)[:200]}"
    json.dumps(request.body, allow_nan=False, ensure_ascii=False).encode("utf-8")
    check_request(request)


def open_session(
    api: Api, server: ScriptedServer, workspace: Path, resume: str | None = None
) -> AgentSession:
    """Read-only, with the fail-closed approver: hostile text can never act here."""
    loaded = load_settings(
        workspace,
        overrides={
            "provider": {
                "name": api,
                "model": "scripted-model",
                "base_url": server.openai_base_url if api == "openai" else server.base_url,
                "api_key": "test-key-not-secret",
            },
            "approval": {"mode": "read-only"},
        },
    )
    session = build_session(
        workspace, loaded, approver_factory=lambda bus: NoApprover("no UI"), resume=resume
    )
    assert session._loop is not None, session._provider_error
    return session


async def run_turn(session: AgentSession, prompt: str) -> None:
    outcome = await asyncio.wait_for(session.submit(prompt), DEADLINE)
    assert outcome.reason == "completed", outcome
    assert session._loop is not None
    check_messages(session._loop.messages)


# -- the two reported cases ------------------------------------------------------------------


def test_a_400_digit_wait_is_an_error_result_not_a_crash(
    cli: Cli,  # noqa: F811
    model_server: Any,  # noqa: F811
) -> None:
    raw = '{"command":"ls","wait":1' + "0" * 400 + "}"
    server: ServerProcess = model_server(
        [tools_step({"id": "call_wait", "name": "run_shell", "arguments": raw}), {"text": "ok"}]
    )
    done = cli.run(*headless(server, "go", "--approval-mode", "full-auto"))

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == "ok\n"
    text = result_text(server.requests()[1], "call_wait")
    assert text.startswith("Error (InvalidArguments)") and "out of range" in text, text


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json", "agent-tui-json"])
def test_a_lone_surrogate_on_the_anthropic_wire_then_continue_twice(
    cli: Cli,  # noqa: F811
    model_server: Any,  # noqa: F811
    fmt: str,
) -> None:
    raw = (
        '{"command": "echo \\ud800", "risk": "low", "mutation": false, "privesc": false, '
        '"why": "echo it"}'
    )
    server: ServerProcess = model_server(
        [
            tools_step({"id": "toolu_1", "name": "run_shell", "arguments": raw}),
            {"text": "first \ud800 answer"},
            {"text": "second"},
            {"text": "third"},
        ]
    )
    outputs = []
    for extra in ([], ["--continue"], ["--continue"]):
        args = headless(server, "go", "--approval-mode", "full-auto", provider="anthropic")
        done = cli.run(*args, *extra, "--output-format", fmt)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        outputs.append(done.stdout)

    requests = server.requests()
    assert len(requests) == 4
    for request in requests:
        assert_strict_json(request)
    replayed = requests[3].body["messages"][1]["content"][0]
    assert replayed["type"] == "tool_use" and replayed["input"] == {
        "command": "echo \ufffd",
        "risk": "low",
        "mutation": False,
        "privesc": False,
        "why": "echo it",
    }
    assert "\ufffd" in result_text(requests[1], "toolu_1")
    if fmt == "agent-tui-json":
        for line in outputs[0].splitlines():
            parse_event(line)
    elif fmt == "stream-json":
        lines = [json.loads(line) for line in outputs[0].splitlines()]
        assert lines[-1]["type"] == "result" and lines[-1]["result"] == "first \ufffd answer"
    elif fmt == "json":
        assert json.loads(outputs[0])["result"] == "first \ufffd answer"
    else:
        assert outputs == ["first \ufffd answer\n", "second\n", "third\n"]


# -- fuzz: hostile calls through the loop, then a resume ---------------------------------------


def _dumps_safely(value: Any) -> str:
    """JSON text as Python writes it: NaN, Infinity and ``\\udXXX`` escapes included."""
    try:
        return json.dumps(value)
    except ValueError:  # an integer past Python's digit limit
        return "1" + "0" * 5000


raw_strings = st.one_of(
    json_like.map(_dumps_safely),
    st.dictionaries(st.sampled_from(["command", "path", "wait"]) | hostile_text, json_like).map(
        _dumps_safely
    ),
    deep,
    st.text(max_size=40),
    st.sampled_from(['{"command":"ls","wait":1' + "0" * 400 + "}", '{"command": "\\ud800"}']),
)
call_names = st.sampled_from([*TOOL_NAMES, ""]) | hostile_text
CALLS_PER_SESSION = 10
SESSIONS = 20
"""Per wire format: 20 sessions of 10 hostile calls = 200 raw argument strings."""


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@settings(
    max_examples=SESSIONS,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(
    calls=st.lists(
        st.tuples(call_names, raw_strings), min_size=CALLS_PER_SESSION, max_size=CALLS_PER_SESSION
    ),
    call_id=hostile_text,
)
async def test_hostile_calls_then_resume_on_both_wires(
    api: Api, workspace: Path, calls: list[tuple[str, str]], call_id: str
) -> None:
    script = [
        {"id": call_id if i == 0 else f"call_{i}", "name": name, "arguments": raw}
        for i, (name, raw) in enumerate(calls)
    ]
    with ScriptedServer([tools_step(*script), {"text": "done"}, {"text": "again"}]) as server:
        session = open_session(api, server, workspace)
        try:
            await run_turn(session, "go")
            session_id = session.session_id
        finally:
            await session.aclose()
        assert SessionStore().load_messages(session_id)
        resumed = open_session(api, server, workspace, resume=session_id)
        try:
            await run_turn(resumed, "once more")
        finally:
            await resumed.aclose()
        requests = list(server.requests)
    assert len(requests) == 3
    for request in requests:
        assert_strict_json(request)
    results = wire_results(requests[2])
    assert len(results) == CALLS_PER_SESSION, "the resumed request lost calls"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_saved_session_holding_hostile_text_still_resumes(
    api: Api, workspace: Path
) -> None:
    """A transcript edited by hand, or left by an older writer, is cleaned as it is read."""
    transcript = SessionStore().create(workspace, api, "scripted-model")
    lines = [
        {"role": "user", "content": "go \\ud800"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "bad id \\udc80", "name": "run\\ud800", "arguments": "{}"}],
        },
        {"role": "tool", "content": envelope("x"), "tool_call_id": "bad id \\udc80"},
    ]
    with transcript.path.open("ab") as file:
        for message in lines:
            record = json.dumps({"type": "message", "message": message}).replace("\\\\u", "\\u")
            file.write(record.encode() + b"\n")
    transcript.close()

    with ScriptedServer([{"text": "fine"}]) as server:
        resumed = open_session(api, server, workspace, resume=transcript.id)
        try:
            await run_turn(resumed, "again")
        finally:
            await resumed.aclose()
        (request,) = server.requests
    assert_strict_json(request)
    assert "\ufffd" in json.dumps(request.body, ensure_ascii=False)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_repeated_huge_and_odd_call_ids_and_names_pair_up_and_resume(
    api: Api, workspace: Path
) -> None:
    """Ids and names the APIs would refuse on replay, and ids that repeat, are replaced."""
    ids = ["dup", "dup", "x" * 100_000, "a b/c", "\ud800"]
    names = ["nope", "", "n" * 1_000_000, "run shell", "\udc80"]
    calls = [{"id": i, "name": n, "arguments": "{}"} for i, n in zip(ids, names, strict=True)]
    with ScriptedServer([tools_step(*calls), {"text": "done"}, {"text": "again"}]) as server:
        session = open_session(api, server, workspace)
        try:
            await run_turn(session, "go")
        finally:
            await session.aclose()
        resumed = open_session(api, server, workspace, resume=session.session_id)
        try:
            await run_turn(resumed, "once more")
        finally:
            await resumed.aclose()
        requests = list(server.requests)
    for request in requests:
        assert_strict_json(request)
    sent = list(wire_results(requests[2]))
    assert len(sent) == len(ids) == len(set(sent))
    assert sent[0] == "dup" and all(len(i) <= 64 for i in sent)
    assert wire_names(requests[2]) == ["nope", *["invalid_tool_name"] * 4]
    first = result_text(requests[1], sent[2])
    assert "NotFound" in first and len(first) < 3000


def wire_names(request: RecordedRequest) -> list[str]:
    """The names of the tool calls replayed in ``request``, in order."""
    names: list[str] = []
    for message in request.body["messages"]:
        if message["role"] != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            names.append(call["function"]["name"])
        if isinstance(message["content"], list):
            names += [b["name"] for b in message["content"] if b.get("type") == "tool_use"]
    return names

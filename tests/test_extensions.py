"""MCP servers, OpenAPI specs and scheduled jobs joining a real session: configured in
settings, started in the background, their tools offered to the model (or deferred to
tool_search), failures turned into notices — through ``build_session`` and the loopback model
server, with a real ``mcp-server-time`` process and a real loopback Petstore API."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.petstore_server import PetstoreServer
from tests.scripted_server import ScriptedServer
from tests.test_loop import (
    Recorder,
    answer,
    call,
    check_request,
    result_text,
    tool_names_of,
    tools_step,
)
from tui.config import load_settings
from tui.events import Notice, ScheduledJobFinished
from tui.session import AgentSession, trust_workspace
from tui.wiring import build_session

FIXTURES = Path(__file__).parent / "fixtures"
DEADLINE = 30.0
TIME_SERVER = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running
    for request in running.requests:
        check_request(request)


@pytest.fixture
def petstore() -> Iterator[str]:
    server = PetstoreServer()
    server.start()
    yield server.url
    server.stop()


def make_session(
    workspace: Path, model: ScriptedServer, **sections: Any
) -> tuple[AgentSession, Recorder]:
    overrides: dict[str, Any] = {
        "provider": {
            "name": "openai",
            "model": "scripted-model",
            "base_url": model.openai_base_url,
            "api_key": "test-key-not-secret",
        },
        "approval": {"mode": "full-auto"},
        **sections,
    }
    session = build_session(workspace, load_settings(workspace, overrides=overrides))
    recorder = Recorder()
    session._bus.add_listener(recorder)
    return session, recorder


def petstore_spec(base_url: str, **extra: Any) -> dict[str, Any]:
    return {"spec": str(FIXTURES / "openapi_petstore_v3.0.yaml"), "base_url": base_url, **extra}


async def test_openapi_tools_reach_the_model_and_call_the_api(
    workspace: Path, model: ScriptedServer, petstore: str
) -> None:
    model.add(tools_step(call("p1", "pets__createPets", {"body": {"id": 7, "name": "Rex"}})))
    model.add(tools_step(call("p2", "pets__showPetById", {"petId": "7"})))
    model.add(answer("found it"))
    session, _ = make_session(workspace, model, openapi={"pets": petstore_spec(f"{petstore}/open")})
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        outcome = await asyncio.wait_for(session.submit("pet 1?"), DEADLINE)
    finally:
        await session.aclose()
    assert outcome.reason == "completed"
    offered = tool_names_of(model.requests[0])
    assert {"pets__listPets", "pets__createPets", "pets__showPetById"} <= set(offered)
    assert "tool_search" not in offered
    assert "HTTP 201" in result_text(model.requests[1], "p1")
    shown = result_text(model.requests[2], "p2")
    assert "HTTP 200" in shown and '"name": "Rex"' in shown


async def test_many_adapter_tools_are_deferred_behind_tool_search(
    workspace: Path, model: ScriptedServer, petstore: str
) -> None:
    model.add(tools_step(call("s1", "tool_search", {"query": "list pets"})))
    model.add(tools_step(call("p1", "pets__listPets", {"limit": 1})))
    model.add(answer("listed"))
    session, _ = make_session(
        workspace,
        model,
        openapi={"pets": petstore_spec(f"{petstore}/open")},
        agent={"defer_tools_above": 2},
    )
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        assert session._extensions is not None
        assert "3 tool(s) deferred" in session._extensions.describe()
        outcome = await asyncio.wait_for(session.submit("list pets"), DEADLINE)
    finally:
        await session.aclose()
    assert outcome.reason == "completed"
    first, second, _ = (tool_names_of(r) for r in model.requests)
    assert "tool_search" in first and not any(n.startswith("pets__") for n in first)
    assert "pets__listPets" in second
    assert "pets__listPets" in result_text(model.requests[1], "s1")


async def test_a_bad_spec_is_a_notice_not_a_failed_session(
    workspace: Path, model: ScriptedServer, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("openapi: 3.0.0\ninfo: {title: x, version: '1'}\n")  # no paths
    model.add(answer("still here"))
    session, recorder = make_session(
        workspace, model, openapi={"bad": {"spec": str(broken), "base_url": "http://x"}}
    )
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        outcome = await asyncio.wait_for(session.submit("hi"), DEADLINE)
    finally:
        await session.aclose()
    assert outcome.reason == "completed"
    notices = [e.message for e in recorder.events if isinstance(e, Notice)]
    assert any("OpenAPI `bad`" in n and "paths" in n for n in notices), notices


async def run_scheduled(
    workspace: Path,
    model: ScriptedServer,
    job: dict[str, Any],
    then: Sequence[dict[str, Any]] = (),
) -> ScheduledJobFinished:
    """Let the model schedule ``job`` one second out, and wait for it to run (``then``: what
    the model answers after scheduling it, for a prompt job's own turn)."""
    model.add(tools_step(call("c1", "cron_add", {**job, "after_seconds": 1})))
    model.add(answer("scheduled"))
    for step in then:
        model.add(step)
    session, recorder = make_session(workspace, model)
    try:
        session.start_scheduler()
        outcome = await asyncio.wait_for(session.submit("remind me"), DEADLINE)
        assert outcome.reason == "completed", result_text(model.requests[1], "c1")
        event = await recorder.wait_for(
            lambda e: isinstance(e, ScheduledJobFinished), "the job to run"
        )
    finally:
        await session.aclose()
    assert isinstance(event, ScheduledJobFinished)
    return event


async def test_scheduled_command_runs_while_the_session_is_open(
    workspace: Path, model: ScriptedServer
) -> None:
    event = await run_scheduled(workspace, model, {"command": "echo tick-$((40+2))"})
    assert event.ok and "tick-42" in event.output and event.next_run is None
    assert "exit code: 0" in event.output


async def test_mcp_server_tools_reach_the_model(workspace: Path, model: ScriptedServer) -> None:
    model.add(tools_step(call("m1", "time__get_current_time", {"timezone": "Asia/Tokyo"})))
    model.add(tools_step(call("m2", "time__get_current_time", {"timezone": 5})))
    model.add(answer("it is late"))
    session, _ = make_session(workspace, model, mcp={"servers": {"time": TIME_SERVER}})
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        assert session._extensions is not None
        assert "connected" in session._extensions.describe()
        outcome = await asyncio.wait_for(session.submit("time in Tokyo?"), DEADLINE)
    finally:
        await session.aclose()
    assert outcome.reason == "completed"
    assert "time__get_current_time" in tool_names_of(model.requests[0])
    assert "Asia/Tokyo" in result_text(model.requests[1], "m1")
    # A wrong argument type is caught against the server's own schema, before the server.
    assert "timezone" in result_text(model.requests[2], "m2")


async def test_project_mcp_json_waits_for_trust(
    workspace: Path, model: ScriptedServer, tmp_path: Path
) -> None:
    import json

    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"clock": TIME_SERVER}}))
    session, _ = make_session(workspace, model)
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        assert session._extensions is not None
        described = session._extensions.describe()
        assert "untrusted" in described and "/trust" in described
        assert not any(n.startswith("clock__") for n in session._registry.names())
    finally:
        await session.aclose()

    trust_workspace(session._loaded)  # what /trust and `agent-tui trust` record
    session, _ = make_session(workspace, model)
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        assert "clock__get_current_time" in session._registry.names()
    finally:
        await session.aclose()


async def test_a_server_that_cannot_start_is_a_notice(
    workspace: Path, model: ScriptedServer
) -> None:
    model.add(answer("fine"))
    broken = {"command": "/nonexistent/mcp-server", "startup_timeout": 5}
    session, recorder = make_session(workspace, model, mcp={"servers": {"gone": broken}})
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        outcome = await asyncio.wait_for(session.submit("hi"), DEADLINE)
        assert session._extensions is not None
        assert "failed" in session._extensions.describe()
    finally:
        await session.aclose()
    assert outcome.reason == "completed"
    assert any(isinstance(e, Notice) and "gone" in e.message for e in recorder.events)


async def test_every_tool_can_be_switched_off_in_config(
    workspace: Path, model: ScriptedServer, petstore: str
) -> None:
    everything = {
        "openapi": {"pets": petstore_spec(f"{petstore}/open")},
        "mcp": {"servers": {"time": TIME_SERVER}},
        "agent": {"defer_tools_above": 2},
    }
    session, _ = make_session(workspace, model, **everything)
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        names = session._registry.names()
    finally:
        await session.aclose()
    assert {"tool_search", "cron_add", "config", "agent", "pets__listPets"} <= set(names)
    assert "time__get_current_time" in names

    off = dict.fromkeys(names, False)
    session, _ = make_session(workspace, model, tools=off, **everything)
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        assert session._registry.names() == []
    finally:
        await session.aclose()


async def test_scheduled_prompt_is_a_turn_of_its_own(
    workspace: Path, model: ScriptedServer
) -> None:
    job = {"prompt": "check the disk"}
    event = await run_scheduled(workspace, model, job, then=[answer("disk is fine")])
    assert event.ok and event.job_kind == "prompt" and event.output == "disk is fine"
    sent = model.requests[2].body["messages"][-1]
    assert sent["role"] == "user" and sent["content"] == "[scheduled job] check the disk"


async def test_closing_while_a_server_still_starts_leaves_nothing(
    workspace: Path, model: ScriptedServer, tmp_path: Path
) -> None:
    """Quitting the app seconds after opening it, while a server never finishes starting."""
    import uuid

    from tests.test_loop import live_with

    toolbox = Path(__file__).parent / "mcp_servers" / "toolbox.py"
    marker = f"never-ready-{uuid.uuid4().hex[:8]}"
    silent = {
        "command": sys.executable,
        "args": [str(toolbox), "silent", str(tmp_path / marker)],
        "startup_timeout": 60,
    }
    session, _ = make_session(workspace, model, mcp={"servers": {"slow": silent}})
    starting = asyncio.ensure_future(session.start_extensions())
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while not live_with(marker):
        assert asyncio.get_running_loop().time() < deadline, "the server never started"
        await asyncio.sleep(0.02)
    started = asyncio.get_running_loop().time()
    await asyncio.wait_for(session.aclose(), 10)
    starting.cancel()
    await asyncio.gather(starting, return_exceptions=True)
    assert asyncio.get_running_loop().time() - started < 10
    assert not live_with(marker), "the MCP server outlived the session"


async def test_a_server_adding_a_tool_reaches_the_next_request(
    workspace: Path, model: ScriptedServer
) -> None:
    toolbox = Path(__file__).parent / "mcp_servers" / "toolbox.py"
    server = {"command": sys.executable, "args": [str(toolbox), "serve"]}
    model.add(tools_step(call("a1", "tb__add_tool", {"name": "greeter"})))
    model.add(tools_step(call("g1", "tb__greeter", {"text": "you"})))
    model.add(answer("greeted"))
    session, recorder = make_session(workspace, model, mcp={"servers": {"tb": server}})
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        assert "tb__greeter" not in session._registry
        first = asyncio.ensure_future(session.submit("greet"))
        await recorder.wait_for(
            lambda e: isinstance(e, Notice) and "changed its tools" in e.message, "the re-list"
        )
        outcome = await asyncio.wait_for(first, DEADLINE)
    finally:
        await session.aclose()
    assert outcome.reason == "completed"
    assert "tb__greeter" not in tool_names_of(model.requests[0])
    assert "tb__greeter" in tool_names_of(model.requests[1])
    assert result_text(model.requests[2], "g1") == "greeter greets you"

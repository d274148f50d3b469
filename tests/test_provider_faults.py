"""Mid-stream faults by the three wire formats, through the whole loop on a real socket.

Each fault breaks an answer that calls a tool, before the answer is whole (nothing has run):
the request must be asked again, the tool must run exactly once, the person must read
"retrying in N s (reason)", and waits must end by the idle timeout and the deadline.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import with_metadata
from tests.scripted_faults import FAULTS
from tests.scripted_server import ScriptedServer
from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server
from tests.test_loop import check_request
from tui.config import load_settings
from tui.events import AssistantMessage, ErrorEvent, Event, Notice
from tui.session import AgentSession
from tui.wiring import build_session

APIS = ("openai", "openai-responses", "anthropic")
RUN = json.dumps(with_metadata("run_shell", {"command": "echo ran >> runs.log"}))
DEADLINE = 20.0
__all__ = ["cli", "model_server"]  # fixtures, used by name


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running
    for request in running.requests:
        check_request(request)


def calling_step(**extra: Any) -> dict[str, Any]:
    call = {"id": "call_run", "name": "run_shell", "arguments": RUN}
    return {"text": "Let me record it.", "tool_calls": [call], **extra}


@contextlib.asynccontextmanager
async def session_on(
    api: str, server: ScriptedServer, workspace: Path, **provider: Any
) -> AsyncIterator[tuple[AgentSession, list[Event]]]:
    overrides: dict[str, Any] = {
        "provider": {
            "name": api,
            "model": "scripted-model",
            "base_url": server.openai_base_url if api.startswith("openai") else server.base_url,
            "api_key": "test-key-not-secret",
            "idle_timeout": 0.5,
            **provider,
        },
        "approval": {"mode": "full-auto"},
    }
    session = build_session(workspace, load_settings(workspace, overrides=overrides))
    events: list[Event] = []
    session._bus.add_listener(events.append)
    try:
        assert session._loop is not None, session._provider_error
        yield session, events
    finally:
        await session.aclose()


def runs(workspace: Path) -> int:
    log = workspace / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def retry_notices(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice) and e.message.startswith("retrying")]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("fault", FAULTS)
async def test_each_fault_is_asked_again_and_the_tool_runs_once(
    fault: str, api: str, server: ScriptedServer, workspace: Path
) -> None:
    server.add({"fault": fault, **calling_step()}, calling_step(), {"text": "recorded"})
    async with session_on(api, server, workspace) as (session, events):
        outcome = await session.submit("record it")
        assert session._loop is not None
        assistant = [m for m in session._loop.messages if m.role == "assistant"]
    assert outcome.reason == "completed", outcome.error
    assert outcome.final_text == "recorded"
    assert runs(workspace) == 1, "the call must run exactly once"
    (notice,) = retry_notices(events)
    assert notice.startswith("retrying in ") and " s (" in notice and "attempt 2 of 4" in notice
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    # Only the whole answer joined the conversation; a half-shown one was closed as cut off.
    assert [m.content for m in assistant] == ["Let me record it.", "recorded"]
    for shown in [e for e in events if isinstance(e, AssistantMessage)][:-2]:
        assert shown.text.endswith("[cut off: asking again]")
    assert len(server.requests) == 3


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_close_with_no_length_after_the_finish_keeps_the_whole_answer(
    api: str, server: ScriptedServer, workspace: Path
) -> None:
    """The close cut only the last line (usage / end marker): the answer was complete. (A
    Responses stream's last event, ``response.completed``, is what makes it whole: cut, it
    is a cut stream like any other, asked again above.)"""
    server.add(
        {"fault": "close_without_length_after_finish", **calling_step()}, {"text": "recorded"}
    )
    async with session_on(api, server, workspace) as (session, events):
        outcome = await session.submit("record it")
    assert outcome.reason == "completed" and outcome.final_text == "recorded"
    assert runs(workspace) == 1
    assert not retry_notices(events)
    assert len(server.requests) == 2


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("fault", ["stall", "keepalive_only"])
async def test_a_persistent_stall_ends_by_the_deadline(
    fault: str, api: str, server: ScriptedServer, workspace: Path
) -> None:
    server.add(*[{"fault": fault, **calling_step()}] * 10)
    idle, deadline = 0.3, 1.2
    async with session_on(api, server, workspace, idle_timeout=idle, request_timeout=deadline) as (
        session,
        events,
    ):
        started = time.monotonic()
        outcome = await session.submit("record it")
        took = time.monotonic() - started
    assert outcome.reason == "error"
    assert outcome.error and "no word from the" in outcome.error
    assert "deadline" in outcome.error or "after 4 attempts" in outcome.error
    assert took < deadline + idle + 2.0, f"a stall held the turn {took:.1f} s"
    assert retry_notices(events)
    assert runs(workspace) == 0


# -- what a person sees: the app and headless ---------------------------------------------------


async def test_the_app_shows_retrying_and_the_cut_answer(
    server: ScriptedServer, workspace: Path
) -> None:
    from tests.test_ui_app import app_for, send, until

    server.add({"fault": "mid_tool_call", **calling_step()}, calling_step(), {"text": "recorded"})
    overrides = {
        "provider": {
            "name": "anthropic",
            "model": "scripted-model",
            "base_url": server.base_url,
            "api_key": "test-key",
        },
        "approval": {"mode": "full-auto"},
    }
    app = app_for(build_session(workspace, load_settings(workspace, overrides=overrides, env={})))

    def chat_text() -> str:
        return "\n".join(getattr(w, "source", None) or str(w.render()) for w in app.chat.children)

    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "record it")
        await until(pilot, lambda: "recorded" in chat_text(), "the whole answer")
        text = chat_text()
    assert "retrying in " in text and "attempt 2 of 4" in text
    assert "[cut off: asking again]" in text
    assert runs(workspace) == 1


def test_headless_says_retrying_on_stderr_and_in_agent_tui_json(
    cli: Cli, model_server: Callable[[list[dict[str, Any]]], ServerProcess]
) -> None:
    steps = [{"fault": "overloaded", **calling_step()}, calling_step(), {"text": "recorded"}]
    server = model_server(steps)
    run = cli.run(*headless(server, "record it", "--approval-mode", "full-auto"))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "recorded"
    (line,) = [line for line in run.stderr.splitlines() if "retrying in " in line]
    assert line.startswith("note: retrying in ") and "overloaded" in line.lower()
    server = model_server(steps)
    streamed = cli.run(
        *headless(
            server, "record it", "--approval-mode", "full-auto", "--output-format", "agent-tui-json"
        )
    )
    notices = [
        json.loads(line)["message"]
        for line in streamed.stdout.splitlines()
        if json.loads(line).get("kind") == "notice"
    ]
    assert any(message.startswith("retrying in ") for message in notices)

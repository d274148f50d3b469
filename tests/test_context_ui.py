"""``/compact`` in the app: typed in the prompt, run by the real loop, marked in the chat."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.message import Message

from tests.scripted_server import ScriptedServer
from tests.test_ui_app import (
    app_for,
    bus_events,
    inner,
    make_session,
    send,
    shell_step,
    turn_done,
    until,
)
from tui.agent.compaction import SUMMARY_HEADER
from tui.events import Compacted
from tui.ui.chat.panel import NoticeLine

pytestmark = pytest.mark.timeout(60)

SUMMARY = "Three steps ran; each printed a long line."


async def test_slash_compact_summarises_and_marks_the_chat(workspace: Path) -> None:
    with ScriptedServer(summary_text=SUMMARY) as server:
        for n in range(1, 5):
            server.add(shell_step(f"head -c 3000 /dev/zero | tr '\\0' {n}", call_id=f"call_{n}"))
        server.add({"text": "Done."})
        messages: list[Message] = []
        app = app_for(make_session(workspace, server, mode="full-auto"))
        async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
            await send(pilot, app, "run four steps")
            await turn_done(pilot, app, 5, server)
            await send(pilot, app, "/compact keep the step numbers")
            await until(pilot, lambda: server.summary_requests == 1, "the summary request")
            await until(
                pilot,
                lambda: any(isinstance(e, Compacted) for e in bus_events(messages)),
                "the compaction event",
            )
            await until(
                pilot,
                lambda: any("compacted" in str(n.render()) for n in app.chat.query(NoticeLine)),
                "the chat marker",
            )
            lines = [str(n.render()) for n in app.chat.query(NoticeLine)]
            marker = next(line for line in lines if "compacted" in line)
            sent = inner(app)._loop.messages  # type: ignore[union-attr]
    event = next(e for e in bus_events(messages) if isinstance(e, Compacted))
    assert event.reason == "manual" and event.focus == "keep the step numbers"
    assert "on request" in marker and "focus: keep the step numbers" in marker
    assert "your 1 messages" in marker
    assert sent[0].content == "run four steps"  # the person's words, verbatim
    assert sent[1].content.startswith(SUMMARY_HEADER) and SUMMARY in sent[1].content
    # The summary request had no tools and carried the focus.
    summary_request = next(r for r in server.requests if not r.body.get("tools"))
    assert "keep the step numbers" in str(summary_request.body)


async def test_escape_stops_a_slash_compact(workspace: Path) -> None:
    with ScriptedServer() as server:  # no summary_text: the summary request gets the hang step
        for n in range(1, 5):
            server.add(shell_step(f"echo {n}", call_id=f"call_{n}"))
        server.add({"text": "Done."}, {"hang": True}, {"text": "Still here."})
        messages: list[Message] = []
        app = app_for(make_session(workspace, server, mode="full-auto"))
        async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
            await send(pilot, app, "run four steps")
            await turn_done(pilot, app, 5, server)
            before = list(inner(app)._loop.messages)  # type: ignore[union-attr]
            await send(pilot, app, "/compact")
            await until(pilot, server.hang_started.is_set, "the summary request")
            await pilot.press("escape")
            await until(pilot, lambda: server.disconnects >= 1, "the request to be dropped")
            await until(pilot, lambda: not inner(app)._loop.busy, "the compaction to stop")  # type: ignore[union-attr]
            assert inner(app)._loop.messages == before  # type: ignore[union-attr]
            await send(pilot, app, "are you there?")
            await turn_done(pilot, app, 7, server)
    assert not any(isinstance(e, Compacted) for e in bus_events(messages))
    assert "are you there?" in str(server.requests[-1].body)

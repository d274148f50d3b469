"""Tool-call arguments nested ~1,000 levels deep end nothing: not the UI, a hooked run, a
compaction, the transcript or headless printing.

The registry already refuses them with a short error (``test_hostile_arguments.py``); the
consumers that read a call's arguments besides it did not: they caught ``ValueError`` while
Python's JSON parser (and writer) raise ``RecursionError``, and pydantic refuses to write a
value ~255 levels deep. Each consumer here is fed the same fuzz: raw argument text of every
depth from 0 to thousands of levels, lists and objects mixed, as the model sends it — and,
where it was parseable, the parsed value, as the events carry it.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_ui_app import app_for, inner, make_session
from tui.agent.compaction import stub_outputs, summarise
from tui.agent.hooks import Hooks, ToolCallInfo
from tui.agent.providers.base import Message, ToolCall
from tui.agent.transcript import SessionStore
from tui.config.sections.hooks import HookCommand
from tui.events import (
    ApprovalRequested,
    Event,
    ToolCallCompleted,
    ToolCallRequested,
    ToolCallStarted,
    parse_event,
)
from tui.headless import HeadlessPrinter, TerminalApprover
from tui.tools.result import ToolResult

DEPTHS = [0, 1, 64, 65, 254, 256, 300, 900, 990, 1_000, 1_100, 5_000, 100_000]
"""Around each limit: ours (64), pydantic's writer (~255), Python's parser (~1,000)."""


def deep_text(shape: list[bool], leaf: str = '"x"', *, key: str = "command") -> str:
    """``{"KEY": …}`` with ``shape`` nested containers around ``leaf``: True an object, False a
    list (built as text, so no depth costs a Python recursion)."""
    opening = "".join('{"k":' if is_object else "[" for is_object in shape)
    closing = "".join("}" if is_object else "]" for is_object in reversed(shape))
    return f'{{"{key}": {opening}{leaf}{closing}}}'


shapes = st.integers(min_value=0, max_value=3_000).flatmap(
    lambda depth: st.lists(st.booleans(), min_size=depth, max_size=depth)
)
raw_arguments = st.one_of(
    shapes.map(deep_text),
    st.sampled_from(DEPTHS).map(lambda depth: deep_text([False] * depth)),
    st.sampled_from(DEPTHS).map(lambda depth: deep_text([True] * depth, "1", key="a")),
)


def parsed(raw: str) -> dict[str, Any]:
    """What the registry hands on when Python's parser takes it (~1,000 levels at most)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        return {}
    return value if isinstance(value, dict) else {}


def call_events(raw: str, call_id: str = "call_deep") -> list[Event]:
    arguments = parsed(raw)
    return [
        ToolCallRequested(tool_call_id=call_id, tool_name="mcp__deep", arguments=raw),
        ApprovalRequested(
            request_id=f"r-{call_id}",
            tool_call_id=call_id,
            tool_name="mcp__deep",
            arguments=arguments,
        ),
        ToolCallStarted(tool_call_id=call_id, tool_name="mcp__deep", arguments=arguments),
        ToolCallCompleted(
            tool_call_id=call_id, tool_name="mcp__deep", is_error=False, duration_ms=1.0
        ),
    ]


FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


@FUZZ
@given(raw=raw_arguments)
def test_headless_printing_survives(raw: str) -> None:
    for fmt in ("text", "stream-json", "agent-tui-json"):
        out, err = io.StringIO(), io.StringIO()
        printer = HeadlessPrinter(fmt, stdout=out, stderr=err, verbose=True)
        for event in call_events(raw):
            printer(event)
        if fmt == "agent-tui-json":
            for line in out.getvalue().splitlines():
                parse_event(line)  # every line a whole event again
        if fmt == "stream-json":
            for line in out.getvalue().splitlines():  # every line one of Claude Code's
                assert json.loads(line)["type"] in ("system", "assistant", "user", "result")
    request = call_events(raw)[1]
    assert isinstance(request, ApprovalRequested)
    assert "needs approval" in TerminalApprover(Path("/w")).describe(request)


@FUZZ
@given(raw=raw_arguments)
def test_the_transcript_survives(tmp_path_factory: pytest.TempPathFactory, raw: str) -> None:
    store = SessionStore(tmp_path_factory.mktemp("sessions"))
    transcript = store.create(Path("/w"), "openai", "scripted")
    message = Message(
        role="assistant", content="", tool_calls=[ToolCall(id="c", name="t", arguments=raw)]
    )
    transcript.append_message(message)
    for event in call_events(raw):
        transcript.append_event(event)
    transcript.close()
    (loaded,) = store.load_messages(transcript.id)
    assert loaded.tool_calls[0].arguments == raw


@FUZZ
@given(raw=raw_arguments)
async def test_compaction_survives(raw: str) -> None:
    messages = [Message(role="user", content="go")]
    for turn in range(6):
        call = ToolCall(id=f"c{turn}", name="edit_file", arguments=raw)
        messages.append(Message(role="assistant", content="", tool_calls=[call]))
        messages.append(
            Message(role="tool", content=raw * 2, tool_call_id=f"c{turn}", tool_name="edit_file")
        )

    async def failing(system: str, prompt: str) -> str:
        raise RuntimeError("no summary today")  # the fallback reads every call

    done = await summarise(messages, window=50_000, summarise_fn=failing, keep_turns=1)
    assert done is not None and done.fallback
    stub_outputs(messages, len(messages))


HOOK = HookCommand(command=f"{sys.executable} -c \"import sys; sys.stdin.read(); print('{{}}')\"")


@settings(max_examples=12, deadline=None, database=None)
@given(raw=st.sampled_from(DEPTHS).map(lambda depth: deep_text([False] * depth)))
async def test_a_hooked_run_survives(raw: str) -> None:
    hooks = Hooks(pre_commands=[HOOK], post_commands=[HOOK], cwd=str(Path.cwd()))
    call = ToolCallInfo("c1", "mcp__deep", raw)
    decision = await hooks.run_before_tool(call)
    assert decision.deny_reason is None, decision.deny_reason
    result = await hooks.run_after_tool(call, ToolResult("ok"))
    assert result.text.startswith("ok")


async def test_the_app_survives_every_depth(workspace: Path) -> None:
    app = app_for(make_session(workspace, None))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.session_ready.wait()
        for number, depth in enumerate(DEPTHS):
            for shape in ([False] * depth, [True] * depth):
                raw = deep_text(shape)
                for event in call_events(raw, f"call_{number}_{shape[:1]}"):
                    inner(app)._bus.publish(event)
                await pilot.pause(0.05)
                if app.approvals.open is not None:
                    await pilot.press("escape")  # whatever opened, it drew and closes
        await pilot.pause(0.3)
        assert app.is_running
        assert len(app.tools.blocks) == len(DEPTHS) * 2 - 1  # depth 0: one shape
        for block in app.tools.blocks.values():
            block.render_line(0)  # every block draws
    assert json.dumps(DEPTHS)  # (the module's own values are fine)

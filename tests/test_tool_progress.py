"""Tool progress: coalescing (unit, on a real event loop with a stepped clock), the tool
block's bar, and a real MCP server's progress notifications reaching agent-tui-json through the
installed ``agent-tui`` command."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path

from tests.test_headless_cli import Cli, ServerProcess, headless
from tests.test_headless_cli import cli as cli
from tests.test_headless_cli import model_server as model_server
from tests.test_loop import call, tools_step
from tui.agent.progress import MAX_MESSAGE_CHARS, ProgressCoalescer
from tui.events import (
    ToolCallCompleted,
    ToolCallRequested,
    ToolCallStarted,
    ToolProgress,
    parse_event,
)

TOOLBOX = Path(__file__).parent / "mcp_servers" / "toolbox.py"


class SteppedClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def coalescer(sent: list[ToolProgress], clock: SteppedClock) -> ProgressCoalescer:
    return ProgressCoalescer(sent.append, tool_call_id="c1", tool_name="t", clock=clock)


async def test_a_flood_becomes_at_most_ten_a_second_and_the_last_word_is_kept() -> None:
    sent: list[ToolProgress] = []
    clock = SteppedClock()
    progress = coalescer(sent, clock)
    for step in range(1, 1001):  # a thousand reports within 50 ms
        progress.report(step / 1000, f"step {step}")
        clock.now += 0.00005
    assert [e.message for e in sent] == ["step 1"]  # the first goes out at once
    progress.close()  # the call ended: what was held goes out before its end event
    assert [e.message for e in sent] == ["step 1", "step 1000"]
    assert sent[-1].fraction == 1.0
    clock.now += 1
    progress.report(0.5, "late")  # after the end: never reopens the block
    assert len(sent) == 2


async def test_the_held_report_goes_out_on_a_timer_while_the_call_runs() -> None:
    sent: list[ToolProgress] = []
    progress = ProgressCoalescer(sent.append, tool_call_id="c1", tool_name="t", interval=0.05)
    progress.report(0.1, "a")
    progress.report(0.2, "b")
    progress.report(0.3, "c")
    assert [e.message for e in sent] == ["a"]
    arrived = asyncio.Event()

    def publish(event: ToolProgress) -> None:
        sent.append(event)
        arrived.set()

    progress._publish = publish
    async with asyncio.timeout(2):
        await arrived.wait()
    assert [e.message for e in sent] == ["a", "c"]  # b was superseded, c arrived on time
    progress.close()
    assert len(sent) == 2


async def test_hostile_values_are_bounded() -> None:
    sent: list[ToolProgress] = []
    clock = SteppedClock()
    progress = coalescer(sent, clock)
    for fraction, message in [
        (float("nan"), "x" * 10_000),
        (7.5, "line one\nline two\x1b[2J"),
        (-3, ""),
        ("half", "\ud800"),
    ]:
        progress.report(fraction, message)  # type: ignore[arg-type]  # a wrong type on purpose
        clock.now += 1
    assert [e.fraction for e in sent] == [None, 1.0, 0.0, None]
    assert len(sent[0].message) <= MAX_MESSAGE_CHARS + 40
    assert "\n" not in sent[1].message and "\x1b" not in sent[1].message
    assert sent[3].message == "\ufffd"


async def test_the_tool_block_shows_a_bar_and_the_message_while_running() -> None:
    from textual.app import App, ComposeResult

    from tui.ui.tools.panel import ToolPanel

    class Demo(App[None]):
        def compose(self) -> ComposeResult:
            yield ToolPanel()

    app = Demo()
    async with app.run_test(size=(120, 30)) as pilot:
        panel = app.query_one(ToolPanel)
        panel.apply(
            [
                ToolCallRequested(tool_call_id="c1", tool_name="tb__progress", arguments="{}"),
                ToolCallStarted(tool_call_id="c1", tool_name="tb__progress"),
                ToolProgress(
                    tool_call_id="c1", tool_name="tb__progress", fraction=0.42, message="indexing"
                ),
            ]
        )
        await pilot.pause()
        block = panel.blocks["c1"]
        assert "▰▰▰▰▱▱▱▱▱▱ 42% · indexing" in str(block.border_subtitle)
        panel.apply(
            [
                ToolCallCompleted(
                    tool_call_id="c1", tool_name="tb__progress", is_error=False, duration_ms=5
                ),
                ToolProgress(tool_call_id="c1", tool_name="tb__progress", fraction=0.1),
            ]
        )
        await pilot.pause()
        assert "%" not in str(block.border_subtitle)  # ended: no bar
        assert block.state.progress == 0.42  # and a late report does not land


def test_mcp_progress_reaches_stream_json(
    cli: Cli,
    model_server: Callable[..., ServerProcess],
) -> None:
    (cli.workspace / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"tb": {"command": sys.executable, "args": [str(TOOLBOX), "serve"]}}}
        ),
        encoding="utf-8",
    )
    server = model_server(
        [tools_step(call("call_p", "tb__progress", {"steps": 4, "pause": 0.15})), {"text": "ok"}]
    )
    done = cli.run(
        *headless(
            server,
            "go",
            "--approval-mode",
            "full-auto",
            "--trust-workspace",
            "--output-format",
            "agent-tui-json",
        )
    )
    assert done.returncode == 0, done.stderr
    events = [parse_event(line) for line in done.stdout.splitlines()]
    kinds = [(e.kind, getattr(e, "tool_call_id", None)) for e in events]
    progress = [e for e in events if isinstance(e, ToolProgress) and e.tool_call_id == "call_p"]
    assert progress, kinds
    assert [e.fraction for e in progress][-1] == 1.0
    assert progress[-1].message == "step 4 of 4"
    fractions = [e.fraction for e in progress]
    assert None not in fractions
    assert fractions == sorted(f for f in fractions if f is not None)
    ended = kinds.index(("tool_completed", "call_p"))
    assert all(kinds.index(("tool_progress", "call_p")) < ended for _ in progress)
    assert events.index(progress[-1]) < ended

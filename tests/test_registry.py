"""The dispatch path: everything a model can send comes back as a result, never an exception."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

from tests.conftest import Harness, make_harness
from tui.errors import ExecutionFailed
from tui.events import Notice, ToolCallCompleted, ToolCallStarted
from tui.security.permissions import ApprovalMode
from tui.security.settings import SecuritySettings
from tui.tools.base import Tool, ToolParams, missing_description_sections
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.context import ToolContext
from tui.tools.loops import LoopMemory
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult


class CountParams(ToolParams):
    n: int = Field(description="a number")


class CountingTool(Tool[CountParams]):
    """Fails for odd n, counts how often it really ran."""

    name = "count"
    label = "Count"
    Params = CountParams
    description = "test tool"

    def __init__(self) -> None:
        self.runs = 0

    async def execute(self, params: CountParams, ctx: ToolContext) -> ToolResult:
        self.runs += 1
        if params.n % 2:
            raise ExecutionFailed(f"{params.n} is odd")
        return ToolResult(f"{params.n} is even")


class StubbornParams(ToolParams):
    pass


class StubbornTool(Tool[StubbornParams]):
    """Ignores the cancel event entirely, like a badly written third-party tool."""

    name = "stubborn"
    label = "Stubborn"
    Params = StubbornParams
    description = "test tool"
    started = asyncio.Event

    async def execute(self, params: StubbornParams, ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(3600)
        return ToolResult("never")


class CrashingTool(StubbornTool):
    name = "crash"

    async def execute(self, params: StubbornParams, ctx: ToolContext) -> ToolResult:
        raise KeyError("boom")


@pytest.fixture
def extra(harness: Harness) -> CountingTool:
    tool = CountingTool()
    harness.registry.register(tool)
    harness.registry.register(StubbornTool())
    harness.registry.register(CrashingTool())
    return tool


def test_definitions_in_both_wire_formats() -> None:
    registry = ToolRegistry(builtin_tools())
    openai = {d["function"]["name"]: d for d in registry.definitions("openai")}
    anthropic = {d["name"]: d for d in registry.definitions("anthropic")}
    assert openai.keys() == anthropic.keys() == set(registry.names())
    shell = openai["run_shell"]["function"]["parameters"]
    assert shell["type"] == "object"
    assert shell["required"] == ["command", "risk", "mutation", "privesc", "why"]
    assert shell["additionalProperties"] is False
    assert "title" not in shell and "title" not in shell["properties"]["command"]
    assert anthropic["run_shell"]["input_schema"] == shell
    assert ToolRegistry().definitions() == []


def test_every_builtin_description_has_the_four_sections() -> None:
    for tool in builtin_tools():
        assert missing_description_sections(tool.description) == [], tool.name
        assert tool.label and tool.name.isidentifier()
        for name, field in tool.Params.model_fields.items():
            assert field.description, f"{tool.name}.{name} has no description"


async def test_unknown_tool_names_the_closest(harness: Harness) -> None:
    result = await harness.call("run_shel", {"command": "true"})
    assert result.is_error
    assert "NotFound" in result.text and "Did you mean run_shell" in result.text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"command": "true"', "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ("5", "must be a JSON object, got int"),
        ("null", "must be a JSON object, got NoneType"),
        ("", "command: required argument missing"),
        ('{"command": 5}', "command: Input should be a valid string"),
        ('{"command": "true", "bogus": 1}', "bogus: unknown argument"),
        ('{"command": "true", "timeout": -1}', "timeout: Input should be greater than 0"),
        ("[" * 100_000, "not valid JSON"),
    ],
)
async def test_malformed_arguments_are_invalid_arguments(
    harness: Harness, raw: str, expected: str
) -> None:
    result = await harness.call("run_shell", raw)
    assert result.is_error
    assert result.text.startswith("Error (InvalidArguments)")
    assert expected in result.text


async def test_all_schema_problems_in_one_error(harness: Harness) -> None:
    result = await harness.call("run_shell", {"command": 1, "timeout": "soon", "x": 1})
    assert "command:" in result.text and "timeout:" in result.text and "x: unknown" in result.text


async def test_huge_arguments_are_refused_before_parsing(harness: Harness) -> None:
    result = await harness.call("run_shell", json.dumps({"command": "echo " + "a" * 5_000_000}))
    assert result.is_error and "MiB limit" in result.text


@pytest.mark.parametrize("alias", ["cmd", "script", "shell_command"])
async def test_shell_command_aliases(harness: Harness, alias: str) -> None:
    result = await harness.call("run_shell", {alias: "echo aliased"})
    assert not result.is_error, result.text
    assert "aliased" in result.text


async def test_identical_failures_are_suppressed_after_two(
    harness: Harness, extra: CountingTool
) -> None:
    first = await harness.call("count", {"n": 3})
    second = await harness.call("count", {"n": 3})
    third = await harness.call("count", {"n": 3})
    assert first.is_error and second.is_error and third.is_error
    assert extra.runs == 2
    assert "already failed 2 times" in third.text and "change the arguments" in third.text
    # Different arguments still run; a success clears the memory for the tool.
    assert not (await harness.call("count", {"n": 2})).is_error
    assert extra.runs == 3
    assert (await harness.call("count", {"n": 3})).is_error
    assert extra.runs == 4


async def test_a_crashing_tool_becomes_an_error_result(harness: Harness, extra: Any) -> None:
    result = await harness.call("crash", {})
    assert result.is_error and "KeyError" in result.text and "boom" in result.text


async def test_cancel_stops_a_tool_that_ignores_it(harness: Harness, extra: Any) -> None:
    ctx = harness.context("stubborn")
    task = asyncio.create_task(harness.call("stubborn", {}, ctx))
    await asyncio.sleep(0.05)
    ctx.cancel.set()
    result = await asyncio.wait_for(task, 5)
    assert result.is_error and "Cancelled" in result.text


async def test_started_and_completed_events(harness: Harness) -> None:
    await harness.call("run_shell", {"command": "echo hi"})
    started = [e for e in harness.events if isinstance(e, ToolCallStarted)]
    completed = [e for e in harness.events if isinstance(e, ToolCallCompleted)]
    assert len(started) == 1 and started[0].command == "echo hi" and started[0].actor == "local"
    assert started[0].risk == "low"
    assert len(completed) == 1 and completed[0].exit_code == 0 and not completed[0].is_error


async def test_a_refused_call_completes_without_starting(workspace: Path) -> None:
    h = make_harness(workspace, mode=ApprovalMode.READ_ONLY)
    result = await h.call("run_shell", {"command": "touch x"})
    assert result.is_error and "PermissionDenied" in result.text
    assert h.kinds() == ["tool_completed"]
    assert not (workspace / "x").exists()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
raw_arguments = st.one_of(
    st.text(max_size=200),
    st.dictionaries(
        st.sampled_from(
            ["command", "path", "pattern", "timezone", "offset", "limit", "content", "x", "cmd"]
        ),
        json_values,
        max_size=4,
    ).map(json.dumps),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.sampled_from([t.name for t in builtin_tools()] + ["nope", ""]), raw=raw_arguments)
async def test_random_arguments_never_raise(workspace: Path, name: str, raw: str) -> None:
    # Read-only mode and an `echo`-only allowlist: random text can never do harm here.
    h = make_harness(
        workspace,
        mode=ApprovalMode.READ_ONLY,
        settings=SecuritySettings(command_allowlist=["echo"], workspace_only=True),
    )
    result = await h.call(name, raw)
    assert isinstance(result, ToolResult)
    assert isinstance(result.text, str)


# -- loop detection on the real dispatch path ---------------------------------------------------


def runs_logged(harness: Harness) -> int:
    log = harness.workspace / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


async def test_no_progress_call_is_noted_then_not_run(harness: Harness) -> None:
    (harness.workspace / "state.txt").write_text("waiting\n" * 3000)  # over the head cap
    # The output never changes; the log says how often the command really ran.
    poll = {"command": "echo ran >> runs.log; cat state.txt"}
    first, second, third = [await harness.call("run_shell", poll) for _ in range(3)]
    assert "loop detected" not in first.text + second.text
    assert "returned the same output 3 times" in third.text and not third.is_error
    assert third.text.rstrip().endswith("take a different approach.]")  # after the cut
    assert third.details["loop"] == "no_progress"
    harness.events.clear()
    fourth = await harness.call("run_shell", poll)
    assert fourth.is_error and fourth.text.startswith("Error (LoopDetected)")
    assert "was not run" in fourth.text and runs_logged(harness) == 3
    assert "tool_call_started" not in harness.kinds()  # nothing to approve, nothing ran
    notices = [e for e in harness.events if isinstance(e, Notice)]
    assert notices and "not run" in notices[0].message and notices[0].level == "warning"
    # Anything else lifts the block, and a refusal is not a failure the call is held to.
    assert not (await harness.call("time", {})).is_error
    fifth = await harness.call("run_shell", poll)
    assert not fifth.is_error and runs_logged(harness) == 4


async def test_ping_pong_is_noted_then_the_next_call_is_not_run(harness: Harness) -> None:
    harness.registry.loops = LoopMemory(ping_pong_cycles=2, no_progress_repeats=0)
    (harness.workspace / "state.txt").write_text("not ready\n")
    ping = {"command": "echo ran >> runs.log; echo checked"}
    look = {"path": "state.txt"}
    assert "loop" not in (await harness.call("run_shell", ping)).text
    assert "loop" not in (await harness.call("read_file", look)).text
    assert "loop" not in (await harness.call("run_shell", ping)).text
    harness.events.clear()
    noted = await harness.call("read_file", look)
    assert "run_shell and read_file have alternated 2 times" in noted.text
    assert any(isinstance(e, Notice) and "alternated 2 times" in e.message for e in harness.events)
    blocked = await harness.call("run_shell", ping)
    assert blocked.is_error and "LoopDetected" in blocked.text and runs_logged(harness) == 2


async def test_polling_with_changing_output_runs_every_time(harness: Harness) -> None:
    """sleep, then look at something that moved: every call runs, no note, no notice."""
    for _ in range(8):
        assert not (await harness.call("run_shell", {"command": "sleep 0.01"})).is_error
        look = await harness.call("run_shell", {"command": "echo ran >> runs.log; date +%s%N"})
        assert "loop" not in look.text and not look.is_error
    assert runs_logged(harness) == 8
    assert not [e for e in harness.events if isinstance(e, Notice)]

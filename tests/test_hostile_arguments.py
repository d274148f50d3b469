"""Hostile tool arguments through the real registry and the real tool set: never an exception.

Why these cases: each one once ended a run with a traceback or would have — Python's JSON
parser accepts ``NaN`` and ``1e999`` and hands out integers no ``float()`` can hold, a lone
``\\ud800`` decodes into a string no UTF-8 writer accepts, and error messages that quote the
input can echo megabytes back to the model. Every answer must be a short ``is_error`` result.

Nothing destructive can run: the policy is read-only and each call's cancel event is already
set, so the path goes parse → policy → authorize and stops before any tool body starts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, field_validator

from tests.conftest import Harness, make_harness
from tui.events import Event
from tui.security.permissions import ApprovalMode
from tui.security.settings import SecuritySettings
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult

MAX_ERROR_CHARS = 2600
"""An error result quotes at most this much (the registry's cap plus the envelope words)."""

TOOL_NAMES = [tool.name for tool in builtin_tools()]
PARAM_NAMES = sorted({name for tool in builtin_tools() for name in tool.Params.model_fields})


def read_only_harness(workspace: Path) -> Harness:
    return make_harness(
        workspace,
        mode=ApprovalMode.READ_ONLY,
        settings=SecuritySettings(command_allowlist=["echo"], workspace_only=True),
    )


async def call_without_running(h: Harness, name: str, raw: str | dict[str, Any]) -> ToolResult:
    """Through ``registry.execute`` with the cancel already set: nothing can start."""
    ctx = h.context(name if len(name) < 100 else "long-name")
    ctx.cancel.set()
    return await h.registry.execute(name, raw, ctx)


def assert_safe(result: ToolResult, events: list[Event]) -> None:
    """A short error or a result, in text every writer can encode; events serialise."""
    assert isinstance(result, ToolResult)
    result.text.encode("utf-8")
    if result.is_error:
        assert len(result.text) <= MAX_ERROR_CHARS, result.text[:300]
    for event in events:
        event.model_dump_json()


HUGE_INT = "1" + "0" * 400
HOSTILE = {
    "int of 400 digits": ('{"command": "ls", "wait": ' + HUGE_INT + "}", "out of range"),
    "int past the 4300-digit limit": ('{"command": "ls", "timeout": 1' + "0" * 5000 + "}", "range"),
    "float overflow": ('{"command": "ls", "timeout": 1e999}', "out of range"),
    "NaN": ('{"command": "ls", "timeout": NaN}', "NaN is not a JSON number"),
    "Infinity": ('{"command": "ls", "timeout": Infinity}', "Infinity is not a JSON number"),
    "-Infinity": ('{"command": "ls", "timeout": -Infinity}', "Infinity is not a JSON number"),
    "deep nesting": ('{"command": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deeply"),
    "deep objects": ('{"a":' * 3000 + "1" + "}" * 3000, "nested too deeply"),
    "array": ("[1, 2, 3]", "must be a JSON object, got list"),
    "boolean": ("true", "must be a JSON object, got bool"),
    "null": ("null", "must be a JSON object, got NoneType"),
    "invalid escape": ('{"command": "\\x41"}', "not valid JSON"),
    "truncated escape": ('{"command": "\\ud8"}', "not valid JSON"),
    "10 MB string": ('{"command": "' + "a" * 10_000_000 + '"}', "MiB limit"),
    "huge key": ('{"' + "k" * 1_000_000 + '": 1, "command": "ls"}', "unknown argument"),
    "huge value of the wrong type": ('{"command": ["' + "b" * 1_000_000 + '"]}', "command"),
}


@pytest.mark.parametrize(("raw", "expected"), HOSTILE.values(), ids=HOSTILE.keys())
async def test_hostile_arguments_are_short_invalid_arguments(
    workspace: Path, raw: str, expected: str
) -> None:
    h = read_only_harness(workspace)
    result = await call_without_running(h, "run_shell", raw)

    assert_safe(result, h.events)
    assert result.is_error and result.details["error_type"] == "InvalidArguments", result.text
    assert expected in result.text, result.text[:500]


@pytest.mark.parametrize(
    "raw",
    [
        '{"command": "echo \\ud800"}',
        '{"command": "echo \ud800"}',
        '{"\\udc80": 1, "command": "ls"}',
        '{"command": "ls", "\udfff": "\\ud800\\ud800"}',
    ],
    ids=["escaped value", "raw value", "escaped key", "raw key"],
)
async def test_lone_surrogates_become_replacement_characters(workspace: Path, raw: str) -> None:
    h = read_only_harness(workspace)
    result = await call_without_running(h, "run_shell", raw)

    assert_safe(result, h.events)
    assert "\ud800" not in result.text and "\udc80" not in result.text


async def test_duplicate_keys_keep_the_last_and_still_answer(workspace: Path) -> None:
    h = read_only_harness(workspace)
    result = await call_without_running(h, "run_shell", '{"command": "ls", "command": 5}')

    assert_safe(result, h.events)
    assert "command: Input should be a valid string" in result.text


async def test_a_hook_rewrite_that_is_not_json_is_an_error(workspace: Path) -> None:
    h = read_only_harness(workspace)
    result = await call_without_running(h, "run_shell", {"command": float("nan"), "x": {1, 2}})

    assert_safe(result, h.events)
    assert result.details["error_type"] == "InvalidArguments"


@pytest.mark.parametrize(
    "name",
    ["", "x" * 1_000_000, "run_shell\ud800", "\udc80", "../../etc/passwd", "a b;c\x00d", "名前"],
    ids=["empty", "1 MB", "surrogate suffix", "surrogate", "path", "controls", "non-ascii"],
)
async def test_hostile_tool_names_are_not_found(workspace: Path, name: str) -> None:
    h = read_only_harness(workspace)
    result = await call_without_running(h, name, '{"command": "ls"}')

    assert_safe(result, h.events)
    assert result.details["error_type"] == "NotFound", result.text[:300]


async def test_a_tool_whose_validator_overflows_is_invalid_arguments(workspace: Path) -> None:
    """The reported case: ``wait`` of 400 digits reached ``float()`` inside a validator."""
    h = read_only_harness(workspace)
    result = await call_without_running(h, "run_shell", {"command": "ls", "wait": 10**400})

    assert_safe(result, h.events)
    assert result.details["error_type"] == "InvalidArguments"


class OverflowingParams(ToolParams):
    seconds: float = Field(description="a duration")

    @field_validator("seconds", mode="before")
    @classmethod
    def _convert(cls, value: object) -> float:
        return float(10**400)  # what a validator's float() of a big int does


class OverflowingTool(Tool[OverflowingParams]):
    """A tool whose own validator raises something that is neither ValueError nor TypeError."""

    name = "overflowing"
    label = "Overflowing"
    Params = OverflowingParams
    description = "test tool"

    async def execute(self, params: OverflowingParams, ctx: ToolContext) -> ToolResult:
        raise AssertionError("never reached")


async def test_a_validator_raising_anything_is_invalid_arguments(workspace: Path) -> None:
    h = read_only_harness(workspace)
    h.registry.register(OverflowingTool())

    assert h.registry.needs_approval("overflowing", '{"seconds": 1}', h.policy) is False
    result = await call_without_running(h, "overflowing", '{"seconds": 1}')
    assert_safe(result, h.events)
    assert result.details["error_type"] == "InvalidArguments", result.text
    assert "OverflowError" in result.text


class BrokenAccessTool(Tool[ToolParams]):
    """Valid arguments, but working out what the call touches blows up."""

    name = "broken_access"
    label = "Broken access"
    Params = ToolParams
    description = "test tool"

    def access(self, params: ToolParams) -> ToolAccess:
        raise OverflowError("int too large to convert to float")

    async def execute(self, params: ToolParams, ctx: ToolContext) -> ToolResult:
        raise AssertionError("never reached")


async def test_a_tool_failing_before_it_starts_is_an_error_run_alone(workspace: Path) -> None:
    h = read_only_harness(workspace)
    h.registry.register(BrokenAccessTool())

    assert h.registry.needs_approval("broken_access", "{}", h.policy) is True
    result = await call_without_running(h, "broken_access", "{}")
    assert_safe(result, h.events)
    assert result.details["error_type"] == "ExecutionFailed" and "OverflowError" in result.text


class SurrogateOutputTool(Tool[ToolParams]):
    """Returns text no UTF-8 writer accepts, as a tool reading undecodable bytes might."""

    name = "surrogate_output"
    label = "Surrogate output"
    Params = ToolParams
    description = "test tool"

    async def execute(self, params: ToolParams, ctx: ToolContext) -> ToolResult:
        return ToolResult("bad \udcff bytes")


async def test_a_result_with_lone_surrogates_is_cleaned(workspace: Path) -> None:
    h = read_only_harness(workspace)
    h.registry.register(SurrogateOutputTool())

    result = await h.registry.execute("surrogate_output", "{}", h.context("surrogate_output"))
    assert_safe(result, h.events)
    assert result.text == "bad \ufffd bytes"


def test_needs_approval_never_raises(workspace: Path) -> None:
    """The loop asks this before running anything; it must not raise on hostile input."""
    h = read_only_harness(workspace)
    for raw, _ in HOSTILE.values():
        assert h.registry.needs_approval("run_shell", raw, h.policy) in (True, False)
    assert h.registry.needs_approval("run_shell\ud800", "{}", h.policy) is False


# -- fuzz ------------------------------------------------------------------------------------

hostile_text = st.text(
    alphabet=st.characters(exclude_categories=()), max_size=20
) | st.sampled_from(["\ud800", "\udfff", "a\udc80b", "\\ud800", "\\", '"'])
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=10**60, max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True),
)
json_like = st.recursive(
    st.none() | st.booleans() | numbers | hostile_text,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(PARAM_NAMES) | hostile_text, inner, max_size=4)
    ),
    max_leaves=8,
)


def _dump(value: Any) -> str:
    """JSON text Python writes: NaN, Infinity and ``\\udXXX`` escapes included."""
    try:
        return json.dumps(value)
    except ValueError:  # an integer past Python's digit limit
        return '{"command": 1' + "0" * 5000 + "}"


deep = st.integers(min_value=900, max_value=60_000).flatmap(
    lambda n: st.sampled_from(["[" * n + "]" * n, '{"a":' * n + "1" + "}" * n, "[" * n])
)
raw_arguments = st.one_of(
    json_like.map(_dump),
    st.dictionaries(st.sampled_from(PARAM_NAMES) | hostile_text, json_like, max_size=5).map(_dump),
    deep,
    st.text(max_size=60),
    st.binary(max_size=60).map(lambda b: b.decode("utf-8", "surrogateescape")),
)
tool_names = st.sampled_from([*TOOL_NAMES, "", "nope"]) | hostile_text

_shared: dict[Path, Harness] = {}
"""One harness for all examples: building the tool set each time would be most of the cost."""

FUZZ_EXAMPLES = int(os.environ.get("HOSTILE_FUZZ_EXAMPLES", "10000"))
PER_EXAMPLE = 10
"""Calls per hypothesis example: one example's fixed cost (an event loop, the bookkeeping)
is paid once for ten calls, so 10,000 calls fit the time the suite can spare."""


@settings(
    max_examples=FUZZ_EXAMPLES // PER_EXAMPLE,
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
    calls=st.lists(st.tuples(tool_names, raw_arguments), min_size=PER_EXAMPLE, max_size=PER_EXAMPLE)
)
async def test_fuzzed_arguments_never_escape_the_registry(
    workspace: Path, calls: list[tuple[str, str]]
) -> None:
    h = _shared.get(workspace) or _shared.setdefault(workspace, read_only_harness(workspace))
    for name, raw in calls:
        h.events.clear()
        result = await call_without_running(h, name, raw)
        assert_safe(result, h.events)

"""phi-core's and claw-code's contracts (LazyBouy/phi-core, ultraworkers/claw-code), exactly:
a per-tool timeout that cancels the call, a start and an end for every call steering skipped,
images a tool returns reaching the model in every wire format, and the headless ``json`` and
``stream-json`` outputs keeping their documented fields.

One test per behaviour, named after it, through the real registry, whole sessions against the
scripted model server, and the real ``agent-tui`` command.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import test_loop
from tests.conftest import make_harness
from tests.scripted_server import ScriptedServer
from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server  # noqa: F401
from tests.test_loop import (
    call,
    open_session,
    result_text,
    shell,
    submit,
    tools_step,
    wire_results,
)
from tests.test_prompt_cache import session_for
from tui.config import load_settings
from tui.events import ToolCallCompleted, ToolCallStarted, parse_event
from tui.tools.timeouts import ToolTimeouts

server = test_loop.server
"""The fixture: afterwards every request is checked for call/result pairing."""

DEADLINE = 10.0
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def processes_running(marker: str) -> list[int]:
    """Pids whose command line holds ``marker`` (this machine's /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


# -- the per-tool timeout --------------------------------------------------------------------------


async def test_phi_core_tool_timeout_cancels_the_call_and_the_loop_goes_on(
    server: ScriptedServer, workspace: Path
) -> None:
    server.add(tools_step(shell("call_slow", "sleep 31.4159")), {"text": "recovered from timeout"})
    started = time.monotonic()
    async with open_session("openai", server, workspace, agent={"tool_timeout": 0.5}) as (
        session,
        _rec,
    ):
        outcome = await asyncio.wait_for(submit(session, "run the slow thing"), DEADLINE)
    assert time.monotonic() - started < 5, "the call was not cut at its limit"
    assert outcome.reason == "completed" and outcome.final_text == "recovered from timeout"
    text = result_text(server.requests[1], "call_slow")
    assert text.startswith(
        "Error (Timeout): run_shell exceeded its timeout of 500ms ([agent] tool_timeout) and "
        "was cancelled"
    ), text
    assert processes_running("sleep 31.4159") == []  # its process group was killed


async def test_phi_core_tool_timeout_per_tool_overrides_the_default(workspace: Path) -> None:
    h = make_harness(workspace)
    h.registry.timeouts = ToolTimeouts(default=30, per_tool={"sleep": 0.2, "run_shell": 0})
    started = time.monotonic()
    slept = await h.call("sleep", {"seconds": 20})
    assert time.monotonic() - started < 3
    assert slept.is_error and slept.details["error_type"] == "Timeout"
    assert "sleep exceeded its timeout of 200ms ([agent] tool_timeouts.sleep)" in slept.text
    # 0: no limit for that tool, whatever the default.
    h.registry.timeouts = ToolTimeouts(default=0.1, per_tool={"run_shell": 0})
    done = await h.call("run_shell", {"command": "sleep 0.4; echo finished"})
    assert not done.is_error and done.model_result()["stdout"] == "finished\n"
    # Within its limit a call is untouched; with no limit at all, unbounded as before.
    h.registry.timeouts = ToolTimeouts(default=5)
    assert (await h.call("sleep", {"seconds": 0.05})).text.startswith("Slept")
    h.registry.timeouts = ToolTimeouts()
    assert h.registry.timeouts.for_tool("sleep") is None


def test_phi_core_tool_timeouts_may_only_shorten_untrusted(workspace: Path) -> None:
    config = Path(os.environ["AGENT_TUI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("[agent]\ntool_timeout = 600\n")
    (workspace / ".agent-tui.toml").write_text(
        "[agent]\ntool_timeout = 60\ntool_timeouts = { fetch_url = 30 }\n"
    )
    loaded = load_settings(workspace, env={})
    assert loaded.settings.agent.tool_timeout == 60
    assert loaded.settings.agent.tool_timeouts == {"fetch_url": 30}
    assert not loaded.trust.pending
    (workspace / ".agent-tui.toml").write_text(
        "[agent]\ntool_timeout = 6000\ntool_timeouts = { run_shell = 0, fetch_url = 900 }\n"
    )
    loaded = load_settings(workspace, env={})
    assert loaded.settings.agent.tool_timeout == 600
    assert loaded.settings.agent.tool_timeouts == {}
    assert {c.key for c in loaded.trust.held} == {
        "agent.tool_timeout",
        "agent.tool_timeouts.run_shell",
        "agent.tool_timeouts.fetch_url",
    }


# -- steering ----------------------------------------------------------------------------------


async def test_phi_core_calls_skipped_by_steering_emit_a_start_and_an_end(
    server: ScriptedServer, workspace: Path
) -> None:
    gate = workspace / "gate"
    server.add(
        tools_step(
            shell("call_first", f"while [ ! -e {gate} ]; do sleep 0.01; done; echo first"),
            shell("call_second", "touch second-ran"),
            call("call_third", "read_file", {"path": "gate"}),
        ),
        {"text": "switching"},
    )
    async with open_session("anthropic", server, workspace, agent={"strategy": "sequential"}) as (
        session,
        rec,
    ):
        assert session._loop is not None
        task = asyncio.ensure_future(session.submit("do three things"))
        await rec.wait_for(
            lambda e: isinstance(e, ToolCallStarted) and e.tool_call_id == "call_first",
            "the first call to start",
        )
        session._loop.steer("stop, do this instead")
        gate.touch()
        outcome = await asyncio.wait_for(task, DEADLINE)
    assert outcome.reason == "completed"
    assert not (workspace / "second-ran").exists()
    lifecycle = [
        (type(e).__name__, e.tool_call_id)
        for e in rec.events
        if isinstance(e, ToolCallStarted | ToolCallCompleted)
    ]
    for skipped, name in (("call_second", "run_shell"), ("call_third", "read_file")):
        mine = [kind for kind, call_id in lifecycle if call_id == skipped]
        assert mine == ["ToolCallStarted", "ToolCallCompleted"], (skipped, lifecycle)
        (start,) = [e for e in rec.of(ToolCallStarted) if e.tool_call_id == skipped]
        assert start.tool_name == name
        text = result_text(server.requests[1], skipped)
        assert text.startswith("Error (Skipped): Skipped due to queued user message.")
        assert "was NOT run" in text
    (start,) = [e for e in rec.of(ToolCallStarted) if e.tool_call_id == "call_second"]
    assert start.arguments["command"] == "touch second-ran"


# -- images ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["openai", "anthropic", "openai-responses"])
async def test_phi_core_images_a_tool_returns_reach_the_model_in_every_wire_format(
    server: ScriptedServer, workspace: Path, api: str
) -> None:
    (workspace / "dot.png").write_bytes(PNG_1X1)
    server.add(tools_step(call("call_look", "read_file", {"path": "dot.png"})), {"text": "a dot"})
    async with session_for(api, server, workspace) as (session, _rec):
        outcome = await submit(session, "what is in dot.png?")
    assert outcome.reason == "completed"
    data = base64.b64encode(PNG_1X1).decode("ascii")
    body = server.requests[1].body
    if api == "openai":
        messages = body["messages"]
        (index,) = [i for i, m in enumerate(messages) if m.get("tool_call_id") == "call_look"]
        assert "dot.png: image" in json.loads(messages[index]["content"])["result"]
        follow = messages[index + 1]  # right after the results: the images, named by call
        assert follow["role"] == "user"
        assert follow["content"][0] == {
            "type": "text",
            "text": "Images returned by tool call call_look:",
        }
        assert follow["content"][1] == {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{data}"},
        }
    elif api == "anthropic":
        (result,) = [
            block
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        text, image = result["content"]
        assert text["type"] == "text" and "dot.png: image" in text["text"]
        assert image["type"] == "image"
        assert image["source"] == {"type": "base64", "media_type": "image/png", "data": data}
        assert "call_look" in wire_results(server.requests[1])
    else:
        (output,) = [i for i in body["input"] if i.get("type") == "function_call_output"]
        text, image = output["output"]
        assert text["type"] == "input_text" and "dot.png: image" in text["text"]
        assert image == {"type": "input_image", "image_url": f"data:image/png;base64,{data}"}


# -- headless output ---------------------------------------------------------------------------

JSON_FIELDS = {
    "result",
    "stop_reason",
    "is_error",
    "error",
    "turns",
    "session_id",
    "usage",
    "limits",
}
"""README: "one JSON object (`json`: result, stop reason, session id, and `usage` …)", and
the limits that stopped work ("the list under `limits` in `--output-format json`")."""
CLAUDE_RESULT_FIELDS = {
    "type",
    "subtype",
    "num_turns",
    "total_cost_usd",
    "total_cost_known",
    "duration_ms",
    "duration_api_ms",
    "permission_denials",
    "uuid",
    "terminal_reason",
}
"""Claude Code's result object, which the same line also is (README, "`json`: the result
object alone")."""
USAGE_FIELDS = {
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "cost_usd",
}


def test_claw_code_headless_json_and_stream_json_keep_their_documented_fields(
    cli: Cli,  # noqa: F811
    model_server: Callable[..., ServerProcess],  # noqa: F811
) -> None:
    steps: list[dict[str, Any]] = [
        {**tools_step(shell("call_1", "echo fields")), "usage": {"input_tokens": 9}},
        {"text": "done.", "usage": {"input_tokens": 12, "output_tokens": 2}},
    ]
    server = model_server([*steps, *steps])
    args = headless(server, "go", "--approval-mode", "full-auto")
    done = cli.run(*args, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert set(summary) == JSON_FIELDS | CLAUDE_RESULT_FIELDS
    assert set(summary["usage"]) == USAGE_FIELDS | {
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    }
    assert summary["result"] == "done." and summary["stop_reason"] == "completed"
    assert summary["is_error"] is False and summary["error"] is None and summary["turns"] == 2

    # agent-tui-json writes every bus event (stream-json speaks Claude Code's lines).
    streamed = cli.run(*args, "--output-format", "agent-tui-json")
    assert streamed.returncode == 0, streamed.stderr
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]
    for line in lines:  # every bus event, each one line that parses back to itself
        assert {"kind", "ts", "loop_id"} <= set(line)
        assert json.loads(parse_event(json.dumps(line)).model_dump_json()) == line
    by_kind = {line["kind"]: line for line in lines}
    assert {"tool_call_id", "tool_name", "arguments", "command", "actor", "risk"} <= set(
        by_kind["tool_started"]
    )
    assert by_kind["tool_started"]["command"] == "echo fields"
    assert {"tool_call_id", "stream", "text"} <= set(by_kind["tool_output"])
    completed = by_kind["tool_completed"]
    assert {"is_error", "duration_ms", "exit_code", "summary"} <= set(completed)
    assert completed["exit_code"] == 0 and completed["summary"] == "exit code: 0"
    assert by_kind["turn_ended"]["reason"] == "completed"
    assert by_kind["turn_ended"]["final_text"] == "done."

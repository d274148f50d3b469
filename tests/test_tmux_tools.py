"""The tmux tools and run_shell's tmux path, through the real registry and policy.

The harness is the app's wiring with ``TmuxBackend(LocalBackend(...))`` as the backend, on a
private tmux socket killed after each test. Calls go through ``ToolRegistry.execute``, so
argument parsing, the policy's verdict on typed commands and the truncation rules are the
real ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.conftest import Harness, make_harness
from tests.tmux_helpers import (
    SHELL,
    OutputWatch,
    clean_env,
    kill_server,
    needs_tmux,
    new_socket_name,
    tmux,
)
from tui.events import Notice
from tui.exec.local import LocalBackend
from tui.exec.tmux.backend import TmuxBackend
from tui.security.permissions import ApprovalMode
from tui.tools.base import missing_description_sections
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.builtin.shell.tools import parse_wait
from tui.tools.builtin.tmux import tmux_tools

pytestmark = needs_tmux

DEADLINE = 10.0
TMUX_TOOLS = {
    "tmux_capture_pane",
    "tmux_send_keys",
    "tmux_create_session",
    "tmux_kill_session",
    "tmux_create_pane",
    "tmux_kill_pane",
}


@pytest.fixture
def socket_name() -> Iterator[str]:
    name = new_socket_name()
    try:
        yield name
    finally:
        kill_server(name)


def tmux_backend(socket_name: str, workspace: Path, **kwargs: object) -> TmuxBackend:
    """A local tmux backend on a private socket, in ``workspace`` (``kwargs`` override)."""
    options: dict[str, object] = {
        "shell": SHELL,
        "owner": "atui-test",
        "config": "/dev/null",
        "default_cwd": str(workspace),
        "env": clean_env(),
    }
    options.update(kwargs)
    return TmuxBackend(
        LocalBackend(default_cwd=str(workspace)),
        socket_name=socket_name,
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture
async def tmux_harness(socket_name: str, workspace: Path) -> AsyncIterator[Harness]:
    backend = tmux_backend(socket_name, workspace)
    harness = make_harness(workspace, backend=backend)
    await backend.start()  # as the app does, so the first call already names its pane
    yield harness
    await backend.close()


def pane_of(harness: Harness) -> str:
    backend = harness.backend
    assert isinstance(backend, TmuxBackend) and backend.default_pane
    return backend.default_pane


# -- registration and descriptions ---------------------------------------------------------------


def test_tmux_tools_only_with_a_tmux_backend(tmp_path: Path) -> None:
    assert not TMUX_TOOLS & {tool.name for tool in builtin_tools()}
    assert not TMUX_TOOLS & {tool.name for tool in builtin_tools(LocalBackend())}
    backend = tmux_backend("unused", tmp_path)
    assert {tool.name for tool in builtin_tools(backend)} >= TMUX_TOOLS


@pytest.mark.parametrize("tool", tmux_tools(), ids=lambda tool: tool.name)
def test_tmux_tool_descriptions_have_the_four_sections(tool: object) -> None:
    assert missing_description_sections(tool.description) == []  # type: ignore[attr-defined]
    schema = tool.parameters_schema()  # type: ignore[attr-defined]
    for name, field in schema["properties"].items():
        assert field.get("description"), f"{tool.name}.{name} has no description"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [(True, True), (False, False), ("false", False), (30, 30.0), ("30s", 30.0), ("10m", 600.0),
     ("1h", 3600.0), ("1.5 min", 90.0), ("45", 45.0), ("500ms", 0.5), ("2s", 2.0),
     ("1m", 60.0), ("1d", 86400.0), ("9h", 32400.0)],
)  # fmt: skip
def test_wait_values(raw: object, seconds: object) -> None:
    assert parse_wait(raw) == seconds


@pytest.mark.parametrize("raw", ["soon", "0s", "-1", "10d", "25h", "1w", "0ms", "nan"])
def test_bad_wait_values(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_wait(raw)


# -- run_shell on a tmux backend -------------------------------------------------------------------


async def test_run_shell_in_the_pane_says_streams_are_merged(tmux_harness: Harness) -> None:
    result = await tmux_harness.call("run_shell", {"command": "echo out; echo err >&2; false"})
    assert not result.is_error
    assert result.text.startswith("exit code: 1")
    assert "output (stdout and stderr merged):\nout\nerr" in result.text
    started = [e for e in tmux_harness.events if getattr(e, "kind", "") == "tool_started"]
    assert started and started[-1].actor == f"local/tmux:{pane_of(tmux_harness)}"  # type: ignore[attr-defined]


async def test_wait_false_then_capture(tmux_harness: Harness) -> None:
    await tmux_harness.call("run_shell", {"command": "true"})
    pane = pane_of(tmux_harness)
    result = await tmux_harness.call(
        "run_shell", {"command": "sleep 0.2; echo finished-later", "wait": False}
    )
    assert not result.is_error
    assert f"running in pane {pane}" in result.text and "tmux_capture_pane" in result.text
    backend = tmux_harness.backend
    assert isinstance(backend, TmuxBackend)
    assert await backend.wait_for_prompt(pane, DEADLINE) == 0
    capture = await tmux_harness.call("tmux_capture_pane", {"target": pane})
    assert not capture.is_error
    assert "finished-later" in capture.text and "__ATUI_" not in capture.text


async def test_wait_duration_is_an_error_that_leaves_it_running(tmux_harness: Harness) -> None:
    result = await tmux_harness.call("run_shell", {"command": "echo begun; sleep 30", "wait": "1s"})
    pane = pane_of(tmux_harness)
    assert result.is_error  # Buddy: a wait duration that runs out is an error result
    assert "timed out waiting for command completion after 1s" in result.text
    assert "still running in its pane (not killed)" in result.text
    assert "begun" in result.text
    assert f"tmux_capture_pane target={pane}" in result.text and "C-c" in result.text
    busy = await tmux_harness.call("run_shell", {"command": "echo next"})
    assert busy.is_error and "still running" in busy.text
    stop = await tmux_harness.call("tmux_send_keys", {"target": pane, "keys": ["C-c"]})
    assert not stop.is_error and f"sent to pane {pane}: keys C-c" in stop.text


async def test_timeout_on_tmux_is_an_error_that_leaves_it_running(tmux_harness: Harness) -> None:
    result = await tmux_harness.call("run_shell", {"command": "sleep 30", "timeout": 0.5})
    assert result.is_error
    assert "still running (not killed)" in result.text
    assert "process group was killed" not in result.text


async def test_wait_false_needs_a_tmux_backend(workspace: Path) -> None:
    harness = make_harness(workspace)
    result = await harness.call("run_shell", {"command": "sleep 1", "wait": False})
    assert result.is_error and "needs a tmux backend" in result.text
    bounded = await harness.call("run_shell", {"command": "echo quick", "wait": "5s"})
    assert not bounded.is_error and "stdout:\nquick" in bounded.text


async def test_guardrails_through_run_shell(tmux_harness: Harness) -> None:
    for command in ("set -e", "exit 1"):
        result = await tmux_harness.call("run_shell", {"command": command})
        assert result.is_error and "PermissionDenied" in result.text
        assert "bash -lc" in result.text or "bash -c" in result.text
    ok = await tmux_harness.call("run_shell", {"command": "bash -lc 'set -e; exit 4'"})
    assert ok.text.startswith("exit code: 4")


async def test_recreated_pane_is_a_note_and_a_bus_notice(
    tmux_harness: Harness, socket_name: str
) -> None:
    await tmux_harness.call("run_shell", {"command": "true"})
    await tmux(socket_name, "kill-server")
    result = await tmux_harness.call("run_shell", {"command": "echo fresh"})
    assert not result.is_error and "note: the tmux server" in result.text
    assert any(isinstance(e, Notice) and "had stopped" in e.message for e in tmux_harness.events)


# -- tmux_capture_pane ---------------------------------------------------------------------------


async def test_capture_colours_history_tail_and_fallbacks(tmux_harness: Harness) -> None:
    await tmux_harness.call("run_shell", {"command": "printf '\\033[31mred\\033[0m\\n'"})
    pane = pane_of(tmux_harness)
    plain = await tmux_harness.call("tmux_capture_pane", {})
    assert "red" in plain.text and "\x1b[" not in plain.text
    coloured = await tmux_harness.call("tmux_capture_pane", {"escape_sequences": True})
    assert "\x1b[31m" in coloured.text and "red\n" in coloured.text
    assert "\x1b[8m" not in coloured.text  # marker lines are gone, attributes and all
    missing = await tmux_harness.call("tmux_capture_pane", {"target": "%999"})
    assert not missing.is_error
    assert f"showing the shared pane {pane} instead" in missing.text
    alternate = await tmux_harness.call("tmux_capture_pane", {"alternate_screen": True})
    assert "alternate screen was not active; captured main pane instead" in alternate.text
    await tmux_harness.call("run_shell", {"command": "seq 100000 103000"})
    history = await tmux_harness.call("tmux_capture_pane", {"target": pane, "start": -3000})
    assert history.text.splitlines()[1].startswith("[truncated ")
    assert "\n103000\n" in history.text
    assert history.details["truncated_chars"] > 0


# -- tmux_send_keys ------------------------------------------------------------------------------


async def test_send_keys_to_a_missing_target_is_an_error(tmux_harness: Harness) -> None:
    await tmux_harness.call("run_shell", {"command": "true"})
    result = await tmux_harness.call("tmux_send_keys", {"target": "%999", "keys": ["C-c"]})
    assert result.is_error and "NotFound" in result.text
    nothing = await tmux_harness.call("tmux_send_keys", {"target": "%1"})
    assert nothing.is_error and "at least one" in nothing.text


async def test_typed_commands_are_judged_by_the_policy(socket_name: str, workspace: Path) -> None:
    backend = tmux_backend(socket_name, workspace)
    harness = make_harness(workspace, mode=ApprovalMode.READ_ONLY, backend=backend)
    try:
        await backend.start()
        pane = pane_of(harness)
        (workspace / "keep").write_text("x")
        refused = await harness.call(
            "tmux_send_keys", {"target": pane, "literal_text": "rm -rf keep", "enter": True}
        )
        assert refused.is_error and "PermissionDenied" in refused.text
        assert (workspace / "keep").exists()
        ran = OutputWatch(b"typed-42")
        remove = backend.add_output_listener(pane, ran)
        allowed = await harness.call(
            "tmux_send_keys",
            {"target": pane, "literal_text": "echo typed-$((40+2))", "enter": True, "delay": 0},
        )
        assert not allowed.is_error
        async with asyncio.timeout(DEADLINE):
            await ran.wait()
        remove()
        guarded = await harness.call(
            "tmux_send_keys", {"target": pane, "literal_text": "exit", "enter": True}
        )
        assert guarded.is_error and "shared shell" in guarded.text
    finally:
        await backend.close()


# -- sessions and panes ----------------------------------------------------------------------


async def test_create_and_kill_sessions_and_panes(tmux_harness: Harness, socket_name: str) -> None:
    created = await tmux_harness.call("tmux_create_session", {"name": "devserver"})
    assert not created.is_error and "atui-devserver" in created.text
    pane = created.details["pane_id"]
    ran = await tmux_harness.call("run_shell", {"command": "echo in-dev", "target": "devserver"})
    assert ran.text == "exit code: 0\noutput (stdout and stderr merged):\nin-dev"
    split = await tmux_harness.call("tmux_create_pane", {"direction": "right"})
    assert not split.is_error
    extra = split.details["pane_id"]
    assert not (await tmux_harness.call("tmux_kill_pane", {"target": extra})).is_error
    default = await tmux_harness.call("tmux_kill_pane", {"target": pane_of(tmux_harness)})
    assert default.is_error and "shared pane" in default.text
    shared = await tmux_harness.call("tmux_kill_session", {"name": "agent"})
    assert shared.is_error and "shared session" in shared.text
    await tmux(socket_name, "new-session", "-d", "-s", "theirs", "cat")
    foreign = await tmux_harness.call("tmux_kill_session", {"name": "theirs"})
    assert foreign.is_error and "NotFound" in foreign.text
    killed = await tmux_harness.call("tmux_kill_session", {"name": "devserver"})
    assert not killed.is_error
    names = (await tmux(socket_name, "list-sessions", "-F", "#{session_name}")).split()
    assert sorted(names) == ["atui-agent", "theirs"]
    gone = await tmux_harness.call("run_shell", {"command": "echo x", "target": pane})
    assert gone.is_error and "NotFound" in gone.text


async def test_session_limit_through_the_tool(socket_name: str, workspace: Path) -> None:
    backend = tmux_backend(socket_name, workspace, max_sessions=1)
    harness = make_harness(workspace, backend=backend)
    try:
        result = await harness.call("tmux_create_session", {"name": "more"})
        assert result.is_error and "max_sessions=1" in result.text
    finally:
        await backend.close()


async def test_mirror_events_serialise(tmux_harness: Harness) -> None:
    from tui.events import PaneSnapshot, parse_event
    from tui.exec.tmux.mirror import PaneMirror

    backend = tmux_harness.backend
    assert isinstance(backend, TmuxBackend)
    got = asyncio.Event()
    frames: list[PaneSnapshot] = []

    def publish(event: object) -> None:
        assert isinstance(event, PaneSnapshot)
        frames.append(event)
        got.set()

    mirror = PaneMirror(backend, publish)
    await mirror.start()
    try:
        async with asyncio.timeout(DEADLINE):
            await got.wait()
    finally:
        await mirror.close()
    assert parse_event(frames[0].model_dump_json()) == frames[0]

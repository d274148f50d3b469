"""The MCP adapter against real servers: mcp-server-time, the npm "everything" server, our own
toolbox over stdio, an SDK server over streamable HTTP on 127.0.0.1, and hostile ones that
crash mid-call, hang, never start or are not there at all."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Harness, make_harness
from tests.waiting import until
from tui.config import McpServerSettings
from tui.events import Event, Notice, ToolCallStarted
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.settings import SecuritySettings
from tui.tools.adapters.mcp.tools import (
    McpManager,
    McpServerState,
    McpTool,
    convert_result,
    describe_states,
    load_project_servers,
    mcp_tool_name,
)
from tui.tools.registry import ToolRegistry

SERVERS = Path(__file__).parent / "mcp_servers"
TOOLBOX = str(SERVERS / "toolbox.py")
NPM_CACHE = Path.home() / ".cache" / "agent-tui-tests" / "npm"
EVERYTHING = "@modelcontextprotocol/server-everything"


# ---------------------------------------------------------------------------- helpers


@pytest.fixture
def base_env() -> dict[str, str]:
    """What the app passes as the safe base environment."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(Path.home())}


def toolbox(mode: str = "serve", marker_dir: Path | None = None, **kw: Any) -> McpServerSettings:
    args = [TOOLBOX, mode] + ([str(marker_dir)] if marker_dir else [])
    return McpServerSettings(command=sys.executable, args=args, **kw)


@asynccontextmanager
async def running(
    servers: Mapping[str, McpServerSettings],
    tmp_path: Path,
    env: Mapping[str, str],
    **kw: Any,
) -> AsyncIterator[tuple[McpManager, list[Event]]]:
    events: list[Event] = []
    manager = McpManager(
        servers, env=env, cwd=tmp_path, log_dir=tmp_path / "logs", on_event=events.append, **kw
    )
    try:
        await manager.start()
        yield manager, events
    finally:
        await manager.aclose()


def harness_for(workspace: Path, manager: McpManager, **kw: Any) -> Harness:
    harness = make_harness(workspace, **kw)
    harness.registry = ToolRegistry(manager.tools())
    return harness


def state_of(manager: McpManager, name: str) -> McpServerState:
    return next(s for s in manager.states() if s.name == name)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# ---------------------------------------------------------------------------- mcp-server-time


async def test_time_server_through_the_registry(
    workspace: Path, tmp_path: Path, base_env: dict[str, str]
) -> None:
    servers = {"time": McpServerSettings(command=sys.executable, args=["-m", "mcp_server_time"])}
    async with running(servers, tmp_path, base_env) as (manager, events):
        assert state_of(manager, "time").state == "connected"
        assert state_of(manager, "time").tool_count == 2
        tools = {tool.name: tool for tool in manager.tools()}
        assert set(tools) == {"time__get_current_time", "time__convert_time"}
        current = tools["time__get_current_time"]
        assert isinstance(current, McpTool)
        assert current.permission == PermissionMode.READ_ONLY  # readOnlyHint
        assert "MCP server `time`" in current.description
        assert current.parameters_schema()["required"] == ["timezone"]

        harness = harness_for(workspace, manager)
        result = await harness.call("time__get_current_time", {"timezone": "UTC"})
        assert not result.is_error, result.text
        assert '"timezone": "UTC"' in result.text
        assert str(time.gmtime().tm_year) in result.text
        assert result.details["mcp_server"] == "time"

        bad = await harness.call("time__get_current_time", {"timezone": 5})
        assert bad.is_error
        assert "InvalidArguments" in bad.text
        assert "timezone: 5 is not of type 'string'" in bad.text
        missing = await harness.call("time__get_current_time", {})
        assert "'timezone' is a required property" in missing.text
        # The server reports its own refusals as error results, not exceptions.
        unknown_zone = await harness.call("time__get_current_time", {"timezone": "Mars/Base"})
        assert unknown_zone.is_error and "Mars/Base" in unknown_zone.text
        assert not [e for e in events if isinstance(e, Notice)]


# ---------------------------------------------------------------------------- toolbox (stdio)


async def test_toolbox_names_permissions_and_results(
    workspace: Path, tmp_path: Path, base_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TUI_TEST_SECRET", "must-not-leak")
    servers = {"tb": toolbox(env={"TOOLBOX_MODE": "from-settings"})}
    async with running(servers, tmp_path, base_env) as (manager, _):
        tools = {tool.name: tool for tool in manager.tools()}
        assert "tb__odd_name_with_spaces" in tools
        assert tools["tb__echo"].permission == PermissionMode.READ_ONLY
        assert tools["tb__wipe"].permission == PermissionMode.DANGER_FULL_ACCESS
        assert tools["tb__note"].permission == PermissionMode.WORKSPACE_WRITE
        note_tool = tools["tb__note"]
        access = note_tool.access(note_tool.parse_params({"text": "x"}))
        assert access.subject == "tb__note" and access.is_acting
        echo_tool = tools["tb__echo"]
        assert not echo_tool.access(echo_tool.parse_params({"text": "x"})).is_acting

        harness = harness_for(workspace, manager)
        echo = await harness.call("tb__echo", {"text": "hi", "times": 3})
        assert echo.text == "hi hi hi"

        picture = await harness.call("tb__picture")
        assert not picture.is_error
        assert [image.mime_type for image in picture.images] == ["image/png"]
        assert "a red pixel" in picture.text
        assert "[resource file:///notes/readme.txt]\nresource body" in picture.text

        structured = await harness.call("tb__structured_only")
        assert json.loads(structured.text) == {"answer": 42, "unit": "widgets"}

        failing = await harness.call("tb__failing")
        assert failing.is_error
        assert "reported an error: disk is full" in failing.text

        own = await harness.call("tb__env_value", {"name": "TOOLBOX_MODE"})
        assert own.text == "from-settings"
        assert (await harness.call("tb__env_value", {"name": "HOME"})).text == str(Path.home())
        leaked = await harness.call("tb__env_value", {"name": "AGENT_TUI_TEST_SECRET"})
        assert leaked.text == "<unset>"

        wrong_type = await harness.call("tb__echo", {"text": "hi", "times": "3"})
        assert wrong_type.is_error and "times: '3' is not of type 'integer'" in wrong_type.text


async def test_permissions_go_through_the_real_policy(
    workspace: Path, tmp_path: Path, base_env: dict[str, str]
) -> None:
    async with running({"tb": toolbox()}, tmp_path, base_env) as (manager, _):
        read_only = harness_for(workspace, manager, mode=ApprovalMode.READ_ONLY)
        assert (await read_only.call("tb__echo", {"text": "ok"})).text == "ok"
        refused = await read_only.call("tb__note", {"text": "x"})
        assert refused.is_error and "PermissionDenied" in refused.text
        assert "workspace-write" in refused.text

        denied = harness_for(workspace, manager, settings=SecuritySettings(deny=["tb__wipe"]))
        wiped = await denied.call("tb__wipe", {"target": "/"})
        assert wiped.is_error and "denied by the rule" in wiped.text


# ---------------------------------------------------------------------------- hostile servers


async def test_crash_mid_call_fails_fast_and_restart_recovers(
    workspace: Path,
    tmp_path: Path,
    base_env: dict[str, str],
    capfd: pytest.CaptureFixture[str],
) -> None:
    servers = {"tb": toolbox(marker_dir=tmp_path, call_timeout=60)}
    async with running(servers, tmp_path, base_env) as (manager, events):
        harness = harness_for(workspace, manager)
        server_pid = state_of(manager, "tb").pid
        assert server_pid is not None and alive(server_pid)

        started = time.monotonic()
        result = await harness.call("tb__crash", {"code": 3})
        elapsed = time.monotonic() - started
        assert elapsed < 5, f"the crash took {elapsed:.1f} s to be noticed"
        assert result.is_error and "ExecutionFailed" in result.text
        assert "MCP server `tb` exited (code 3) during the call" in result.text
        assert "its last stderr lines:" in result.text
        assert "toolbox: segmentation fault (pretend)" in result.text
        assert "/mcp restart tb" in result.text

        state = state_of(manager, "tb")
        assert state.state == "crashed" and state.pid is None
        assert "exited (code 3)" in (state.error or "")
        notices = [e for e in events if isinstance(e, Notice)]
        assert notices and "MCP server `tb` crashed" in notices[-1].message

        # Nothing survives: not the server, not the child it left in its group.
        child_pid = int((tmp_path / "child.pid").read_text())
        assert await until(lambda: not alive(server_pid) and not alive(child_pid))

        again = await harness.call("tb__echo", {"text": "still there?"})
        assert again.is_error and "has crashed" in again.text and "/mcp restart tb" in again.text

        await manager.restart("tb")
        assert state_of(manager, "tb").state == "connected"
        # The registry built before the crash keeps working: tools find the new connection.
        assert (await harness.call("tb__echo", {"text": "back"})).text == "back"

    # The server's stderr went to its log, never to our terminal.
    captured = capfd.readouterr()
    assert "segmentation fault" not in captured.err + captured.out
    assert "segmentation fault (pretend)" in (tmp_path / "logs" / "tb.log").read_text()


async def test_a_server_killed_while_idle_is_reported_crashed(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    async with running({"tb": toolbox()}, tmp_path, base_env) as (manager, events):
        pid = state_of(manager, "tb").pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert await until(lambda: state_of(manager, "tb").state == "crashed")
        assert "exited (killed by SIGKILL)" in (state_of(manager, "tb").error or "")
        assert manager.tools() == []
        notices = [e.message for e in events if isinstance(e, Notice)]
        assert notices == [notices[0]] and "MCP server `tb` crashed" in notices[0]


async def test_hanging_call_times_out_and_tells_the_server(
    workspace: Path, tmp_path: Path, base_env: dict[str, str]
) -> None:
    servers = {"tb": toolbox(marker_dir=tmp_path, call_timeout=1)}
    async with running(servers, tmp_path, base_env) as (manager, _):
        harness = harness_for(workspace, manager)
        started = time.monotonic()
        result = await harness.call("tb__hang")
        assert time.monotonic() - started < 4
        assert result.is_error
        assert "did not answer within 1 s (call_timeout)" in result.text
        # notifications/cancelled reached the server and stopped its handler.
        assert await until((tmp_path / "cancelled").exists)
        assert state_of(manager, "tb").state == "connected"
        assert (await harness.call("tb__echo", {"text": "alive"})).text == "alive"


async def test_cancel_stops_a_hanging_call_promptly(
    workspace: Path, tmp_path: Path, base_env: dict[str, str]
) -> None:
    servers = {"tb": toolbox(marker_dir=tmp_path, call_timeout=60)}
    async with running(servers, tmp_path, base_env) as (manager, _):
        harness = harness_for(workspace, manager)
        assert harness.registry.get("tb__hang").honours_cancel  # type: ignore[union-attr]
        ctx = harness.context("tb__hang")
        call = asyncio.create_task(harness.call("tb__hang", {}, ctx))
        assert await until(lambda: any(isinstance(e, ToolCallStarted) for e in harness.events))
        started = time.monotonic()
        ctx.cancel.set()
        result = await asyncio.wait_for(call, 5)
        assert time.monotonic() - started < 3
        assert result.is_error and "Cancelled" in result.text
        assert await until((tmp_path / "cancelled").exists)
        assert state_of(manager, "tb").state == "connected"


async def test_start_failures_become_states_never_exceptions(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    servers = {
        "missing": McpServerSettings(command="agent-tui-no-such-server"),
        "quitter": toolbox("exit-at-start"),
        "silent": toolbox("silent", startup_timeout=2),
        "nowhere": McpServerSettings(url="http://127.0.0.1:9/mcp"),
        "good": toolbox(),
        "off": toolbox(enabled=False),
    }
    started = time.monotonic()
    async with running(servers, tmp_path, base_env) as (manager, events):
        assert time.monotonic() - started < 10
        states = {s.name: s for s in manager.states()}
        assert {name: s.state for name, s in states.items()} == {
            "missing": "failed",
            "quitter": "failed",
            "silent": "failed",
            "nowhere": "failed",
            "good": "connected",
            "off": "disabled",
        }
        assert "command `agent-tui-no-such-server` was not found" in (states["missing"].error or "")
        quitter = states["quitter"].error or ""
        assert "exited (code 2) during start-up" in quitter
        assert "TOOLBOX_TOKEN is not set" in quitter
        silent = states["silent"].error or ""
        assert "did not answer the initialize request within 2 s (startup_timeout)" in silent
        assert "never answers" in silent
        assert "could not connect to http://127.0.0.1:9/mcp" in (states["nowhere"].error or "")
        assert {t.name.split("__")[0] for t in manager.tools()} == {"good"}
        failed_notices = [e.message for e in events if isinstance(e, Notice)]
        assert len(failed_notices) == 4
        assert all("failed to start" in message for message in failed_notices)

        text = describe_states(manager.states())
        assert "✗ missing (stdio, settings): failed" in text
        assert "restart it with /mcp restart silent" in text
        assert "○ off (stdio, settings): disabled" in text

        with pytest.raises(ValueError, match="no MCP server named `ghost`"):
            await manager.restart("ghost")


async def test_untrusted_servers_are_listed_and_never_started(
    tmp_path: Path, base_env: dict[str, str]
) -> None:
    witness = tmp_path / "ran"
    untrusted = {
        "project": McpServerSettings(command="touch", args=[str(witness)]),
    }
    async with running({}, tmp_path, base_env, untrusted=untrusted) as (manager, events):
        [state] = manager.states()
        assert (state.name, state.state, state.source) == ("project", "untrusted", ".mcp.json")
        assert manager.tools() == []
        with pytest.raises(ValueError, match="not trusted"):
            await manager.restart("project")
        assert "/mcp trust" in describe_states(manager.states())
    assert not witness.exists()
    assert events == []


async def test_aclose_leaves_no_process_behind(tmp_path: Path, base_env: dict[str, str]) -> None:
    servers = {"a": toolbox(), "b": toolbox()}
    async with running(servers, tmp_path, base_env) as (manager, _):
        pids = [s.pid for s in manager.states()]
        assert all(pid is not None and alive(pid) for pid in pids)
    assert [s.state for s in manager.states()] == ["stopped", "stopped"]
    assert await until(lambda: not any(alive(pid) for pid in pids if pid))


# ---------------------------------------------------------------------------- tools/list_changed


class ToolsChanged:
    """The manager's ``on_tools_changed`` sink: records server names, wakes waiters."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._event = asyncio.Event()

    def __call__(self, server: str) -> None:
        self.names.append(server)
        self._event.set()

    async def until(self, check: Callable[[], bool], timeout: float = 5.0) -> None:
        """Wait, one notification at a time, until ``check`` holds."""
        async with asyncio.timeout(timeout):
            while not check():
                self._event.clear()
                await self._event.wait()


def tool_names(manager: McpManager) -> set[str]:
    return {tool.name for tool in manager.tools()}


async def test_list_changed_adds_and_removes_tools(
    workspace: Path, tmp_path: Path, base_env: dict[str, str]
) -> None:
    changed = ToolsChanged()
    async with running({"tb": toolbox()}, tmp_path, base_env, on_tools_changed=changed) as (
        manager,
        events,
    ):
        before = state_of(manager, "tb").tool_count
        harness = harness_for(workspace, manager)
        added = await harness.call("tb__add_tool", {"name": "greeter"})
        assert added.text == "added greeter"
        await changed.until(lambda: bool(changed.names))
        assert changed.names == ["tb"]
        # By the time the owner hears of it, the manager already reports the new list.
        assert "tb__greeter" in tool_names(manager)
        assert state_of(manager, "tb").tool_count == before + 1
        refreshed = harness_for(workspace, manager)
        assert (await refreshed.call("tb__greeter", {"text": "you"})).text == "greeter greets you"

        await harness.call("tb__remove_tool", {"name": "greeter"})
        await changed.until(lambda: len(changed.names) == 2)
        assert "tb__greeter" not in tool_names(manager)
        assert state_of(manager, "tb").tool_count == before
        gone = await refreshed.call("tb__greeter", {"text": "you"})
        assert gone.is_error and "greeter" in gone.text

        # Four more notices arrive while the first re-list is held open by the server:
        # they are answered by one more re-list, not four.
        burst = [f"burst{i}" for i in range(5)]
        result = await harness.call("tb__add_tools", {"names": burst, "hold": True})
        assert result.text == "added 5", result.text
        wanted = {f"tb__{name}" for name in burst}
        await changed.until(lambda: wanted <= tool_names(manager) and len(changed.names) >= 4)
        # Five notices, two re-lists. (A client re-listing once per notice would have sent all
        # five requests before the burst's answer, so the server would count them by now.)
        assert (await harness.call("tb__listing_count")).text == "2 listings"
        assert changed.names == ["tb"] * 4
        assert state_of(manager, "tb").state == "connected"
        assert not [e for e in events if isinstance(e, Notice)]


async def test_failed_relist_keeps_the_old_list(
    workspace: Path, tmp_path: Path, base_env: dict[str, str]
) -> None:
    changed = ToolsChanged()
    log = tmp_path / "logs" / "tb.log"
    async with running({"tb": toolbox()}, tmp_path, base_env, on_tools_changed=changed) as (
        manager,
        events,
    ):
        names = tool_names(manager)
        harness = harness_for(workspace, manager)
        await harness.call("tb__break_listing", {"times": 1})
        assert await until(lambda: "after a tools/list_changed notice failed" in log.read_text())
        text = log.read_text()
        assert "the tool catalogue is being rebuilt" in text
        assert "keeping the" in text
        assert tool_names(manager) == names
        assert state_of(manager, "tb").state == "connected"
        assert changed.names == []
        assert (await harness.call("tb__echo", {"text": "still here"})).text == "still here"

        await harness.call("tb__add_tool", {"name": "later"})
        await changed.until(lambda: "tb__later" in tool_names(manager))
        assert changed.names == ["tb"]
        assert not [e for e in events if isinstance(e, Notice)]


async def test_stopping_cancels_a_relist_in_flight(
    workspace: Path, tmp_path: Path, base_env: dict[str, str]
) -> None:
    changed = ToolsChanged()
    async with running({"tb": toolbox()}, tmp_path, base_env, on_tools_changed=changed) as (
        manager,
        events,
    ):
        harness = harness_for(workspace, manager)
        # Returns once our re-list has reached the server, which then never answers it.
        stalled = await harness.call("tb__stall_listing")
        assert stalled.text == "the re-list is waiting", stalled.text
        relists = [t for t in asyncio.all_tasks() if t.get_name() == "mcp-tools-relist:tb"]
        assert len(relists) == 1 and not relists[0].done()
        started = time.monotonic()
        await manager.aclose()
        assert time.monotonic() - started < 5
        # Cancelled before the session closed, rather than failed by the closing connection.
        assert relists[0].cancelled()
        assert state_of(manager, "tb").state == "stopped"
        assert changed.names == []
        assert not [e for e in events if isinstance(e, Notice)]
        assert "notice failed" not in (tmp_path / "logs" / "tb.log").read_text()


# ---------------------------------------------------------------------------- streamable HTTP


@pytest.fixture
def http_url() -> Iterator[str]:
    from tests.mcp_servers.http_app import serve_http  # the server's libraries: only when used

    with serve_http() as url:
        yield url


async def test_streamable_http_server(
    workspace: Path, tmp_path: Path, base_env: dict[str, str], http_url: str
) -> None:
    servers = {
        "remote": McpServerSettings(url=http_url, headers={"Authorization": "Bearer test-token"})
    }
    changed = ToolsChanged()
    async with running(servers, tmp_path, base_env, on_tools_changed=changed) as (manager, _):
        state = state_of(manager, "remote")
        assert (state.state, state.transport, state.tool_count) == ("connected", "http", 2)
        harness = harness_for(workspace, manager)
        result = await harness.call("remote__add", {"a": 2, "b": 3})
        assert not result.is_error, result.text
        assert result.text.strip() == "5"
        bad = await harness.call("remote__add", {"a": "two", "b": 3})
        assert bad.is_error and "a: 'two' is not of type 'integer'" in bad.text

        # tools/list_changed reaches us over HTTP as well.
        await harness.call("remote__add_multiplier")
        await changed.until(lambda: "remote__multiply" in tool_names(manager))
        assert changed.names == ["remote"]
        product = await harness_for(workspace, manager).call("remote__multiply", {"a": 6, "b": 7})
        assert product.text.strip() == "42"


# ---------------------------------------------------------------------------- npm server-everything


@pytest.fixture(scope="session")
def everything_server() -> list[str]:
    """The npm reference server, installed once into a cache shared by test runs."""
    entry = NPM_CACHE / "node_modules" / EVERYTHING / "dist" / "index.js"
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm are not on PATH; the npm MCP reference server cannot run")
    if not entry.is_file():
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                [
                    "npm",
                    "install",
                    "--prefix",
                    str(NPM_CACHE),
                    "--no-audit",
                    "--no-fund",
                    EVERYTHING,
                ],
                check=True,
                capture_output=True,
                timeout=180,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            output = getattr(exc, "stderr", b"") or b""
            pytest.skip(f"npm install {EVERYTHING} failed: {exc} {output.decode()[-300:]}")
        if not entry.is_file():
            pytest.skip(f"npm installed {EVERYTHING} but {entry} is missing")
    return [shutil.which("node") or "node", str(entry), "stdio"]


async def test_npm_everything_server(
    workspace: Path, tmp_path: Path, base_env: dict[str, str], everything_server: list[str]
) -> None:
    command, *args = everything_server
    servers = {"everything": McpServerSettings(command=command, args=args)}
    async with running(servers, tmp_path, base_env) as (manager, _):
        assert state_of(manager, "everything").state == "connected", manager.states()
        harness = harness_for(workspace, manager)
        echo = await harness.call("everything__echo", {"message": "hello"})
        assert echo.text == "Echo: hello"
        added = await harness.call("everything__get-sum", {"a": 2, "b": 3})
        assert "5" in added.text
        image = await harness.call("everything__get-tiny-image", {})
        assert not image.is_error
        assert [part.mime_type for part in image.images] == ["image/png"]
        assert len(image.images[0].data) > 100
        wrong = await harness.call("everything__get-sum", {"a": 2})
        assert wrong.is_error and "'b' is a required property" in wrong.text


# ---------------------------------------------------------------------------- .mcp.json


def write_project(workspace: Path, content: str | dict[str, Any]) -> None:
    text = content if isinstance(content, str) else json.dumps(content)
    (workspace / ".mcp.json").write_text(text)


def test_project_file_both_transports(workspace: Path) -> None:
    write_project(
        workspace,
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}},
                "remote": {"type": "http", "url": "https://x.test/mcp", "headers": {"A": "b"}},
                "legacy": {"type": "streamable-http", "url": "https://y.test/mcp"},
            }
        },
    )
    servers, problems = load_project_servers(workspace)
    assert problems == []
    assert servers["files"].transport == "stdio"
    assert servers["files"].args == ["-y", "srv"] and servers["files"].env == {"K": "v"}
    assert servers["remote"].transport == "http" and servers["remote"].headers == {"A": "b"}
    assert servers["legacy"].url == "https://y.test/mcp"


def test_project_file_problems_are_lines_not_exceptions(workspace: Path) -> None:
    assert load_project_servers(workspace) == ({}, [])

    write_project(workspace, '{"mcpServers": {"a": {"command": "x",}}}')
    servers, problems = load_project_servers(workspace)
    assert servers == {}
    assert len(problems) == 1 and ".mcp.json: not valid JSON (line 1" in problems[0]

    write_project(workspace, "[1, 2]")
    assert "top level must be an object" in load_project_servers(workspace)[1][0]

    write_project(
        workspace,
        {
            "mcpServers": {
                "good": {"command": "srv"},
                "neither": {"args": ["x"]},
                "both": {"command": "x", "url": "https://x.test"},
                "sse": {"type": "sse", "url": "https://x.test/sse"},
                "weird": {"type": "carrier-pigeon"},
                "typed": {"command": "x", "args": "not-a-list"},
                "scalar": 7,
            }
        },
    )
    servers, problems = load_project_servers(workspace)
    assert list(servers) == ["good"]
    by_server = {p.split("server `")[1].split("`")[0]: p for p in problems}
    assert set(by_server) == {"neither", "both", "sse", "weird", "typed", "scalar"}
    assert all(p.startswith(str(workspace / ".mcp.json")) for p in problems)
    assert "exactly one of `command`" in by_server["neither"]
    assert "exactly one of `command`" in by_server["both"]
    assert "not supported" in by_server["sse"]
    assert "carrier-pigeon" in by_server["weird"]
    assert "args" in by_server["typed"]
    assert "must be an object with `command` or `url`, not a number" in by_server["scalar"]


# ---------------------------------------------------------------------------- names and text


def test_tool_names_are_clean_short_and_unique() -> None:
    assert mcp_tool_name("my server", "read.file") == "my_server__read_file"
    long = mcp_tool_name("s" * 40, "t" * 40)
    assert len(long) == 64
    assert long != mcp_tool_name("s" * 40, "t" * 39 + "u")
    taken = {"a__b__c"}
    second = mcp_tool_name("a", "b__c", taken)
    assert second == "a__b__c_2"
    taken.add(second)
    assert mcp_tool_name("a__b", "c", taken) == "a__b__c_3"
    crowded = {long}
    assert len(mcp_tool_name("s" * 40, "t" * 40, crowded)) == 64


def test_describe_states_without_servers() -> None:
    assert "No MCP servers configured" in describe_states([])
    text = describe_states(
        [McpServerState("time", "stdio", "connected", 1, None, "settings", pid=42)]
    )
    assert text.splitlines()[1] == "● time (stdio, settings, pid 42): connected, 1 tool"


def test_text_beside_images_is_bounded() -> None:
    import mcp_types

    image = mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png")
    long_text = mcp_types.TextContent(type="text", text="x" * 20000)
    result = convert_result(
        mcp_types.CallToolResult(content=[long_text, image, long_text]), server="s", tool="t"
    )
    assert len(result.images) == 1
    assert result.details["truncated_chars"] == 40000 - 16000
    assert result.text.endswith("[24000 characters of text cut]")


def test_project_file_fills_environment_variables(workspace: Path) -> None:
    write_project(
        workspace,
        {
            "mcpServers": {
                "api": {
                    "type": "http",
                    "url": "${API_BASE:-https://default.test}/mcp",
                    "headers": {"Authorization": "Bearer ${API_TOKEN}"},
                },
                "tool": {"command": "${HOME}/bin/srv", "args": ["--dir", "${DATA_DIR}"]},
            }
        },
    )
    env = {"API_TOKEN": "t0k3n", "HOME": "/home/me"}
    servers, problems = load_project_servers(workspace, env)
    assert servers["api"].url == "https://default.test/mcp"
    assert servers["api"].headers == {"Authorization": "Bearer t0k3n"}
    assert "tool" not in servers
    assert len(problems) == 1 and "`tool`" in problems[0] and "DATA_DIR" in problems[0]

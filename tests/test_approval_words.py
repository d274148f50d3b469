"""What a person is told when a call asks: why it asks, and how long it really took.

Through the real dispatch path (registry → policy → approver) and, for the modal and the
block, the real app in a Pilot against the scripted model server.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from tests.conftest import make_harness
from tests.scripted_server import ScriptedServer
from tests.test_ui_app import app_for, approval_ready, send, shell_step, turn_done, until
from tui.config import load_settings
from tui.events import ApprovalAnswer, ApprovalRequested, ToolCallCompleted
from tui.security.permissions import ApprovalMode
from tui.security.settings import SecuritySettings
from tui.session import AgentSession
from tui.ui.approval.modal import ApprovalScreen
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(60)


class Recorder:
    """Allows every call after ``delay`` seconds and keeps each request."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.requests: list[ApprovalRequested] = []

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)  # the scripted person takes this long to answer
        return ApprovalAnswer.allow_once()


async def reason_for(
    workspace: Path,
    tool: str,
    arguments: dict[str, Any],
    mode: ApprovalMode,
    settings: SecuritySettings | None = None,
) -> str:
    approver = Recorder()
    h = make_harness(workspace, mode=mode, settings=settings, approver=approver)
    result = await h.call(tool, arguments)
    assert not result.is_error, result.text
    assert len(approver.requests) == 1
    return approver.requests[0].reason


# -- the reason, from the policy ---------------------------------------------------------------


async def test_ask_mode_names_the_mode_and_the_computed_risk(workspace: Path) -> None:
    reason = await reason_for(workspace, "run_shell", {"command": "touch a"}, ApprovalMode.ASK)
    assert reason.startswith("ask mode: commands that act need approval")
    assert "computed risk: medium" in reason


async def test_an_ask_rule_is_named_as_written(workspace: Path) -> None:
    settings = SecuritySettings(ask=["run_shell(echo:*)"])
    reason = await reason_for(
        workspace, "run_shell", {"command": "echo hi"}, ApprovalMode.FULL_AUTO, settings
    )
    assert reason == "the rule run_shell(echo:*) in [security].ask"


async def test_auto_edit_names_the_control_file_a_write_would_change(workspace: Path) -> None:
    (workspace / ".git" / "hooks").mkdir(parents=True)
    arguments = {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}
    reason = await reason_for(workspace, "write_file", arguments, ApprovalMode.AUTO_EDIT)
    assert reason.startswith("auto-edit: writes that change what runs later ask")
    assert ".git/hooks" in reason


async def test_full_auto_says_secret_reads_always_ask(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("not really a key\n")
    monkeypatch.setenv("HOME", str(home))
    arguments = {"path": "~/.ssh/id_rsa"}
    reason = await reason_for(workspace, "read_file", arguments, ApprovalMode.FULL_AUTO)
    assert reason.startswith("full-auto: secret reads always ask")
    assert "ssh" in reason


# -- the reason, in the modal ------------------------------------------------------------------


def session_with(
    workspace: Path, server: ScriptedServer, mode: str, **security: Any
) -> AgentSession:
    provider = {"name": "openai", "model": "scripted"}
    provider.update(base_url=server.openai_base_url, api_key="test-key")
    overrides: dict[str, Any] = {"provider": provider, "approval": {"mode": mode}}
    if security:
        overrides["security"] = security
    return build_session(workspace, load_settings(workspace, overrides=overrides, env={}))


def header_text(screen: ApprovalScreen) -> str:
    return str(screen.query_one("#approval-header", Static).content)


@pytest.mark.parametrize(
    ("mode", "security", "command", "expected"),
    [
        ("ask", {}, "touch made", "ask mode: commands that act need approval"),
        (
            "full-auto",
            {"ask": ["run_shell(echo:*)"]},
            "echo hi",
            "the rule run_shell(echo:*) in [security].ask",
        ),
    ],
)
async def test_the_modal_says_why_it_asks(
    workspace: Path, mode: str, security: dict[str, Any], command: str, expected: str
) -> None:
    with ScriptedServer() as server:
        server.add(shell_step(command), {"text": "Done."})
        app = app_for(session_with(workspace, server, mode, **security))
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "go")
            await approval_ready(pilot, app)
            screen = app.screen
            assert isinstance(screen, ApprovalScreen)
            assert expected in screen.request.reason
            assert f"asks because {expected}" in header_text(screen)
            await pilot.press("y")
            await turn_done(pilot, app, 2, server)


# -- the duration leaves the wait out ----------------------------------------------------------


async def test_duration_leaves_out_the_approval_wait(workspace: Path) -> None:
    approver = Recorder(delay=1.5)
    h = make_harness(workspace, mode=ApprovalMode.ASK, approver=approver)
    result = await h.call("run_shell", {"command": "touch made"})
    assert not result.is_error, result.text
    done = [e for e in h.events if isinstance(e, ToolCallCompleted)]
    assert len(done) == 1
    assert done[0].approval_wait_ms >= 1500
    assert done[0].duration_ms < 1000, done[0].duration_ms


async def test_the_block_shows_the_wait_apart(workspace: Path) -> None:
    with ScriptedServer() as server:
        server.add(shell_step("touch made"), {"text": "Done."})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "go")
            await approval_ready(pilot, app)
            answer_after = asyncio.get_running_loop().time() + 1.2
            await until(
                pilot, lambda: asyncio.get_running_loop().time() >= answer_after, "a slow person"
            )
            await pilot.press("y")
            await turn_done(pilot, app, 2, server)
            state = app.tools.state("call_1")
            assert state is not None and state.status == "ok"
            assert state.approval_wait_ms >= 1200
            assert state.duration_ms is not None and state.duration_ms < 1000
            block = app.tools.blocks["call_1"]
            assert re.search(r" · waited \d+\.\d s for approval$", str(block.border_subtitle))


async def test_a_command_reading_a_secret_says_so_in_full_auto(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("not really a key\n")
    monkeypatch.setenv("HOME", str(home))
    arguments = {"command": "cat ~/.ssh/id_rsa"}
    reason = await reason_for(workspace, "run_shell", arguments, ApprovalMode.FULL_AUTO)
    assert reason.startswith("full-auto: secret reads always ask (~/.ssh")


async def test_a_fit_queued_while_the_header_is_rebuilt_does_not_stop_the_app(
    workspace: Path,
) -> None:
    """The body's fit runs after a refresh: by then the header may be gone (being swapped
    for the next request's, or the modal answered). It waits for the next fit."""
    with ScriptedServer() as server:
        server.add(shell_step("touch made"), {"text": "Done."})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "go")
            await approval_ready(pilot, app)
            screen = app.screen
            assert isinstance(screen, ApprovalScreen)
            await screen.query_one("#approval-header").remove()
            screen.fit_body()
            await pilot.pause()
            assert app.is_running and app.return_code is None

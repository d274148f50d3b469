"""The app says where each command runs, and going outside is only ever a person's answer.

Pilot against the real loop, the scripted model server and a real bubblewrap sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox_support import SKIP_REASON, bwrap_works
from tests.scripted_server import ScriptedServer
from tests.test_ui_app import app_for, approval_ready, send, shell_step, turn_done
from tui.config import load_settings
from tui.exec.local import LocalBackend
from tui.exec.sandbox import sandbox as sandbox_module
from tui.exec.sandbox.sandbox import Sandbox
from tui.security.secrets import SECRET_PATHS
from tui.session import AgentSession
from tui.wiring import build_session

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON),
]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


async def sandboxed_session(
    workspace: Path, server: ScriptedServer, mode: str
) -> tuple[AgentSession, Sandbox]:
    sandbox = Sandbox(workspace, patterns=SECRET_PATHS)
    assert await sandbox.start() is None
    provider: dict[str, Any] = {
        "name": "openai",
        "model": "scripted",
        "base_url": server.openai_base_url,
        "api_key": "test-key",
    }
    loaded = load_settings(
        workspace, overrides={"provider": provider, "approval": {"mode": mode}}, env={}
    )
    backend = LocalBackend(default_cwd=str(workspace), sandbox=sandbox)
    session = build_session(workspace, loaded, backend=backend, sandbox=sandbox)
    return session, sandbox


async def test_blocks_and_status_bar_name_the_walls(
    workspace: Path, server: ScriptedServer
) -> None:
    # A program that may use the network (``tui.security.offline``): full-auto's column.
    write = "python3 -c \"open('inside.txt', 'w')\" && echo made"
    server.add(shell_step(write), {"text": "Done."})
    session, sandbox = await sandboxed_session(workspace, server, "full-auto")
    app = app_for(session)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            assert "sandboxed" in app.status.plain and "NO SANDBOX" not in app.status.plain
            await send(pilot, app, "make a file")
            await turn_done(pilot, app, 2, server)
            state = app.tools.state("call_1")
            assert state is not None and state.status == "ok"
            assert state.sandbox == "sandbox: workspace, network through the host policy"
            assert (workspace / "inside.txt").exists()
    finally:
        await sandbox.close()


async def test_an_auto_approve_window_never_answers_going_outside(
    workspace: Path, server: ScriptedServer
) -> None:
    outside = workspace.parent / "outside-proof"
    server.add(
        shell_step(f"touch {outside}", outside_sandbox=True, why="needs the parent folder"),
        {"text": "Done."},
    )
    session, sandbox = await sandboxed_session(workspace, server, "ask")
    app = app_for(session)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await send(pilot, app, "/approve 10m")
            assert app.approvals.auto_approve.active
            await send(pilot, app, "touch outside")
            screen = await approval_ready(pilot, app)
            assert screen.request.outside
            shown = " ".join(str(w.render()) for w in screen.query("Static"))
            assert "runs OUTSIDE the sandbox" in shown
            assert not outside.exists()
            await pilot.press("y")
            await turn_done(pilot, app, 2, server)
            assert outside.exists()
            state = app.tools.state("call_1")
            assert state is not None and state.sandbox == "OUTSIDE the sandbox"
    finally:
        outside.unlink(missing_ok=True)
        await sandbox.close()


async def test_without_bwrap_the_status_bar_and_blocks_say_no_sandbox(
    workspace: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap missing (``find_bwrap`` made to find nothing): said, not silently fallen back."""
    monkeypatch.setattr(sandbox_module, "find_bwrap", lambda *a, **k: None)
    server.add(shell_step("ls"), {"text": "Done."})
    sandbox = Sandbox(workspace, patterns=SECRET_PATHS)
    said = await sandbox.start()
    assert said is not None and said.startswith("no sandbox")
    provider: dict[str, Any] = {
        "name": "openai",
        "model": "scripted",
        "base_url": server.openai_base_url,
        "api_key": "test-key",
    }
    loaded = load_settings(workspace, overrides={"provider": provider}, env={})
    backend = LocalBackend(default_cwd=str(workspace), sandbox=sandbox)
    session = build_session(workspace, loaded, backend=backend, sandbox=sandbox)
    app = app_for(session)
    async with app.run_test(size=(160, 40)) as pilot:
        assert "NO SANDBOX" in app.status.plain
        await send(pilot, app, "list")
        await turn_done(pilot, app, 2, server)
        state = app.tools.state("call_1")
        assert state is not None and state.sandbox is not None
        assert state.sandbox.startswith("no sandbox: the rater decides")

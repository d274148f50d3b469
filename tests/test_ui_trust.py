"""The trust question in the real app, built the way ``agent-tui`` builds it (``make_app``):
the screen comes before the session, "don't trust" is the default, and ``/trust`` asks again
later and starts the session under the workspace's settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_ui_app import inner, send, until
from tui.cli import make_app
from tui.cli_args import build_parser
from tui.config import USER_CONFIG_NAME
from tui.locations import config_dir
from tui.security.permissions import ApprovalMode
from tui.ui.app import AgentApp
from tui.ui.trust.screen import TrustScreen

pytestmark = pytest.mark.timeout(60)

CLONED = """
[approval]
mode = "full-auto"

[[hooks.pre_tool_use]]
command = "touch hook-ran"
"""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def app_in(workspace: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> AgentApp:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    (workspace / ".agent-tui.toml").write_text(CLONED, encoding="utf-8")
    flags = ["--no-tmux", "--provider", "openai", "--model", "scripted"]
    args = build_parser().parse_args([*flags, "--base-url", server.openai_base_url])
    return make_app(workspace, args, cursor_blink=False, history_path=None)


def asking(app: AgentApp) -> bool:
    """The trust screen is up and composed."""
    return isinstance(app.screen, TrustScreen) and bool(app.screen.query("#trust-changes"))


def notices(app: AgentApp) -> str:
    return " ".join(str(w.render()) for w in app.chat.query("NoticeLine"))


async def test_the_trust_screen_comes_first_and_refusing_is_the_default(
    workspace: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_in(workspace, server, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: asking(app), "the trust screen")
        assert app.link.session is None  # nothing is built before the person answers
        shown = str(app.screen.query_one("#trust-changes").render())
        assert "hooks.pre_tool_use" in shown and "approval.mode" in shown
        await pilot.press("enter")  # the focused button: don't trust
        await app.session_ready.wait()
        assert inner(app)._policy.approval_mode is ApprovalMode.ASK
        assert inner(app)._loaded.settings.hooks.pre_tool_use == []
        await until(pilot, lambda: "not applied" in notices(app), "the untrusted notice")
    assert not (config_dir() / USER_CONFIG_NAME).exists()


async def test_trusting_at_start_records_it_and_applies_the_settings(
    workspace: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_in(workspace, server, monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: asking(app), "the trust screen")
        await pilot.press("t")
        await app.session_ready.wait()
        assert inner(app)._policy.approval_mode is ApprovalMode.FULL_AUTO
        assert inner(app)._loaded.trust.recorded
    assert str(workspace) in (config_dir() / USER_CONFIG_NAME).read_text()


async def test_slash_trust_asks_again_and_restarts_the_session_trusted(
    workspace: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_in(workspace, server, monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: asking(app), "the trust screen")
        await pilot.press("n")
        await app.session_ready.wait()
        first = app.session
        await send(pilot, app, "/trust")
        await until(pilot, lambda: asking(app), "the screen again")
        await pilot.press("t")
        await until(pilot, lambda: app.session is not first, "the session under trust")
        assert inner(app)._policy.approval_mode is ApprovalMode.FULL_AUTO
        assert app.session.session_id == first.session_id  # the same conversation goes on
        await send(pilot, app, "/trust")
        await until(pilot, lambda: "is trusted" in notices(app), "the trusted answer")


async def test_what_a_workspace_file_may_never_set_is_said_in_the_chat(
    workspace: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_in(workspace, server, monkeypatch)
    (workspace / ".agent-tui.toml").write_text('[approval]\ngrants = [{rule = "run_shell"}]\n')
    async with app.run_test(size=(120, 40)) as pilot:
        await app.session_ready.wait()  # nothing waits for trust: no screen
        assert inner(app)._loaded.settings.approval.grants == []
        await until(pilot, lambda: "ignored approval.grants" in notices(app), "the warning")

"""Prompt completion in a Pilot: ``/`` commands and their arguments, ``@`` workspace paths
listed on the real backend, and the files a prompt mentions reaching the scripted model."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.scripted_server import ScriptedServer
from tests.test_ui_app import make_session, send, turn_done, until
from tui.ui.app import AgentApp
from tui.ui.prompt.mentions import PER_FILE

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def git_repo(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build.log\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('main')\n")
    (root / "src" / "mapping.txt").write_text("m\n")
    (root / "notes.txt").write_text("the notes\n")
    (root / "build.log").write_text("ignored\n")
    (root / "shadow").symlink_to("/etc/shadow")


def git_config(root: Path, key: str, value: str) -> None:
    subprocess.run(["git", "-C", str(root), "config", key, value], check=True)


def labels(app: AgentApp) -> list[str]:
    return [choice.label for choice in app.prompt.popup.choices]


async def typed(pilot: Pilot[int], app: AgentApp, text: str) -> None:
    app.prompt.focus()
    await pilot.press(*text)


async def test_slash_popup_filters_accepts_with_tab_and_offers_models(
    workspace: Path, server: ScriptedServer
) -> None:
    app = AgentApp(make_session(workspace, server), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.session_ready.is_set(), "the session")
        await typed(pilot, app, "/")
        await until(pilot, lambda: app.prompt.popup.is_open, "the popup on /")
        assert "/help" in labels(app) and "/model" in labels(app)
        assert app.prompt.popup.choices[0].help  # each command with its one-line help
        await typed(pilot, app, "mdl")
        await until(pilot, lambda: labels(app)[:1] == ["/model"], "filtered to /model")
        await pilot.press("tab")
        assert app.prompt.text == "/model "
        await until(pilot, lambda: "scripted" in labels(app), "the models")
        assert labels(app)[0] == "scripted"  # the session's own model first
        await pilot.press("down", "tab")
        assert app.prompt.text == f"/model {labels_after_accept(app)}"
        await typed(pilot, app, " ")
        await pilot.press("escape")
        assert not app.prompt.popup.is_open
        app.prompt.clear()
        await typed(pilot, app, "/mcp ")
        await until(pilot, lambda: "restart" in labels(app), "the /mcp verbs")


def labels_after_accept(app: AgentApp) -> str:
    return app.prompt.text.removeprefix("/model ")


async def test_at_lists_workspace_files_fuzzily_without_ignored_or_secret_ones(
    workspace: Path, server: ScriptedServer
) -> None:
    git_repo(workspace)
    app = AgentApp(make_session(workspace, server), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.session_ready.is_set(), "the session")
        await typed(pilot, app, "look at @")
        await until(pilot, lambda: "notes.txt" in labels(app), "the files")
        assert "src/main.py" in labels(app) and ".gitignore" in labels(app)
        assert "build.log" not in labels(app)  # .gitignore respected
        assert "shadow" not in labels(app)  # a link into /etc/shadow is never offered
        await typed(pilot, app, "smpy")
        await until(pilot, lambda: labels(app) == ["src/main.py"], "the fuzzy match")
        await pilot.press("enter")  # accepts, does not send
        assert app.prompt.text == "look at @src/main.py "
        assert not server.requests


async def test_listing_does_not_run_the_repository_fsmonitor(
    workspace: Path, server: ScriptedServer
) -> None:
    git_repo(workspace)
    marker = workspace.parent / "fsmonitor-ran"
    hook = workspace.parent / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git_config(workspace, "core.fsmonitor", str(hook))
    app = AgentApp(make_session(workspace, server), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.session_ready.is_set(), "the session")
        await typed(pilot, app, "@")
        await until(pilot, lambda: "notes.txt" in labels(app), "the files")
    assert not marker.exists()


async def test_mentioned_files_reach_the_model_bounded_and_secrets_do_not(
    workspace: Path, server: ScriptedServer
) -> None:
    git_repo(workspace)
    (workspace / "big.txt").write_text("x" * (PER_FILE + 5000))
    server.add({"text": "ok"})
    app = AgentApp(make_session(workspace, server), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.session_ready.is_set(), "the session")
        await send(pilot, app, "read @notes.txt and @big.txt and @shadow and @gone.txt")
        await turn_done(pilot, app, 1, server)
        notes = " ".join(str(w.render()) for w in app.chat.query("NoticeLine"))
    users = [m for m in server.requests[0].body["messages"] if m.get("role") == "user"]
    sent = str(users[-1]["content"])
    assert sent.startswith("read @notes.txt and @big.txt and @shadow and @gone.txt")
    assert "```notes.txt\nthe notes\n```" in sent
    assert "x" * PER_FILE in sent and "x" * (PER_FILE + 1) not in sent
    assert f"[cut: first {PER_FILE} of {PER_FILE + 5000} bytes attached]" in sent
    assert "```shadow" not in sent and "```gone.txt" not in sent
    assert "@shadow not attached" in notes and "protected path /etc/shadow" in notes
    assert "@gone.txt not attached: no such file" in notes
    assert "@big.txt attached in part" in notes

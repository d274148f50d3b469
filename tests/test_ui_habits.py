"""What people bring from Claude Code and Codex, in the real app (a Pilot), the real loop and
the scripted model server: /exit and /quit, Ctrl+D, Ctrl+C with a draft, Shift+Tab, a prompt
on the command line, the session picker, the theme kept, custom slash commands and skills."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from tests.scripted_server import ScriptedServer
from tests.test_ctrl_c import FakeClock, hints
from tests.test_ui_app import inner, make_session, send, until
from tui.cli import make_app
from tui.cli_args import parse_args
from tui.config import load_settings
from tui.locations import config_dir
from tui.security.permissions import ApprovalMode
from tui.ui.app import AgentApp
from tui.ui.chat.panel import NoticeLine
from tui.ui.interrupt import QUIT_HINT
from tui.ui.sessions.screen import SessionsScreen
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(60)


def user_text(server: ScriptedServer, request: int = 0) -> str:
    messages = server.requests[request].body["messages"]
    users = [m for m in messages if m.get("role") == "user"]
    content = users[-1]["content"]
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content)
    return str(content)


def notices(app: AgentApp) -> str:
    return "\n".join(str(w.render()) for w in app.chat.query(NoticeLine))


# -- quitting ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["/exit", "/quit"])
async def test_exit_and_quit_end_the_app(workspace: Path, command: str) -> None:
    app = AgentApp(make_session(workspace, None), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, app, command)
        await until(pilot, lambda: app._exit, "the app to quit")
    assert app.return_code == 0


async def test_ctrl_d_quits_on_an_empty_prompt_and_deletes_otherwise(workspace: Path) -> None:
    app = AgentApp(make_session(workspace, None), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        app.prompt.focus()
        app.prompt.insert("abc")
        app.prompt.move_cursor((0, 1))
        await pilot.press("ctrl+d")
        await pilot.pause(0.05)
        assert app.is_running and app.prompt.text == "ac"  # the prompt's own delete-right
        app.prompt.clear()
        await pilot.press("ctrl+d")
        await until(pilot, lambda: app._exit, "the app to quit")
    assert app.return_code == 0


async def test_ctrl_c_with_a_draft_clears_it_and_only_then_arms_quit(workspace: Path) -> None:
    clock = FakeClock()
    app = AgentApp(make_session(workspace, None), cursor_blink=False, monotonic=clock)
    async with app.run_test(size=(100, 30)) as pilot:
        app.prompt.focus()
        app.prompt.insert("a long thought I changed my mind about")
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
        assert app.prompt.text == "" and app.is_running
        assert QUIT_HINT not in hints(app)  # clearing armed nothing
        clock.now += 0.5
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
        assert app.is_running and QUIT_HINT in hints(app)
        clock.now += 0.5
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app._exit, "the app to quit")


# -- Shift+Tab ------------------------------------------------------------------------------


async def test_shift_tab_cycles_the_approval_mode_through_the_session(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = make_session(workspace, None, mode="ask")
    asked: list[str] = []
    real = session.set_approval_mode

    def spy(name: str) -> None:
        asked.append(name)
        real(name)

    monkeypatch.setattr(session, "set_approval_mode", spy)
    app = AgentApp(session, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        app.prompt.focus()
        for expected in ("auto-edit", "read-only", "ask", "auto-edit"):
            await pilot.press("shift+tab")
            await until(pilot, lambda e=expected: session.approval_mode == e, expected)  # type: ignore[misc]
            assert app.status.info.mode == expected
        assert asked == ["auto-edit", "read-only", "ask", "auto-edit"]
        assert session._policy.approval_mode is ApprovalMode.AUTO_EDIT
        assert "approval mode is now auto-edit" in notices(app)
        assert app.prompt.has_focus  # the key was the mode's, not focus moving back


async def test_full_auto_joins_the_cycle_only_when_started_in_it(workspace: Path) -> None:
    session = make_session(workspace, None, mode="full-auto")
    app = AgentApp(session, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        app.prompt.focus()
        seen = []
        for _ in range(4):
            await pilot.press("shift+tab")
            await pilot.pause(0.02)
            seen.append(session.approval_mode)
        assert seen == ["ask", "auto-edit", "read-only", "full-auto"]


# -- the command line's prompt and picker ------------------------------------------------------


async def test_a_prompt_on_the_command_line_is_sent_when_the_session_is_up(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ScriptedServer([{"text": "On it."}]) as server:
        args = parse_args(
            [
                "fix",
                "the tests",
                "--no-tmux",
                "--model",
                "scripted",
                "--base-url",
                server.openai_base_url,
            ]
        )
        assert args.words == ["fix", "the tests"] and args.prompt is None
        app = make_app(workspace, args, cursor_blink=False, history_path=None, state_path=None)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: server.requests, "the first request")
            assert user_text(server) == "fix the tests"
            await until(pilot, lambda: "On it." in chat_text(app), "the answer")


def chat_text(app: AgentApp) -> str:
    return "\n".join(getattr(w, "source", None) or str(w.render()) for w in app.chat.children)


async def test_resume_without_an_id_opens_the_picker(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ScriptedServer([{"text": "first answer"}]) as server:
        flags = ["--no-tmux", "--model", "scripted", "--base-url", server.openai_base_url]
        earlier = make_session(workspace, server)
        try:
            await earlier.submit("an earlier question")
        finally:
            await earlier.aclose()
        args = parse_args([*flags, "-r"])
        app = make_app(workspace, args, cursor_blink=False, history_path=None, state_path=None)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the picker")
            picker = app.screen
            assert isinstance(picker, SessionsScreen)
            row = [info.id for info in picker.sessions].index(earlier.session_id)
            await until(pilot, lambda: picker.query(DataTable), "the picker's table")
            table = picker.query_one(DataTable)
            await until(pilot, lambda: table.row_count == len(picker.sessions), "its rows")
            table.move_cursor(row=row)
            await pilot.press("enter")
            await until(
                pilot, lambda: app.session.session_id == earlier.session_id, "the resumed session"
            )
            await until(pilot, lambda: "an earlier question" in chat_text(app), "its history")


# -- the theme ---------------------------------------------------------------------------------


async def test_the_chosen_theme_is_kept_for_the_next_start(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "ui-state.json"
    app = AgentApp(make_session(workspace, None), cursor_blink=False, state_path=state)
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.theme == "textual-dark"
        app.theme = "nord"
        await until(pilot, lambda: state.exists() and "nord" in state.read_text(), "the state file")
    again = AgentApp(make_session(workspace, None), cursor_blink=False, state_path=state)
    assert again.theme == "nord"
    state.write_text('{"theme": "no-such-theme"}')
    assert AgentApp(make_session(workspace, None), state_path=state).theme == "textual-dark"


# -- custom commands and skills ----------------------------------------------------------------

REVIEW = """---
description: Review a pull request
argument-hint: [pr-number]
---
Review pull request #$1 carefully ($ARGUMENTS); list bugs first.
"""


def commands_session(workspace: Path, server: ScriptedServer, *, trust: bool) -> Any:
    loaded = load_settings(
        workspace,
        overrides={
            "provider": {
                "name": "openai",
                "model": "scripted",
                "base_url": server.openai_base_url,
                "api_key": "test-key",
            }
        },
        env={},
        trust=trust,
    )
    return build_session(workspace, loaded)


@pytest.fixture
def commands(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (workspace / ".claude" / "commands" / "frontend").mkdir(parents=True)
    (workspace / ".claude" / "commands" / "review.md").write_text(REVIEW)
    (workspace / ".claude" / "commands" / "frontend" / "check.md").write_text("Check the UI.\n")
    skill = workspace / ".agents" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Ship to an environment\n---\nRun make deploy ENV=...\n"
    )
    (config_dir() / "commands").mkdir(parents=True)
    (config_dir() / "commands" / "standup.md").write_text("Summarise yesterday's commits.\n")
    mine = home / ".claude" / "skills" / "haiku"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text(
        "---\nname: haiku\ndescription: Answer in a haiku\n---\n5-7-5.\n"
    )
    (home / ".claude" / "commands").mkdir(parents=True)
    (home / ".claude" / "commands" / "explain.md").write_text("Explain $ARGUMENTS simply.\n")
    return workspace


async def test_custom_commands_and_skills_run_as_slash_commands(commands: Path) -> None:
    with ScriptedServer(
        [{"text": "r"}, {"text": "c"}, {"text": "d"}, {"text": "s"}, {"text": "e"}, {"text": "h"}]
    ) as server:
        app = AgentApp(commands_session(commands, server, trust=True), cursor_blink=False)
        async with app.run_test(size=(120, 40)) as pilot:
            sent = [
                ("/review 42 now", "Review pull request #42 carefully (42 now); list bugs first."),
                ("/frontend:check", "Check the UI."),
                ("/deploy staging", "Run make deploy ENV=..."),
                ("/standup", "Summarise yesterday's commits."),
                ("/explain monads", "Explain monads simply."),
                ("/haiku", "5-7-5."),
            ]
            for index, (typed, expected) in enumerate(sent):
                await send(pilot, app, typed)
                await until(pilot, lambda i=index: len(server.requests) > i, typed)  # type: ignore[misc]
                await until(
                    pilot,
                    lambda: not (inner(app)._loop is None or inner(app)._loop.running),  # type: ignore[union-attr]
                    "the turn's end",
                )
                assert expected in user_text(server, index), (typed, user_text(server, index))
            assert "ARGUMENTS: staging" in user_text(server, 2)
            await send(pilot, app, "/help")
            await until(pilot, lambda: "Your commands and skills" in chat_text(app), "/help")
            listed = chat_text(app)
            assert "/review [pr-number]" in listed and "Review a pull request" in listed
            assert "/deploy" in listed and "/haiku" in listed


async def test_a_workspaces_commands_and_skills_wait_for_trust(commands: Path) -> None:
    with ScriptedServer([{"text": "x"}]) as server:
        session = commands_session(commands, server, trust=False)
        app = AgentApp(session, cursor_blink=False)
        async with app.run_test(size=(120, 40)) as pilot:
            held = {change.key for change in session._loaded.trust.held}
            assert {".claude/commands", ".agents/skills"} <= held
            names = {command.name for command in await session.slash_commands()}
            assert names == {"standup", "explain", "haiku"}  # only the person's own
            skill = session._registry.get("skill")
            assert "deploy" not in skill.description and "haiku" in skill.description
            await send(pilot, app, "/review 1")
            await until(pilot, lambda: "no command /review" in notices(app), "the refusal")
            assert "wait for /trust" in notices(app)
            assert not server.requests


async def test_init_asks_the_agent_to_write_agents_md(workspace: Path) -> None:
    with ScriptedServer([{"text": "Wrote it."}]) as server:
        app = AgentApp(make_session(workspace, server), cursor_blink=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await send(pilot, app, "/init")
            await until(pilot, lambda: server.requests, "the request")
            assert "write an AGENTS.md at its root" in user_text(server)


# -- the error log -----------------------------------------------------------------------------


async def test_a_crash_leaves_its_traceback_in_the_log(workspace: Path, tmp_path: Path) -> None:
    import logging

    from tui.app_log import start_log

    root = logging.getLogger()
    before = list(root.handlers)
    path = start_log(tmp_path / "logs")
    assert path is not None
    app = AgentApp(make_session(workspace, None), cursor_blink=False)

    def boom() -> None:
        raise RuntimeError("a bug in a handler")

    try:
        with pytest.raises(RuntimeError):
            async with app.run_test(size=(100, 30)) as pilot:
                app.call_later(boom)
                await until(pilot, lambda: app._exception is not None, "the crash")
    finally:
        for handler in root.handlers[len(before) :]:
            handler.close()
            root.removeHandler(handler)
    text = path.read_text()
    assert "the app stopped on an unexpected error" in text
    assert "RuntimeError: a bug in a handler" in text and "Traceback" in text

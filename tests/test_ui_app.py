"""The app end to end, in a Pilot, against the real loop and a scripted model server.

Each test drives the UI the way a person would (keys into the prompt, answers in the modal)
and asserts first on what crossed the bus and what the model received next, then on widget
state — pixels are the snapshot tests' business.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from textual.message import Message
from textual.pilot import Pilot

from tests import waiting
from tests.conftest import with_metadata
from tests.fake_tmux_pane import FakeTmuxPane
from tests.scripted_server import ScriptedServer
from tests.test_tmux_tools import tmux_backend
from tui.config import load_settings
from tui.events import Event
from tui.exec.backend import BackendError
from tui.exec.tmux_pane import TypedKind
from tui.security.rules import Rule
from tui.session import AgentSession
from tui.session_pane import coalesce
from tui.ui.app import AgentApp
from tui.ui.approval.modal import ApprovalScreen
from tui.ui.grants.screen import GrantsScreen
from tui.ui.messages import BusBatch
from tui.ui.mirror.keys import Typed
from tui.ui.mirror.pane import PaneMirror
from tui.ui.tools.block import ToolCallState
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(60)


# -- helpers ---------------------------------------------------------------------------------


def shell_step(
    command: str, call_id: str = "call_1", text: str = "", **extra: Any
) -> dict[str, Any]:
    arguments = json.dumps(with_metadata("run_shell", {"command": command, **extra}))
    return {
        "text": text,
        "tool_calls": [{"id": call_id, "name": "run_shell", "arguments": arguments}],
    }


def inner(app: AgentApp) -> AgentSession:
    """The app's session as the object it is, for a test that looks at its parts."""
    session = app.session
    assert isinstance(session, AgentSession)
    return session


def make_session(
    workspace: Path,
    server: ScriptedServer | None,
    *,
    mode: str = "ask",
    backend: Any = None,
) -> AgentSession:
    provider: dict[str, Any] = {"name": "openai", "model": "scripted"}
    if server is not None:
        provider.update(base_url=server.openai_base_url, api_key="test-key")
    loaded = load_settings(
        workspace, overrides={"provider": provider, "approval": {"mode": mode}}, env={}
    )
    return build_session(workspace, loaded, backend=backend)


async def until(
    pilot: Pilot[Any], predicate: Callable[[], object], what: str, timeout: float = 8.0
) -> None:
    """``tests.waiting.until`` with the pilot's pause between looks, so the app redraws."""
    await waiting.until(predicate, what, timeout=timeout, nap=pilot.pause)


def bus_events(messages: list[Message]) -> list[Event]:
    return [event for m in messages if isinstance(m, BusBatch) for event in m.events]


def kinds(messages: list[Message]) -> list[str]:
    return [getattr(event, "kind", "?") for event in bus_events(messages)]


def tool_message(server: ScriptedServer, request: int, call_id: str) -> str:
    """The tool result the model received for ``call_id`` in request number ``request``."""
    for message in server.requests[request].body["messages"]:
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return str(message["content"])
    raise AssertionError(f"no tool result for {call_id} in request {request}")


async def send(pilot: Pilot[int], app: AgentApp, text: str) -> None:
    app.prompt.focus()
    app.prompt.insert(text)
    await pilot.press("enter")


async def approval_ready(pilot: Pilot[int], app: AgentApp, timeout: float = 8.0) -> ApprovalScreen:
    """The approval modal, once it takes answers (it opens closed: see ``tui.ui.approval.gate``)."""
    await until(pilot, lambda: app.approvals.open is not None, "the approval modal", timeout)
    await until(
        pilot,
        lambda: isinstance(app.screen, ApprovalScreen) and app.screen.answering,
        "the modal to take answers",
        timeout,
    )
    screen = app.screen
    assert isinstance(screen, ApprovalScreen)
    return screen


async def turn_done(
    pilot: Pilot[int], app: AgentApp, requests: int, server: ScriptedServer
) -> None:
    await until(pilot, lambda: len(server.requests) >= requests, f"{requests} requests")
    await until(pilot, lambda: not inner(app)._loop.running, "the turn to end")  # type: ignore[union-attr]
    # The loop is done; its last events may still be a frame away from the panels.
    await until(pilot, lambda: app.tools.running == 0, "the tool blocks to finish")
    await pilot.pause(0.05)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def app_for(session: AgentSession) -> AgentApp:
    return AgentApp(session, cursor_blink=False)


# -- a prompt, a tool call, its approval ----------------------------------------------------


async def test_prompt_tool_call_allow_once_streams_output(
    workspace: Path, server: ScriptedServer
) -> None:
    # The command waits for the test, so it is still running when its first line shows,
    # however slowly a loaded machine redraws.
    command = "echo one; until [ -e go ]; do sleep 0.05; done; echo two | tee out.txt"
    server.add(shell_step(command, why="write the file", risk="low"), {"text": "Done."})
    messages: list[Message] = []
    app = app_for(make_session(workspace, server))
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await send(pilot, app, "write two to out.txt")
        await approval_ready(pilot, app)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert screen.request.command == command  # the whole command, as the model sent it
        assert [s.risk for s in screen.request.segments] == ["low"] * 4 + ["medium"]
        assert screen.request.why == "write the file" and screen.request.claimed_risk == "low"
        await pilot.press("y")

        def state() -> ToolCallState:
            found = app.tools.state("call_1")
            assert found is not None
            return found

        # Live output: the first line shows while the command still runs.
        await until(pilot, lambda: "one" in state().output_text(), "streamed output")
        assert state().status == "running" and "two" not in state().output_text()
        (workspace / "go").touch()
        await turn_done(pilot, app, 2, server)
        assert state().status == "ok" and state().exit_code == 0
        assert state().output_text() == "one\ntwo"
    seen = kinds(messages)
    assert seen.index("approval_requested") < seen.index("approval_resolved")
    resolved = [e for e in bus_events(messages) if e.kind == "approval_resolved"]  # type: ignore[attr-defined]
    assert resolved[0].decision == "allow_once"  # type: ignore[attr-defined]
    assert "two" in tool_message(server, 1, "call_1")
    assert (workspace / "out.txt").read_text() == "two\n"


async def test_allow_always_exact_grants_each_segment(
    workspace: Path, server: ScriptedServer
) -> None:
    server.add(
        shell_step("touch a.txt && touch b.txt"),
        shell_step("touch b.txt", call_id="call_2"),
        {"text": "Done."},
    )
    app = app_for(make_session(workspace, server))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "touch two files")
        await approval_ready(pilot, app)
        await pilot.press("a")
        await pilot.press("enter")  # the form opens on its OK button: exact, this session
        await turn_done(pilot, app, 3, server)
        rules = [str(g.rule) for g in inner(app)._policy.grants.list()]
        assert rules == ["run_shell(touch a.txt)", "run_shell(touch b.txt)"]
        assert all(g.scope == "session" for g in inner(app)._policy.grants.list())
        # The second call is covered by a segment grant: it ran without asking.
        assert app.tools.state("call_2").status == "ok"  # type: ignore[union-attr]
        assert app.tools.state("call_2").decision is None  # type: ignore[union-attr]


async def test_allow_always_edited_prefix_pattern(workspace: Path, server: ScriptedServer) -> None:
    server.add(
        shell_step("touch notes.txt"),
        shell_step("touch other.txt", call_id="call_2"),
        {"text": "Done."},
    )
    app = app_for(make_session(workspace, server))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "touch files")
        await approval_ready(pilot, app)
        await pilot.press("a")
        pattern = app.screen.query_one("#always-pattern")
        assert pattern.value == "run_shell(touch notes.txt)"  # type: ignore[attr-defined]
        pattern.value = "run_shell(touch:*)"  # type: ignore[attr-defined]
        app.screen.query_one("#scope-saved").value = True  # type: ignore[attr-defined]
        pattern.focus()
        await pilot.press("enter")
        await turn_done(pilot, app, 3, server)
        grants = inner(app)._policy.grants.list()
        assert [(str(g.rule), g.scope) for g in grants] == [("run_shell(touch:*)", "saved")]
        saved = inner(app)._loaded.user_config_path.read_text()
        assert "run_shell(touch:*)" in saved and str(workspace) in saved
        assert app.tools.state("call_2").status == "ok"  # type: ignore[union-attr]
        assert (workspace / "other.txt").exists()


async def test_deny(workspace: Path, server: ScriptedServer) -> None:
    server.add(shell_step("rm -rf build"), {"text": "OK, I will not."})
    app = app_for(make_session(workspace, server, mode="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "clean up")
        await approval_ready(pilot, app)
        await pilot.press("n")
        await turn_done(pilot, app, 2, server)
        assert app.tools.state("call_1").status == "denied"  # type: ignore[union-attr]
    assert "Command execution denied by user." in tool_message(server, 1, "call_1")


async def test_deny_with_message_reaches_the_model(workspace: Path, server: ScriptedServer) -> None:
    server.add(shell_step("touch deploy.lock"), {"text": "Understood."})
    app = app_for(make_session(workspace, server))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "lock it")
        await approval_ready(pilot, app)
        await pilot.press("m")
        await pilot.press(*"use the staging host")
        await pilot.press("enter")
        await turn_done(pilot, app, 2, server)
        state = app.tools.state("call_1")
        assert state.status == "denied" and state.decision_message == "use the staging host"  # type: ignore[union-attr]
    result = tool_message(server, 1, "call_1")
    assert "Command execution denied by user. The user said: use the staging host" in result
    assert not (workspace / "deploy.lock").exists()


# -- cancel and steer ------------------------------------------------------------------------


async def test_escape_cancels_a_running_tool(workspace: Path, server: ScriptedServer) -> None:
    server.add(shell_step("sleep 30"), {"text": "never asked"})
    messages: list[Message] = []
    app = app_for(make_session(workspace, server))
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await send(pilot, app, "wait a while")
        await until(
            pilot, lambda: (s := app.tools.state("call_1")) and s.status == "running", "run"
        )
        started = time.monotonic()
        await pilot.press("escape")
        await until(pilot, lambda: not inner(app)._loop.running, "the cancel")  # type: ignore[union-attr]
        assert time.monotonic() - started < 5
        await pilot.pause(0.1)
        assert app.tools.state("call_1").status == "cancelled"  # type: ignore[union-attr]
    ended = [e for e in bus_events(messages) if e.kind == "turn_ended"]  # type: ignore[attr-defined]
    assert ended and ended[-1].reason == "cancelled"  # type: ignore[attr-defined]
    assert len(server.requests) == 1  # nothing was sent after the cancel


async def test_typing_while_a_tool_runs_steers_the_next_request(
    workspace: Path, server: ScriptedServer
) -> None:
    # The call runs until the test lets it end, so it is still running when the person types,
    # however slowly a loaded machine redraws.
    go = workspace / "go"
    server.add(
        shell_step("until [ -e go ]; do sleep 0.05; done"), {"text": "Checked the logs too."}
    )
    app = app_for(make_session(workspace, server))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "wait a second")
        await until(
            pilot, lambda: (s := app.tools.state("call_1")) and s.status == "running", "run"
        )
        await send(pilot, app, "also check the logs")
        assert app.tools.state("call_1").status == "running"  # type: ignore[union-attr]
        go.touch()
        await turn_done(pilot, app, 2, server)
        # The started call was not thrown away.
        assert app.tools.state("call_1").status == "ok"  # type: ignore[union-attr]
        bubbles = [str(w.render()) for w in app.chat.query("UserBubble.-steering")]
        assert any("also check the logs" in b for b in bubbles)
    second = server.requests[1].body["messages"]
    users = [m["content"] for m in second if m["role"] == "user"]
    assert "also check the logs" in json.dumps(users)


# -- the mirrored pane -----------------------------------------------------------------------


def pane_snapshot_class() -> type[Event]:
    """The tmux person's ``PaneSnapshot`` event, or a stand-in of exactly its shape."""
    import tui.events as events

    found = getattr(events, "PaneSnapshot", None)
    if found is not None:
        return found  # type: ignore[no-any-return]

    class PaneSnapshot(Event):
        kind: Literal["pane_snapshot"] = "pane_snapshot"
        pane_id: str
        actor: str
        lines: list[str]
        cursor_x: int = 0
        cursor_y: int = 0
        width: int = 80
        height: int = 24

    return PaneSnapshot


class KeyRecordingTmux(FakeTmuxPane):
    """A tmux-capable backend as far as the UI can tell: what reaches the pane is recorded."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace, "local/tmux:%7")
        self.sent: list[tuple[str, Typed]] = []

    async def send_typed(self, pane_id: str, kind: TypedKind, data: str) -> None:
        # The person typing is never held to the agent's guard: ``send_typed`` has none.
        self.sent.append((pane_id, Typed(kind, data)))


async def test_take_over_the_pane_and_give_it_back(workspace: Path) -> None:
    backend = KeyRecordingTmux(workspace)
    session = make_session(workspace, None, backend=backend)
    Snapshot = pane_snapshot_class()
    app = app_for(session)
    async with app.run_test(size=(120, 40)) as pilot:
        lines = ["\x1b[32muser@box\x1b[0m:~$ ls", "a  b", "\x1b[32muser@box\x1b[0m:~$ "]
        session._bus.publish(
            Snapshot(
                pane_id="%7",
                actor="local",
                lines=lines,
                cursor_x=11,
                cursor_y=2,
                width=80,
                height=3,
            )  # type: ignore[call-arg]
        )
        await until(pilot, lambda: app.query_one(PaneMirror).frame is not None, "a frame")
        await pilot.press("ctrl+t")
        assert app.panes.holding and app.query_one(PaneMirror).has_focus
        assert "YOU HAVE THE PANE'S KEYBOARD" in app.status.plain
        await pilot.press("l", "s", "enter", "ctrl+c", "escape", "tab", "up")
        await until(pilot, lambda: ("%7", Typed("key", "Up")) in backend.sent, "keys to reach tmux")
        assert {target for target, _ in backend.sent} == {"%7"}
        # Typed text may arrive in one send or several; the sequence is what counts.
        assert coalesce([typed for _, typed in backend.sent]) == [
            Typed("text", "ls"),
            Typed("key", "Enter"),
            Typed("key", "C-c"),
            Typed("key", "Escape"),
            Typed("key", "Tab"),
            Typed("key", "Up"),
        ]
        loop = inner(app)._loop
        assert loop is None or not loop.running  # esc went to tmux
        await pilot.press("ctrl+right_square_bracket")
        assert not app.panes.holding and app.prompt.has_focus
        sent = len(backend.sent)
        await pilot.press("x")
        assert app.prompt.text == "x" and len(backend.sent) == sent


class RefusingTmux(KeyRecordingTmux):
    """A pane whose tmux went away: every send is tried (and recorded) and fails."""

    async def send_typed(self, pane_id: str, kind: TypedKind, data: str) -> None:
        await super().send_typed(pane_id, kind, data)
        raise BackendError("no server running on /tmp/tmux-0/gone")


async def test_a_failing_send_is_said_once_and_keeps_the_take_over(workspace: Path) -> None:
    backend = RefusingTmux(workspace)
    session = make_session(workspace, None, backend=backend)
    app = app_for(session)
    async with app.run_test(size=(120, 40)) as pilot:
        session._bus.publish(
            pane_snapshot_class()(pane_id="%7", actor="local", lines=["$ "], cursor_x=2)  # type: ignore[call-arg]
        )
        await until(pilot, lambda: app.query_one(PaneMirror).frame is not None, "a frame")
        await pilot.press("ctrl+t")
        await pilot.press("a", "enter", "b", "c", "up")
        await until(pilot, lambda: ("%7", Typed("key", "Up")) in backend.sent, "the arrow key")
        errors = [box for box in app.chat.query("ErrorBox") if box.border_title == "keys not sent"]
        assert len(errors) == 1 and "no server running" in str(errors[0].render())
        assert app.panes.holding and app.query_one(PaneMirror).has_focus
        # Every key typed after a failure is still tried, in the order typed.
        assert coalesce([typed for _, typed in backend.sent]) == [
            Typed("text", "a"),
            Typed("key", "Enter"),
            Typed("text", "bc"),
            Typed("key", "Up"),
        ]


async def test_mirror_repaints_only_changed_lines(workspace: Path) -> None:
    backend = KeyRecordingTmux(workspace)
    session = make_session(workspace, None, backend=backend)
    Snapshot = pane_snapshot_class()
    app = app_for(session)
    async with app.run_test(size=(120, 40)) as pilot:
        first = [f"line {i}" for i in range(10)]
        second = list(first)
        second[4] = "\x1b[31mchanged\x1b[0m"
        for lines in (first, second):
            session._bus.publish(
                Snapshot(
                    pane_id="%7",
                    actor="local",
                    lines=lines,
                    cursor_x=0,
                    cursor_y=9,
                    width=40,
                    height=10,
                )  # type: ignore[call-arg]
            )
            await pilot.pause(0.1)
        mirror = app.query_one(PaneMirror)
        assert mirror.last_changed == [4]
        style = mirror._line_strip(4)._segments[0].style  # colours survive
        assert style is not None and style.color is not None and style.color.number == 1  # red


async def test_take_over_without_tmux_says_why(workspace: Path) -> None:
    app = app_for(make_session(workspace, None))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+t")
        assert not app.panes.holding
        assert app.mirror.unavailable == "no tmux pane: the backend is local"


def mirror_shows(app: AgentApp, text: str) -> bool:
    """The mirror's frame has ``text`` on some row."""
    frame = app.query_one(PaneMirror).frame
    return frame is not None and any(text in line for line in frame.lines)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
async def test_take_over_a_real_tmux_pane(workspace: Path) -> None:
    """The agent's own pane: a command runs in it, the person takes it, types, gives it back."""
    from tests.tmux_helpers import kill_server, new_socket_name

    socket = new_socket_name()
    backend = tmux_backend(socket, workspace, width=80, height=20)
    app = app_for(make_session(workspace, None, backend=backend))

    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "!echo agent-$((20+1))")
            await until(pilot, lambda: mirror_shows(app, "agent-21"), "the agent's output")
            (state,) = [b.state for b in app.tools.blocks.values()]
            await until(pilot, lambda: state.finished, "the command")
            assert state.output_text().strip() == "agent-21" and "tmux" in (state.actor or "")
            assert app.panes.target == backend.default_pane
            await pilot.press("ctrl+t")
            assert app.panes.holding
            await pilot.press(*"echo person-$((6*7))", "enter")
            await until(pilot, lambda: mirror_shows(app, "person-42"), "the person's command")
            await pilot.press("ctrl+right_square_bracket")
            assert not app.panes.holding and app.prompt.has_focus
    finally:
        await backend.close()
        kill_server(socket)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
async def test_the_mirror_says_its_pane_went_with_the_tmux_server(workspace: Path) -> None:
    """The agent's tmux server killed while the person holds its pane: the take-over ends, the
    last frame stays under "pane gone" and why, until the next command's fresh pane shows."""
    from tests.tmux_helpers import kill_server, new_socket_name, tmux
    from tui.ui.mirror.pane import MirrorPanel

    socket = new_socket_name()
    backend = tmux_backend(socket, workspace, width=80, height=20)
    app = app_for(make_session(workspace, None, backend=backend))

    try:
        async with app.run_test(size=(120, 40)) as pilot:
            panel = app.query_one(MirrorPanel)
            await send(pilot, app, "!echo agent-$((20+1))")
            await until(pilot, lambda: mirror_shows(app, "agent-21"), "the agent's output")
            await pilot.press("ctrl+t")
            assert app.panes.holding
            await tmux(socket, "kill-server")
            await until(pilot, lambda: panel.gone is not None, "the mirror to hear of it")
            assert "tmux session or server ended" in (panel.gone or "")
            assert panel.has_class("-gone")
            assert "pane gone" in str(panel.border_subtitle)
            assert not app.panes.holding and mirror_shows(app, "agent-21")  # the last frame stays
            await send(pilot, app, "!echo fresh-$((40+2))")
            await until(pilot, lambda: mirror_shows(app, "fresh-42"), "the fresh pane")
            assert panel.gone is None and "pane gone" not in str(panel.border_subtitle)
    finally:
        await backend.close()
        kill_server(socket)


# -- grants, auto-approve, no provider, ! commands -----------------------------------------


async def test_grants_screen_revokes(workspace: Path) -> None:
    session = make_session(workspace, None)
    session._policy.grants.add(Rule.parse("run_shell(git status)"))
    session._policy.grants.add(Rule.parse("run_shell(npm test:*)"))
    app = app_for(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+g")
        assert isinstance(app.screen, GrantsScreen)
        await pilot.press("d")
        assert [str(g.rule) for g in session._policy.grants.list()] == ["run_shell(npm test:*)"]
        await pilot.press("escape")
        assert not isinstance(app.screen, GrantsScreen)
        notes = " ".join(str(w.render()) for w in app.chat.query("NoticeLine"))
        assert "revoked 1 grant" in notes


async def test_approve_window_answers_requests_itself(
    workspace: Path, server: ScriptedServer
) -> None:
    server.add(shell_step("touch auto.txt"), {"text": "Done."})
    messages: list[Message] = []
    app = app_for(make_session(workspace, server))
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await send(pilot, app, "/approve 10m")
        assert app.approvals.auto_approve.active
        assert "auto-approve 10:00" in app.status.plain
        await send(pilot, app, "touch it")
        await turn_done(pilot, app, 2, server)
        assert app.tools.state("call_1").status == "ok"  # type: ignore[union-attr]
        assert (workspace / "auto.txt").exists()
        notes = " ".join(str(w.render()) for w in app.chat.query("NoticeLine"))
        assert "auto-approved run_shell: touch auto.txt" in notes
        await send(pilot, app, "/approve off")
        assert not app.approvals.auto_approve.active and "auto-approve" not in app.status.plain
    assert not [m for m in messages if isinstance(m, ApprovalScreen)]
    resolved = [e for e in bus_events(messages) if e.kind == "approval_resolved"]
    assert [e.decision for e in resolved] == ["allow_once"]


async def test_no_provider_still_opens_and_runs_bang_commands(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    session = make_session(workspace, None)
    assert session._loop is None and session._provider_error
    app = app_for(session)
    async with app.run_test(size=(120, 40)) as pilot:
        banner = str(app.chat.query_one("Banner").render())
        assert "OPENAI_API_KEY is not set" in banner and "--base-url" in banner
        await send(pilot, app, "hello?")
        errors = " ".join(str(w.render()) for w in app.chat.query("ErrorBox"))
        assert "OPENAI_API_KEY" in errors
        await send(pilot, app, "!echo hi")
        await until(pilot, lambda: app.tools.blocks, "a block")
        (state,) = [b.state for b in app.tools.blocks.values()]
        await until(pilot, lambda: state.finished, "the command")
        assert state.status == "ok" and state.output_text() == "hi" and state.by_user


async def test_bang_command_goes_through_approval(workspace: Path) -> None:
    app = app_for(make_session(workspace, None))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "!touch mine.txt")
        await approval_ready(pilot, app)
        assert app.approvals.open[0].command == "touch mine.txt"  # type: ignore[index]
        await pilot.press("y")
        await until(pilot, lambda: all(b.state.finished for b in app.tools.blocks.values()), "run")
        assert (workspace / "mine.txt").exists()


async def test_pager_shows_the_whole_output_of_a_flood(workspace: Path) -> None:
    app = app_for(make_session(workspace, None))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "!seq 1 20000")
        await until(pilot, lambda: app.tools.blocks, "a block")
        (block,) = app.tools.blocks.values()
        await until(pilot, lambda: block.state.finished, "the command")
        out = block.state.output
        assert out.truncated and out.line_count() <= 1000 and out.total_lines == 20000
        stats = block._stats_text().plain
        assert "20,000 lines" in stats and "kept the last 1,000" in stats and "o all" in stats
        await pilot.press("ctrl+l")
        from tui.ui.tools.pager import LinesView, OutputPager

        await until(pilot, lambda: isinstance(app.screen, OutputPager), "the pager")
        view = app.screen.query_one(LinesView)
        await until(pilot, lambda: len(view.source) == 20000, "the index")
        assert view.source.line(0) == "1" and view.source.line(19999) == "20000"


# -- slash commands, sessions, start-up ------------------------------------------------------


async def test_mode_model_clear_and_resume(workspace: Path, server: ScriptedServer) -> None:
    server.add({"text": "first answer"})
    session = make_session(workspace, server)

    def factory(resume: str | None) -> AgentSession:
        return build_session(workspace, session._loaded, resume=resume, backend=session._backend)

    app = AgentApp(session, session_factory=factory, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "/mode full-auto")
        assert session._policy.approval_mode.value == "full-auto"
        assert "mode full-auto" in app.status.plain
        await send(pilot, app, "/model other-model")
        await send(pilot, app, "hello there")
        await turn_done(pilot, app, 1, server)
        assert server.requests[0].body["model"] == "other-model"
        first = session.session_id
        await send(pilot, app, "/clear")
        await until(pilot, lambda: app.session.session_id != first, "a new session")
        assert not app.chat.query("UserBubble")
        await send(pilot, app, f"/resume {first}")
        await until(pilot, lambda: app.session.session_id == first, "the old session back")
        await until(pilot, lambda: app.chat.query("UserBubble"), "the replayed conversation")
        assert "hello there" in str(app.chat.query_one("UserBubble").render())
        await send(pilot, app, "/resume no-such-session")
        assert app.session.session_id == first
        await send(pilot, app, "/frobnicate")
        notes = " ".join(str(w.render()) for w in app.chat.query("NoticeLine"))
        assert "no command /frobnicate" in notes


async def test_the_session_is_built_after_the_first_frame(workspace: Path) -> None:
    built: list[AgentSession] = []

    async def builder() -> tuple[AgentSession, None]:
        built.append(make_session(workspace, None))
        return built[0], None

    app = AgentApp(builder=builder, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "!echo early")  # typed before the session exists: queued
        await app.session_ready.wait()
        await until(pilot, lambda: app.tools.blocks, "the queued command")
        (state,) = [b.state for b in app.tools.blocks.values()]
        await until(pilot, lambda: state.finished, "the command")
        assert state.output_text() == "early" and app.session is built[0]


async def test_a_session_that_cannot_be_built_ends_the_app_with_the_reason() -> None:
    from tui.session import StartupError

    async def builder() -> tuple[AgentSession, None]:
        raise StartupError("cannot reach prod: connection refused", exit_code=1)

    app = AgentApp(builder=builder, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
    assert app.return_code == 1


async def test_newline_keys_and_history(workspace: Path) -> None:
    app = app_for(make_session(workspace, None))
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt.focus()
        await pilot.press(*"one", "ctrl+j", *"two", "alt+enter", *"three")
        assert app.prompt.text == "one\ntwo\nthree"
        await pilot.press("enter")
        assert app.prompt.text == ""
        await pilot.press(*"draft", "up")
        assert app.prompt.text == "one\ntwo\nthree"
        await pilot.press("down", "down", "down")
        assert app.prompt.text == "draft"


async def test_ctrl_r_searches_the_prompt_history(workspace: Path) -> None:
    from tui.ui.prompt.search import HistorySearchScreen

    app = app_for(make_session(workspace, None))
    async with app.run_test(size=(120, 40)) as pilot:
        for text in ("!echo alpha", "!echo beta", "!echo gamma"):
            await send(pilot, app, text)
        await pilot.press("ctrl+r")
        assert isinstance(app.screen, HistorySearchScreen)
        await pilot.press(*"bet", "enter")
        assert app.prompt.text == "!echo beta" and app.prompt.has_focus


async def test_chat_and_tool_panel_are_pruned_with_hysteresis(workspace: Path) -> None:
    from tui.events import Notice, ToolCallCompleted, ToolCallStarted
    from tui.ui.chat.panel import PRUNE_ABOVE, PRUNE_TO
    from tui.ui.tools import panel as tools_panel

    session = make_session(workspace, None)
    app = app_for(session)
    async with app.run_test(size=(120, 40)) as pilot:
        for i in range(250):  # eleven lines each (a margin and ten of text): 2,750 lines
            session._bus.publish(Notice(message="\n".join(f"note {i}.{j}" for j in range(10))))
        await until(pilot, lambda: app.chat.pruned > 0, "the chat to prune")
        await pilot.pause(0.2)
        height = app.chat.virtual_size.height
        assert PRUNE_TO - 50 <= height <= PRUNE_ABOVE
        for i in range(tools_panel.PRUNE_ABOVE + 1):
            session._bus.publish(ToolCallStarted(tool_call_id=f"c{i}", tool_name="run_shell"))
            session._bus.publish(
                ToolCallCompleted(
                    tool_call_id=f"c{i}", tool_name="run_shell", is_error=False, duration_ms=1
                )
            )
        await until(pilot, lambda: app.tools.pruned > 0, "the tool panel to prune")
        assert len(app.tools.blocks) == tools_panel.PRUNE_TO
        assert f"c{tools_panel.PRUNE_ABOVE}" in app.tools.blocks  # the newest stay


async def test_task_list_and_agent_messages_show_without_asking(
    workspace: Path, server: ScriptedServer
) -> None:
    from tui.ui.chat.panel import AgentNote

    todos = [
        {"content": "Read the logs", "status": "completed"},
        {"content": "Fix it", "status": "in_progress", "active_form": "Fixing it"},
    ]
    server.add(
        {
            "text": "",
            "tool_calls": [
                {"id": "t1", "name": "todo_write", "arguments": json.dumps({"todos": todos})},
                {
                    "id": "t2",
                    "name": "send_user_message",
                    "arguments": json.dumps({"message": "Found the culprit"}),
                },
            ],
        },
        {"text": "All done."},
    )
    app = app_for(make_session(workspace, server, mode="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        assert not app.todo.has_class("-shown")
        await send(pilot, app, "fix it")
        await turn_done(pilot, app, 2, server)
        assert app.approvals.open is None  # neither call asked
        assert app.todo.has_class("-shown") and app.todo.border_title == "tasks 1/2"
        shown = str(app.todo.render())
        assert "Fixing it" in shown and "Read the logs" in shown
        notes = list(app.chat.query(AgentNote))
        assert [str(n.render()) for n in notes] == ["Found the culprit"]


async def test_adapters_start_in_the_background_and_slash_commands_list_them(
    workspace: Path, server: ScriptedServer
) -> None:
    from tests.petstore_server import PetstoreServer
    from tui.ui.chat.panel import NoticeLine

    petstore = PetstoreServer()
    petstore.start()
    spec = Path(__file__).parent / "fixtures" / "openapi_petstore_v3.0.yaml"
    skill = workspace / ".agent-tui" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it safely\n---\nSteps.\n")
    loaded = load_settings(
        workspace,
        overrides={
            "provider": {"name": "openai", "model": "scripted", "base_url": server.openai_base_url},
            "openapi": {"pets": {"spec": str(spec), "base_url": f"{petstore.url}/open"}},
        },
        env={},
        trust=True,  # the workspace's own skill is offered once it is trusted
    )
    app = app_for(build_session(workspace, loaded))
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: "pets__listPets" in inner(app)._registry, "the API tools")

            def chat_text() -> str:
                # Markdown entries keep their source; the others render to plain text.
                return "\n".join(
                    getattr(w, "source", None) or str(w.render()) for w in app.chat.children
                )

            for command in ("/mcp", "/tools", "/skills", "/cron"):
                await send(pilot, app, command)
            await until(pilot, lambda: "No scheduled jobs" in chat_text(), "/cron's answer")
            text = chat_text()
            assert "OpenAPI `pets`: 3 tool(s)" in text and "No MCP servers configured" in text
            assert "pets__showPetById" in text and "read-only" in text
            assert "deploy" in text and "Ship it safely" in text
            await send(pilot, app, "/mcp restart nothing")
            await until(
                pilot,
                lambda: any(
                    "no MCP servers" in str(n.render()) for n in app.chat.query(NoticeLine)
                ),
                "the restart refusal",
            )
    finally:
        petstore.stop()


async def test_approving_code_shows_it_as_lines(workspace: Path, server: ScriptedServer) -> None:
    from textual.widgets import Static

    code = "import os\nfor name in sorted(os.listdir('.')):\n    print(name)"
    call_args = json.dumps({"code": code, "timeout": 10})
    server.add(
        {"text": "", "tool_calls": [{"id": "py1", "name": "python_repl", "arguments": call_args}]},
        {"text": "Listed."},
    )
    app = app_for(make_session(workspace, server, mode="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "list the folder in python")
        await approval_ready(pilot, app)
        shown = str(app.screen.query_one("#approval-command", Static).render())
        assert "code:\n  import os\n  for name in sorted(os.listdir('.')):\n      print(name)" in (
            shown
        )
        assert "\\n" not in shown and "timeout: 10" in shown
        await pilot.press("y")
        await turn_done(pilot, app, 2, server)
        assert app.tools.state("py1").status == "ok"  # type: ignore[union-attr]


async def test_a_resumed_session_never_points_the_mirror_at_an_old_pane(workspace: Path) -> None:
    """The saved calls ran in an earlier run's tmux pane (%77, gone with its server): after
    the replay the mirror and Ctrl+T follow this run's pane, not that one."""
    from tui.agent.providers.base import Message
    from tui.agent.transcript import SessionStore
    from tui.events import ToolCallStarted, UserMessage

    with SessionStore().create(workspace, "openai", "scripted") as saved:
        saved.append_message(Message(role="user", content="earlier"))
        saved.append_event(UserMessage(text="earlier"))
        saved.append_event(
            ToolCallStarted(
                tool_call_id="c1", tool_name="run_shell", command="ls", actor="local/tmux:%77"
            )
        )
        old = saved.id
    backend = KeyRecordingTmux(workspace)
    provider = {"name": "openai", "api_key": "k", "base_url": "http://127.0.0.1:9/v1"}
    loaded = load_settings(workspace, overrides={"provider": provider}, env={})
    session = build_session(workspace, loaded, resume=old, backend=backend)
    app = app_for(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.chat.query("UserBubble"), "the replayed conversation")
        assert app.panes.target != "%77"
        session._bus.publish(
            pane_snapshot_class()(pane_id="%7", actor="local", lines=["$ "], cursor_x=2)  # type: ignore[call-arg]
        )
        await until(pilot, lambda: app.panes.target == "%7", "this run's pane")
        await pilot.press("ctrl+t", "x")
        await until(pilot, lambda: backend.sent, "a key to reach tmux")
        assert {target for target, _ in backend.sent} == {"%7"}

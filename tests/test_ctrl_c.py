"""Ctrl+C in the app: cancels a running turn, quits only when pressed twice at idle, and
belongs to the pane while the person holds it. The real app in a Pilot, the real loop, a real
shell command and the scripted model server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_ui_app import (
    KeyRecordingTmux,
    approval_ready,
    inner,
    make_session,
    pane_snapshot_class,
    send,
    shell_step,
    until,
)
from tui.session_pane import coalesce
from tui.ui.app import AgentApp
from tui.ui.interrupt import QUIT_HINT, CtrlC
from tui.ui.mirror.keys import Typed
from tui.ui.mirror.pane import PaneMirror

pytestmark = pytest.mark.timeout(60)


class FakeClock:
    """Monotonic seconds the test moves by hand: the two-second window without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def hints(app: AgentApp) -> list[str]:
    return [n.message for n in app._notifications]


def test_the_decision_alone() -> None:
    clock = FakeClock()
    ctrl_c = CtrlC(clock=clock)
    assert ctrl_c.press(busy=True) == "cancel"
    assert ctrl_c.press(busy=False) == "arm"
    clock.now += 2.5
    assert ctrl_c.press(busy=False) == "arm"  # too late: armed again, not quit
    clock.now += 1.0
    assert ctrl_c.press(busy=False) == "quit"
    assert ctrl_c.press(busy=False) == "arm"
    assert ctrl_c.press(busy=True) == "cancel"  # a turn in between disarms
    assert ctrl_c.press(busy=False) == "arm"


async def test_ctrl_c_cancels_a_running_turn(workspace: Path) -> None:
    with ScriptedServer() as server:
        server.add(shell_step("echo started; sleep 30"), {"text": "Stopped."})
        app = AgentApp(make_session(workspace, server, mode="full-auto"), cursor_blink=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "run it")

            def output() -> str:
                state = app.tools.state("call_1")
                return state.output_text() if state is not None else ""

            def status() -> str | None:
                state = app.tools.state("call_1")
                return state.status if state is not None else None

            await until(pilot, lambda: "started" in output(), "output")
            assert app.prompt.has_focus  # the prompt's own ctrl+c (copy) must not swallow it
            await pilot.press("ctrl+c")
            await until(pilot, lambda: status() == "cancelled", "the cancelled call")
            loop = inner(app)._loop
            await until(pilot, lambda: loop is None or not loop.running, "the turn to end")
            assert len(server.requests) == 1  # the turn stopped: the model was not asked again
            assert app.is_running and QUIT_HINT not in hints(app)


async def test_one_ctrl_c_at_idle_warns_and_does_not_quit(workspace: Path) -> None:
    clock = FakeClock()
    app = AgentApp(make_session(workspace, None), cursor_blink=False, monotonic=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
        assert app.is_running and app.return_code is None
        assert QUIT_HINT in hints(app)
        clock.now += 3.0  # the second press comes too late: it warns again
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
        assert app.is_running and app.return_code is None
        assert hints(app).count(QUIT_HINT) == 2


async def test_two_ctrl_c_at_idle_quit(workspace: Path) -> None:
    clock = FakeClock()
    app = AgentApp(make_session(workspace, None), cursor_blink=False, monotonic=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+c")
        clock.now += 1.0
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app._exit, "the app to quit")
    assert app.return_code == 0


async def test_a_selection_is_copied_not_cancelled(workspace: Path) -> None:
    clock = FakeClock()
    app = AgentApp(make_session(workspace, None), cursor_blink=False, monotonic=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt.insert("some words")
        app.prompt.select_all()
        await pilot.press("ctrl+c", "ctrl+c")
        await pilot.pause(0.05)
        assert app.is_running and QUIT_HINT not in hints(app)
        assert app.clipboard == "some words"


async def test_ctrl_c_while_holding_the_pane_goes_to_the_pane(workspace: Path) -> None:
    backend = KeyRecordingTmux(workspace)
    session = make_session(workspace, None, backend=backend)
    Snapshot = pane_snapshot_class()
    clock = FakeClock()
    app = AgentApp(session, cursor_blink=False, monotonic=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        session._bus.publish(
            Snapshot(  # type: ignore[call-arg]
                pane_id="%7",
                actor="local",
                lines=["$ "],
                cursor_x=2,
                cursor_y=0,
                width=80,
                height=1,
            )
        )
        await until(pilot, lambda: app.query_one(PaneMirror).frame is not None, "a frame")
        await pilot.press("ctrl+t")
        assert app.panes.holding
        await pilot.press("ctrl+c", "ctrl+c", "ctrl+c")

        def sent() -> list[Typed]:
            return coalesce([typed for _, typed in backend.sent])

        await until(pilot, lambda: sent() == [Typed("key", "C-c")] * 3, "three C-c in the pane")
        assert app.is_running and QUIT_HINT not in hints(app)


async def test_ctrl_c_at_the_approval_modal_cancels_and_runs_nothing(workspace: Path) -> None:
    with ScriptedServer() as server:
        server.add(shell_step("touch made"), {"text": "Stopped."})
        app = AgentApp(make_session(workspace, server, mode="ask"), cursor_blink=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "make it")
            await approval_ready(pilot, app)
            await pilot.press("ctrl+c")
            await until(pilot, lambda: app.approvals.open is None, "the modal to close")
            loop = inner(app)._loop
            await until(pilot, lambda: loop is None or not loop.running, "the turn to end")
            state = app.tools.state("call_1")
            assert state is not None and state.status in ("denied", "cancelled", "error")
            assert app.is_running and QUIT_HINT not in hints(app)
    assert not (workspace / "made").exists()

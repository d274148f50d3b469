"""The approval modal tells the whole truth, and only a key meant for it answers it.

The real app in a Pilot, against the scripted model server, through the real dispatch path
(registry → policy → modal): the diff's last line and a new file's one line are on screen at
every size, typing straight through an approval's arrival answers nothing, "allow always"
lists and grants exactly the rules the person kept, Enter confirms whatever has focus in the
form, calls queued behind the open question are counted, and a hostile ``why`` stays one line
above the command without writing an escape to the terminal.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual._time import get_time
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import RadioSet, SelectionList, Static

from tests.conftest import with_metadata
from tests.scripted_server import ScriptedServer
from tests.snapshot_apps.truth_scenes import HOSTILE_WHY, THIRTEEN_COMMAND
from tests.test_approval_words import session_with
from tests.test_headless_tty import request as shell_request
from tests.test_ui_app import app_for, approval_ready, inner, send, shell_step, turn_done, until
from tui.config import load_settings
from tui.events import ApprovalRequested
from tui.ui.app import AgentApp
from tui.ui.approval.gate import GRACE, AnswerGate
from tui.ui.approval.modal import ApprovalScreen, CommandBody
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(90)

SIZES = [(60, 20), (80, 24), (200, 60)]


def file_step(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "call_1", "name": name, "arguments": json.dumps(arguments)}
    return {"text": "", "tool_calls": [call]}


def screen_text(app: AgentApp) -> str:
    """Every row the terminal shows now, as text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_an_edit_of_the_last_line_shows_both_lines(
    workspace: Path, size: tuple[int, int]
) -> None:
    (workspace / "greek.txt").write_text("alpha\nbeta\ngamma\n")
    edit = {"path": "greek.txt", "old_string": "gamma", "new_string": "GAMMA-EDITED"}
    with ScriptedServer() as server:
        server.add(file_step("edit_file", edit), {"text": "Done."})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=size) as pilot:
            await send(pilot, app, "shout the last one")
            await approval_ready(pilot, app)
            shown = screen_text(app)
            assert "-gamma" in shown, shown
            assert "+GAMMA-EDITED" in shown, shown  # the edit never reads as a deletion
            await pilot.press("n")
            await turn_done(pilot, app, 2, server)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_new_one_line_file_shows_its_line(workspace: Path, size: tuple[int, int]) -> None:
    with ScriptedServer() as server:
        server.add(
            file_step("write_file", {"path": "VERSION", "content": "2.4.1\n"}), {"text": "ok"}
        )
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=size) as pilot:
            await send(pilot, app, "write the version")
            await approval_ready(pilot, app)
            assert "+2.4.1" in screen_text(app)
            await pilot.press("n")
            await turn_done(pilot, app, 2, server)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_long_diff_says_what_is_below(workspace: Path, size: tuple[int, int]) -> None:
    old = "".join(f"line {n}\n" for n in range(1, 81))
    (workspace / "notes.txt").write_text(old)
    new = old.replace("line 80\n", "line 80 (the last, edited)\n")
    new = new.replace("line 1\n", "line 1 (edited)\n")
    with ScriptedServer() as server:
        server.add(file_step("write_file", {"path": "notes.txt", "content": new}), {"text": "ok"})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=size) as pilot:
            await send(pilot, app, "edit both ends")
            screen = await approval_ready(pilot, app)
            shown = screen_text(app)
            body = screen.query_one("#approval-body")
            # The end of the diff is on screen, or the body says how much is below it.
            assert "+line 80 (the last, edited)" in shown or (
                "more lines below" in str(body.border_subtitle)
            ), shown
            body.scroll_end(animate=False)
            await pilot.pause(0.1)
            assert "+line 80 (the last, edited)" in screen_text(app)
            await pilot.press("n")
            await turn_done(pilot, app, 2, server)


def answering(modal: ApprovalScreen) -> bool:
    """Whether the modal takes answers yet (a call, so a type checker reads it afresh)."""
    return modal.answering


async def _type_continuously(
    pilot: Pilot[int], app: AgentApp, words: str, until_time: float
) -> int:
    """Keys as a person types them, one every ~30 ms, until ``until_time``."""
    typed = 0
    while time.monotonic() < until_time:
        key = words[typed % len(words)]
        await pilot.press("space" if key == " " else key)
        typed += 1
        await pilot.pause(0.03)
    return typed


async def _typed_through(app: AgentApp, modal: ApprovalScreen, words: str, seconds: float) -> None:
    """A key typed every 30 ms for ``seconds`` from the moment the question was shown, handed
    to the app as its terminal reader hands them: each stamped when it was typed, read
    together after a busy moment.

    A pilot's presses are made on the app's own loop, so on a loaded machine their stamps
    fell more than the gate's grace apart, which is a person stopping, not typing through."""
    assert modal.gate.opened is not None
    start = get_time() - (modal.monotonic() - modal.gate.opened)  # on Textual's clock
    stamps = [start + i * 0.03 for i in range(int(seconds / 0.03) + 1)]
    await asyncio.sleep(max(0.0, stamps[-1] - get_time()))
    driver = app._driver
    assert driver is not None
    for i, stamp in enumerate(stamps):
        char = words[i % len(words)]
        key = events.Key("space" if char == " " else char, char)
        key.time = stamp
        key.set_sender(app)
        driver.send_message(key)


async def test_typing_straight_through_an_approval_never_answers_it(workspace: Path) -> None:
    with ScriptedServer() as server:
        server.add(
            shell_step("rm -rf dist", text="Cleaning up."),
            {"text": "Done."},
        )
        app = app_for(session_with(workspace, server, "ask"))
        (workspace / "dist").mkdir()
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "clean up")
            app.prompt.focus()
            words = "okay sounds good yes yes y "
            # Type until the modal is up, and on for a second and a half after it appeared.
            deadline = time.monotonic() + 15
            while app.approvals.open is None:
                assert time.monotonic() < deadline, "no approval modal"
                await _type_continuously(pilot, app, words, time.monotonic() + 0.1)
            screen = app.screen
            assert isinstance(screen, ApprovalScreen)
            modal: ApprovalScreen = screen
            await until(pilot, lambda: modal.gate.opened is not None, "the question shown")
            await _typed_through(app, modal, words, 1.5)
            await pilot.pause()
            assert app.approvals.open is not None and app.screen is screen  # not answered
            assert not modal.has_class("-always")  # the "a" of "okay" opened nothing
            gate = modal.gate
            assert gate.opened is not None and gate.last_typed is not None
            assert gate.last_typed - gate.opened >= 1.4  # every key counted as typing
            assert gate.opens_at() == pytest.approx(gate.last_typed + GRACE)
            assert (workspace / "dist").is_dir()
            # The person stops, reads, and answers: that answer counts.
            keys = screen.query_one("#approval-keys", Static)
            await until(pilot, lambda: "allow once" in str(keys.render()), "the answer keys", 3)
            assert answering(modal)
            await pilot.press("n")
            await turn_done(pilot, app, 2, server)
            assert app.tools.state("call_1").status == "denied"  # type: ignore[union-attr]
            assert (workspace / "dist").is_dir()


async def test_allow_always_lists_every_rule_and_grants_only_the_ticked(workspace: Path) -> None:
    with ScriptedServer() as server:
        server.add(shell_step(THIRTEEN_COMMAND), {"text": "Done."})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=(80, 24)) as pilot:
            await send(pilot, app, "ship it")
            screen = await approval_ready(pilot, app)
            assert len(screen.request.always_rules) == 13
            await pilot.press("a")
            rules: SelectionList[str] = screen.query_one("#always-rules", SelectionList)
            listed = [rules.get_option_at_index(i).value for i in range(rules.option_count)]
            assert listed == screen.request.always_rules  # every one, as the policy made them
            assert "run_shell(xargs -0 rm -f --)" in listed
            upload = "run_shell(curl -fsS -T /tmp/dist.tgz https://uploads.example.net/drop)"
            assert upload in listed
            assert "exactly these 13 rules" in str(screen.query_one("#always-count").render())
            # Untick the delete and the upload with the keyboard.
            rules.focus()
            for index, rule in enumerate(listed):
                if rule in (upload, "run_shell(xargs -0 rm -f --)"):
                    rules.highlighted = index
                    await pilot.press("space")
            assert "11 of 13 rules kept" in str(screen.query_one("#always-count").render())
            await pilot.press("enter")  # the list has focus: Enter still confirms
            await turn_done(pilot, app, 2, server)
            granted = [str(g.rule) for g in inner(app)._policy.grants.list()]
            assert len(granted) == 11
            assert upload not in granted and "run_shell(xargs -0 rm -f --)" not in granted
            assert "run_shell(cd /srv/app)" in granted


async def test_enter_confirms_when_a_radio_set_has_focus(workspace: Path) -> None:
    with ScriptedServer() as server:
        server.add(shell_step("touch a.txt"), {"text": "Done."})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "touch it")
            screen = await approval_ready(pilot, app)
            await pilot.press("a")
            hint = str(screen.query_one("#always-hint").render())
            assert "⏎ confirms" in hint
            scope = screen.query_one("#always-scope", RadioSet)
            scope.focus()
            await pilot.press("down")  # move to "saved for this workspace"
            await pilot.press("space")
            await pilot.press("enter")
            await turn_done(pilot, app, 2, server)
            grants = inner(app)._policy.grants.list()
            assert [(str(g.rule), g.scope) for g in grants] == [("run_shell(touch a.txt)", "saved")]
            assert (workspace / "a.txt").exists()


async def test_calls_waiting_behind_the_question_are_counted(workspace: Path) -> None:
    calls = [
        {
            "id": f"call_{n}",
            "name": "run_shell",
            "arguments": json.dumps(with_metadata("run_shell", {"command": f"touch {n}"})),
        }
        for n in range(1, 4)
    ]
    with ScriptedServer() as server:
        server.add({"text": "", "tool_calls": calls}, {"text": "Done."})
        overrides: dict[str, Any] = {
            "provider": {"name": "openai", "model": "scripted"},
            "approval": {"mode": "ask"},
            "agent": {"strategy": "parallel"},
        }
        overrides["provider"].update(base_url=server.openai_base_url, api_key="test-key")
        loaded = load_settings(workspace, overrides=overrides, env={})
        app = app_for(build_session(workspace, loaded))
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "touch three")
            screen = await approval_ready(pilot, app)
            box = screen.query_one("#approval-box")
            await until(pilot, lambda: box.border_subtitle == "2 more waiting", "2 waiting")
            await pilot.press("y")
            second = await approval_ready(pilot, app)
            assert second is not screen
            box = second.query_one("#approval-box")
            await until(pilot, lambda: box.border_subtitle == "1 more waiting", "1 waiting")
            await pilot.press("y")
            third = await approval_ready(pilot, app)
            assert third.query_one("#approval-box").border_subtitle is None
            await pilot.press("y")
            await turn_done(pilot, app, 2, server)
            assert all((workspace / str(n)).exists() for n in range(1, 4))


async def test_a_hostile_why_stays_one_line_above_the_command(workspace: Path) -> None:
    with ScriptedServer() as server:
        server.add(shell_step("touch pwned.txt", why=HOSTILE_WHY, risk="low"), {"text": "ok"})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=(80, 24)) as pilot:
            await send(pilot, app, "check")
            screen = await approval_ready(pilot, app)
            why = str(screen.query_one("#approval-why", Static).render())
            assert "\n" not in why.strip() or why.count("\\n") >= 20  # newlines spelled out
            assert "\\x1b]52;" in why and "\x1b" not in why
            assert "more characters)" in why  # cut, and says so
            shown = screen_text(app)
            assert "\x1b" not in shown and "\x9b" not in shown
            assert "touch pwned.txt" in shown  # the real command, on screen
            question = str(screen.query_one("#approval-question", Static).render())
            assert "computed risk" in question and "MEDIUM" in question
            await pilot.press("n")
            await turn_done(pilot, app, 2, server)
            assert not (workspace / "pwned.txt").exists()


async def test_the_policy_counts_calls_held_behind_the_open_question(workspace: Path) -> None:
    """Sub-agents ask at once: the policy asks one at a time and says how many wait."""
    import asyncio

    from tests.conftest import make_harness
    from tui.events import ApprovalAnswer, ApprovalsWaiting
    from tui.security.approval import CallbackApprover
    from tui.security.permissions import ApprovalMode

    release = asyncio.Event()
    asked: list[ApprovalRequested] = []

    async def slow_yes(request: ApprovalRequested) -> ApprovalAnswer:
        asked.append(request)
        await release.wait()
        return ApprovalAnswer.allow_once()

    h = make_harness(workspace, mode=ApprovalMode.ASK, approver=CallbackApprover(slow_yes))
    calls = [
        asyncio.ensure_future(h.call("run_shell", {"command": f"touch made-{n}"})) for n in range(3)
    ]
    deadline = asyncio.get_running_loop().time() + 10
    while not any(isinstance(e, ApprovalsWaiting) and e.count == 2 for e in h.events):
        assert asyncio.get_running_loop().time() < deadline, h.events
        await asyncio.sleep(0.01)
    assert len(asked) == 1  # one question at a time
    waiting = [e for e in h.events if isinstance(e, ApprovalsWaiting)]
    assert all(e.loop_id == "policy" for e in waiting)
    release.set()
    results = await asyncio.gather(*calls)
    assert not any(r.is_error for r in results)
    last = [e for e in h.events if isinstance(e, ApprovalsWaiting)][-1]
    assert last.count == 0


def test_the_gate_is_closed_until_the_question_is_on_screen() -> None:
    """On a busy machine the first frame can come later than the grace after the modal was
    made: until it does, no key answers, however long the wait, and a key typed meanwhile
    moves the opening as one typed before the modal would."""
    gate = AnswerGate()
    assert not gate.is_open(1e9) and gate.remaining(0.0) == GRACE
    assert not gate.typed(5.0)
    gate.shown(6.0)
    assert not gate.is_open(6.0 + GRACE - 0.01)
    assert gate.is_open(6.0 + GRACE) and gate.typed(6.0 + GRACE)
    late = AnswerGate(last_typed=9.0)  # the prompt's last key came after the first frame
    late.shown(8.0)
    assert late.opens_at() == 9.0 + GRACE


class ModalHost(App[None]):
    """An app that shows one approval modal, alone."""

    def __init__(self, modal: ApprovalScreen) -> None:
        super().__init__()
        self.modal = modal

    def on_mount(self) -> None:
        self.push_screen(self.modal)


class Stepping:
    """A clock that moves ``step`` seconds every time it is read: whatever reads it twice
    in a row sees time pass in between, as a busy machine can make it."""

    def __init__(self, step: float) -> None:
        self.now = 100.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def test_the_keys_line_opens_even_when_the_gate_opens_while_it_is_drawn() -> None:
    """The keys line is drawn and the next look planned from one reading of the clock: read
    once for the line and again for the plan, the gate could open in between, and the line
    stayed closed with no look left to open it."""
    request = shell_request("true")
    modal = ApprovalScreen(request, monotonic=Stepping(GRACE * 0.6))

    async with ModalHost(modal).run_test(size=(80, 24)) as pilot:
        keys = modal.query_one("#approval-keys", Static)
        await until(pilot, lambda: "allow once" in str(keys.render()), "the answer keys", 5)
        assert modal.answering and not modal.has_class("-waiting")


async def test_the_body_is_fitted_again_whenever_the_answers_below_it_change_height() -> None:
    """A fit queued for after the next frame can measure the answers before their new layout
    (a loaded machine did, once the keys line wrapped): the body is fitted again when they
    really change height, so the box never grows past the screen and cuts the keys."""
    command = "\n".join(f"echo line {n}" for n in range(60))
    request = shell_request(command)
    now = [100.0]
    modal = ApprovalScreen(request, monotonic=lambda: now[0])

    async with ModalHost(modal).run_test(size=(80, 24)) as pilot:
        body = modal.query_one(CommandBody)
        box = modal.query_one("#approval-box")
        await until(pilot, lambda: modal.gate.opened is not None, "the question on screen")
        now[0] += 1.0  # open, and no more looks at the clock (each one fits the body too)
        modal.refresh_gate()
        keys = modal.query_one("#approval-keys", Static)
        await until(pilot, lambda: "allow once" in str(keys.render()), "the answer keys")
        await pilot.pause()
        before = body.outer_size.height
        assert box.region.bottom <= 24
        modal.query_one("#approval-question", Static).update("one\ntwo\nthree\nfour")
        await until(pilot, lambda: body.outer_size.height == before - 3, "the body to give way")
        assert box.region.bottom <= 24

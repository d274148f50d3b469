"""Copy to the clipboard (OSC 52) and bell/desktop notices, read from the bytes the app writes.

The app runs in a Pilot against the real loop and a scripted model server; its driver's
``write`` is wrapped to record what goes to the terminal, so each test asserts on the escape
sequences a real terminal would receive, decoded.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.geometry import Offset
from textual.pilot import Pilot
from textual.selection import Selection

from tests.scripted_server import ScriptedServer
from tests.test_ui_app import approval_ready, send, shell_step, turn_done, until
from tui.config import ConfigError, load_settings
from tui.session import AgentSession
from tui.ui.app import AgentApp
from tui.ui.clipboard import MAX_COPY_CHARS, osc52
from tui.ui.messages import PromptSubmitted
from tui.ui.notify import clean, desktop_sequences
from tui.ui.selectable import MAX_SELECTED_LINES, selected_text
from tui.ui.tools.pager import LinesView, OutputPager
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(60)

_OSC52 = re.compile(r"\x1b\]52;c;([A-Za-z0-9+/=]*)\x07")


def make_session(
    workspace: Path, server: ScriptedServer | None, *, notify: dict[str, Any] | None = None
) -> AgentSession:
    provider: dict[str, Any] = {"name": "openai", "model": "scripted"}
    if server is not None:
        provider.update(base_url=server.openai_base_url, api_key="test-key")
    overrides: dict[str, Any] = {"provider": provider, "approval": {"mode": "ask"}}
    if notify is not None:
        overrides["notify"] = notify
    return build_session(workspace, load_settings(workspace, overrides=overrides, env={}))


def record(app: AgentApp) -> list[str]:
    """Everything written to the terminal from now on."""
    written: list[str] = []
    driver = app._driver
    assert driver is not None
    original = driver.write

    def write(data: str) -> None:
        written.append(data)
        original(data)

    driver.write = write  # type: ignore[method-assign]
    return written


def copied(written: list[str]) -> list[str]:
    """The texts the terminal was told to put on the clipboard, decoded."""
    return [base64.b64decode(m).decode() for m in _OSC52.findall("".join(written))]


def toasts(app: AgentApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


# -- the escape sequence ---------------------------------------------------------------------


def test_osc52_carries_hostile_text_inside_base64_only() -> None:
    hostile = "rm -rf x\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9d0;pwned\x07 ünï"
    plain = osc52(hostile, tmux=False)
    assert plain.count("\x1b") == 1 and plain.count("\x07") == 1  # one sequence, nothing more
    assert copied([plain]) == [hostile]
    wrapped = osc52(hostile, tmux=True)
    # Plain (for ``set-clipboard on``) then the passthrough (for ``allow-passthrough on``).
    assert wrapped.startswith(plain + "\x1bPtmux;") and wrapped.endswith("\x1b\\")
    inner = wrapped[len(plain) + len("\x1bPtmux;") : -2]
    assert inner == plain.replace("\x1b", "\x1b\x1b")
    assert copied([inner.replace("\x1b\x1b", "\x1b")]) == [hostile]


def test_notice_text_cannot_end_its_sequence_or_start_another() -> None:
    name = "run\x07\x1b]52;c;ZXZpbA==\x07;x\x9c"
    assert clean(name) == "run ]52,c,ZXZpbA== ,x"
    both = desktop_sequences(f"approval waiting: {name}", "both")
    assert both.count("\x1b") == 2 and both.count("\x07") == 2
    assert both.startswith("\x1b]9;agent-tui: approval waiting: run")
    assert "\x1b]777;notify;agent-tui;approval waiting: run" in both
    assert both.split("\x1b]777;")[1].count(";") == 2  # notify;title;body: no extra field


# -- copy keys and selections ----------------------------------------------------------------


async def test_ctrl_y_copies_the_last_answer(workspace: Path, server: ScriptedServer) -> None:
    server.add({"text": "The answer is **42**.\nSecond line."})
    app = AgentApp(make_session(workspace, server), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        written = record(app)
        await pilot.press("ctrl+y")
        assert copied(written) == [] and "nothing to copy of the last answer" in toasts(app)
        await send(pilot, app, "what is it?")
        await turn_done(pilot, app, 1, server)
        await pilot.press("ctrl+y")
        assert copied(written) == ["The answer is **42**.\nSecond line."]
        assert "copied 34 characters of the last answer" in toasts(app)
        assert app.prompt.text == ""  # the key did not reach the prompt


async def _bang(pilot: Pilot[int], app: AgentApp, command: str) -> Any:
    await send(pilot, app, f"!{command}")
    await until(pilot, lambda: app.tools.blocks or app.approvals.open, "a block or a modal")
    if app.approvals.open is not None:
        await approval_ready(pilot, app)
        await pilot.press("y")
    (block,) = app.tools.blocks.values()
    await until(pilot, lambda: block.state.finished, "the command")
    return block


async def test_c_and_y_on_a_tool_block_copy_its_command_and_output(workspace: Path) -> None:
    app = AgentApp(make_session(workspace, None), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        block = await _bang(pilot, app, "printf 'one\\ntwo\\n'")
        written = record(app)
        block.focus()
        await pilot.press("c")
        await until(pilot, lambda: copied(written), "the command copied")
        await pilot.press("y")
        await until(pilot, lambda: len(copied(written)) == 2, "the output copied")
        assert copied(written) == ["printf 'one\\ntwo\\n'", "one\ntwo"]
        assert "copied 7 characters of the output" in toasts(app)


async def test_enter_and_space_on_a_tool_block_expand_and_fold_it(workspace: Path) -> None:
    app = AgentApp(make_session(workspace, None), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        block = await _bang(pilot, app, "seq 1 40")
        folded = block.size.height
        block.focus()
        await pilot.press("enter")
        await until(pilot, lambda: block.expanded and block.size.height > folded, "expanded")
        await pilot.press("space")
        await until(pilot, lambda: not block.expanded and block.size.height == folded, "folded")


async def test_y_copies_the_whole_saved_output_not_the_kept_tail(workspace: Path) -> None:
    app = AgentApp(make_session(workspace, None), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        block = await _bang(pilot, app, "seq 1 20000")
        assert block.state.output.truncated  # the block keeps only the tail
        written = record(app)
        block.focus()
        await pilot.press("y")
        await until(pilot, lambda: copied(written), "the output copied")
        (text,) = copied(written)
        assert text.split() == [str(n) for n in range(1, 20001)]


async def test_too_large_to_copy_is_refused_and_said(workspace: Path) -> None:
    app = AgentApp(make_session(workspace, None), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        written = record(app)
        app.copy_to_clipboard("x" * (MAX_COPY_CHARS + 1))
        await pilot.pause()
        assert copied(written) == []
        assert any(t.startswith("not copied: 1,000,001 characters") for t in toasts(app))


async def test_a_selection_in_the_chat_is_copied_and_ctrl_c_copies_it_again(
    workspace: Path, server: ScriptedServer
) -> None:
    server.add({"text": "Selectable answer."})
    app = AgentApp(make_session(workspace, server), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "hi")
        await turn_done(pilot, app, 1, server)
        written = record(app)
        answer = app.chat.children[-1]
        answer.text_select_all()
        app.screen.post_message(events.TextSelected())  # what a mouse-up after a drag posts
        await until(pilot, lambda: copied(written), "the selection copied")
        assert copied(written) == ["Selectable answer."]
        await pilot.press("ctrl+c")  # a selection: copied, not an arm-to-quit
        assert copied(written) == ["Selectable answer."] * 2
        assert "Press Ctrl+C again to quit" not in toasts(app)


async def test_a_mouse_drag_in_a_tool_block_selects_what_it_shows(workspace: Path) -> None:
    app = AgentApp(make_session(workspace, None), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        block = await _bang(pilot, app, "printf 'alpha\\nbravo\\n'")
        written = record(app)
        lines = [strip.text.rstrip() for strip in block._build(block.size.width)]
        # Pilot offsets are from the block's edge; the content starts inside its border.
        dx, dy = block.content_region.offset - block.region.offset
        row = lines.index("alpha") + dy
        await pilot.mouse_down(block, offset=(dx + 2, row))
        await pilot.hover(block, offset=(dx + 3, row + 1))
        await pilot.mouse_up(block, offset=(dx + 3, row + 1))
        await until(pilot, lambda: copied(written), "the selection copied")
        assert copied(written) == ["pha\nbrav"]  # the cell under the mouse is in


async def test_a_mouse_drag_in_the_pager_copies_source_text_without_the_gutter(
    workspace: Path,
) -> None:
    app = AgentApp(make_session(workspace, None), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        block = await _bang(pilot, app, "seq 101 20100")
        block.focus()
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OutputPager), "the pager")
        view = app.screen.query_one(LinesView)
        await until(pilot, lambda: len(view.source) == 20000, "the index")
        await pilot.press("home")
        await until(pilot, lambda: view.scroll_offset.y == 0, "the top")
        written = record(app)
        dx, dy = view.content_region.offset - view.region.offset
        dx += len("20000 ")  # the gutter of line numbers
        await pilot.mouse_down(view, offset=(dx + 1, dy))
        await pilot.hover(view, offset=(dx + 2, dy + 2))
        await pilot.mouse_up(view, offset=(dx + 2, dy + 2))
        await until(pilot, lambda: copied(written), "the selection copied")
        assert copied(written) == ["01\n102\n103"]


# -- notifications ---------------------------------------------------------------------------


async def _blur(pilot: Pilot[int], app: AgentApp) -> None:
    app.post_message(events.AppBlur())
    await until(pilot, lambda: not app.app_focus, "the app to lose focus")


async def _submit_away(pilot: Pilot[int], app: AgentApp, text: str) -> None:
    """A prompt sent without a key: a key press tells Textual the person is back."""
    app.post_message(PromptSubmitted(text))
    await pilot.pause()


def notices(sent: str) -> str:
    """The bells and desktop notices in ``sent``; other OSC strings (title…) left out."""
    found = []
    for match in re.finditer(r"\x1b\]([^\x07\x1b]*)\x07|\x07", sent):
        body = match.group(1)
        if body is None or body.startswith(("9;", "777;")):
            found.append(match.group(0))
    return "".join(found)


@pytest.mark.parametrize(
    ("notify", "blurred", "expected"),
    [
        ({}, True, "\x07\x1b]9;agent-tui: approval waiting: run_shell\x07"),
        (
            {"desktop": "osc777", "bell": False},
            True,
            "\x1b]777;notify;agent-tui;approval waiting: run_shell\x07",
        ),
        ({}, False, ""),
        ({"enabled": False}, True, ""),
    ],
    ids=["away-osc9", "away-osc777-no-bell", "focused", "disabled"],
)
async def test_a_waiting_approval_notifies_only_while_away(
    workspace: Path, server: ScriptedServer, notify: dict[str, Any], blurred: bool, expected: str
) -> None:
    server.add(shell_step("touch x"), {"text": "ok"})
    app = AgentApp(make_session(workspace, server, notify=notify), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        written = record(app)
        if blurred:
            await _blur(pilot, app)
        await _submit_away(pilot, app, "make x")
        await approval_ready(pilot, app)
        assert notices("".join(written)) == expected


async def test_a_long_turn_notifies_when_it_ends_away_and_a_short_one_does_not(
    workspace: Path, server: ScriptedServer
) -> None:
    now = [100.0]
    server.add(
        {"text": "slow answer", "delay_between_events": 0.05},
        {"text": "quick answer", "delay_between_events": 0.05},
    )
    notify = {"min_turn_seconds": 10, "desktop": "both"}
    app = AgentApp(
        make_session(workspace, server, notify=notify),
        cursor_blink=False,
        monotonic=lambda: now[0],
    )
    async with app.run_test(size=(120, 40)) as pilot:
        written = record(app)
        await _blur(pilot, app)
        await _submit_away(pilot, app, "take your time")
        clock = app.attention.turn_clock
        await until(pilot, lambda: clock.started is not None, "the turn to start")
        now[0] += 12
        await turn_done(pilot, app, 1, server)
        await until(pilot, lambda: "\x1b]9;" in "".join(written), "the notice")
        sent = "".join(written)
        assert notices(sent) == (
            "\x07\x1b]9;agent-tui: turn completed after 12 s\x07"
            "\x1b]777;notify;agent-tui;turn completed after 12 s\x07"
        )
        written.clear()
        await _submit_away(pilot, app, "now quickly")
        await until(pilot, lambda: clock.started is not None, "the second turn")
        now[0] += 9
        await turn_done(pilot, app, 2, server)
        assert clock.last_answer == "quick answer"
        assert notices("".join(written)) == ""


def test_a_selection_reads_only_the_lines_it_spans_and_at_most_the_cap() -> None:
    read: list[int] = []

    def line(number: int) -> str:
        read.append(number)
        return f"line {number}"

    selection = Selection(Offset(5, 1_000_000), Offset(6, 1_000_002))
    assert selected_text(selection, line, 2_000_000) == "1000000\nline 1000001\nline 1"
    assert read == [1_000_000, 1_000_001, 1_000_002]
    read.clear()
    everything = selected_text(Selection(None, None), line, 2_000_000)
    assert len(read) == MAX_SELECTED_LINES and everything.endswith(f"line {MAX_SELECTED_LINES - 1}")


def test_notify_section_is_read_and_a_wrong_value_names_its_key(workspace: Path) -> None:
    # The person's own file: a workspace's [notify] waits for trust like any unlisted key.
    config = Path(os.environ["AGENT_TUI_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[notify]\ndesktop = "both"\nmin_turn_seconds = 2\nbell = false\n')
    notify = load_settings(workspace, env={}).settings.notify
    assert (notify.enabled, notify.bell, notify.desktop, notify.min_turn_seconds) == (
        True,
        False,
        "both",
        2.0,
    )
    config.write_text('[notify]\ndesktop = "osc8"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(workspace, env={})
    assert "[notify].desktop" in caught.value.msg and "line 2" in caught.value.msg

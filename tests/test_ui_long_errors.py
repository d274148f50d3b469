"""A long error is never cut mid-word with no way to the rest: the block wraps it whole (its
start while folded, saying how much more there is), Enter shows all of it, ``o`` opens it in
the pager; the registry and the loop hand the whole message on.

The real app against the scripted model server; the error is the policy's own refusal of a
command whose programs are not in ``[security].command_allowlist`` — the part that says what
to do comes last, past where a one-line summary stops.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_approval_words import session_with
from tests.test_ui_app import send, shell_step, turn_done, until
from tui.events import ToolCallCompleted
from tui.ui.app import AgentApp
from tui.ui.tools.block import ToolBlock
from tui.ui.tools.pager import OutputPager

pytestmark = pytest.mark.timeout(60)

COMMAND = " && ".join(f"a_rather_long_program_name_number_{n:02d}" for n in range(40))


def block_text(block: ToolBlock) -> str:
    return "\n".join(block.render_line(y).text for y in range(block.size.height))


async def test_a_long_error_is_wrapped_whole_or_opened_in_the_pager(workspace: Path) -> None:
    with ScriptedServer() as server:
        server.add(shell_step(COMMAND), {"text": "I see."})
        session = session_with(workspace, server, "ask", command_allowlist=["echo"])
        completed: list[ToolCallCompleted] = []
        session._bus.add_listener(
            lambda e: completed.append(e) if isinstance(e, ToolCallCompleted) else None
        )
        app = AgentApp(session, cursor_blink=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await send(pilot, app, "run them all")
            await turn_done(pilot, app, 2, server)
            (event,) = completed
            assert event.is_error and len(event.error) > 1_000
            assert event.error.rstrip().endswith("command_allowlist (echo)")  # the fix, last
            assert len(event.summary) <= 200  # the one-line summary alone would lose it

            block = app.tools.blocks["call_1"]
            block.focus()
            await pilot.pause(0.1)
            folded = " ".join(block_text(block).split())
            assert "more characters: enter shows the whole error" in folded
            assert "number_00" in folded

            await pilot.press("enter")
            await until(pilot, lambda: block.expanded, "the block to expand")
            await pilot.pause(0.1)
            whole = "".join(block_text(block).split())
            assert "command_allowlist(echo)" in whole  # every word of it, wrapped
            assert "a_rather_long_program_name_number_39" in whole

            await pilot.press("o")
            await until(pilot, lambda: isinstance(app.screen, OutputPager), "the pager")
            pager = app.screen
            assert isinstance(pager, OutputPager)
            assert pager.description == "the whole error message"
            assert pager.source._data == event.error.encode()  # all of it, to page and search

"""File changes in the app: the approval shows the diff, the block shows what changed.

The real app in a Pilot, against the scripted model server, through the real dispatch path
(registry → policy → modal), so the diff shown is the one the policy read from the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from tests.scripted_server import ScriptedServer
from tests.test_approval_words import session_with
from tests.test_ui_app import app_for, approval_ready, send, turn_done, until
from tui.ui.approval.modal import ApprovalScreen
from tui.ui.tools.block import ToolBlock
from tui.ui.tools.pager import OutputPager

pytestmark = pytest.mark.timeout(60)


def file_step(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "call_1", "name": name, "arguments": json.dumps(arguments)}
    return {"text": "", "tool_calls": [call]}


def body_text(screen: ApprovalScreen) -> str:
    """What the body shows, as plain text (the diff is a Rich group of Text parts)."""
    content = screen.query_one("#approval-command", Static).content
    renderables = getattr(content, "renderables", [content])
    return "\n".join(getattr(part, "plain", str(part)) for part in renderables)


async def test_edit_approval_shows_the_diff_and_the_block_the_result(workspace: Path) -> None:
    (workspace / "app.py").write_text("import os\n\nRETRIES = 3\nprint(RETRIES)\n")
    edit = {"path": "app.py", "old_string": "RETRIES = 3", "new_string": "RETRIES = 5"}
    with ScriptedServer() as server:
        server.add(file_step("edit_file", edit), {"text": "Done."})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "raise the retries")
            await approval_ready(pilot, app)
            screen = app.screen
            assert isinstance(screen, ApprovalScreen)
            shown = body_text(screen)
            # The change, numbered in the old and new file, instead of the raw strings.
            assert "change +1 -1 lines" in shown
            assert " 3    -RETRIES = 3" in shown
            assert "    3 +RETRIES = 5" in shown
            assert "@@ -1,4 +1,4 @@" in shown
            assert "old_string" not in shown and '"app.py"' in shown

            await pilot.press("o")  # the whole diff, in the pager
            await until(pilot, lambda: isinstance(app.screen, OutputPager), "the diff pager")
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), "back")

            await pilot.press("y")
            await turn_done(pilot, app, 2, server)
            block = app.query_one(ToolBlock)
            assert block.state.diff is not None
            assert "+RETRIES = 5" in block.state.diff
            drawn = "\n".join(block.render_line(y).text for y in range(block.size.height))
            assert "-RETRIES = 3" in drawn and "+RETRIES = 5" in drawn
            assert (workspace / "app.py").read_text().count("RETRIES = 5") == 1


async def test_write_over_an_existing_file_approval_shows_the_diff(workspace: Path) -> None:
    (workspace / "notes.md").write_text("# Notes\n\n- keep\n- drop me\n")
    write = {"path": "notes.md", "content": "# Notes\n\n- keep\n- added\n"}
    with ScriptedServer() as server:
        server.add(file_step("write_file", write), {"text": "Done."})
        app = app_for(session_with(workspace, server, "ask"))
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "tidy the notes")
            await approval_ready(pilot, app)
            screen = app.screen
            assert isinstance(screen, ApprovalScreen)
            shown = body_text(screen)
            assert " 4    -- drop me" in shown and "    4 +- added" in shown
            assert "content" not in shown.split("change")[0]  # the raw content is replaced
            await pilot.press("n")
            await turn_done(pilot, app, 2, server)
            assert "drop me" in (workspace / "notes.md").read_text()  # denied: unchanged

"""Inside the app, model and tool text is never markup and never reaches the terminal as an
escape: an answer, a command's output, an error title, a notice.

The real app in a Pilot against the scripted model server; what the terminal would receive is
read from the compositor's rows (every character Textual would write).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_ui_app import app_for, inner, make_session, send, shell_step, turn_done
from tui.events import ErrorEvent, Notice
from tui.ui.app import AgentApp

pytestmark = pytest.mark.timeout(60)

HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;title\x07\x9b2J[b]not bold[/b] [@click=app.quit]x[/]"


def drawn(app: AgentApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_model_and_tool_text_is_never_markup_nor_an_escape(workspace: Path) -> None:
    command = "printf '\\033]52;c;cm0gLXJmIH4=\\007 [red]plain[/red] \\302\\2332J done\\n'"
    with ScriptedServer() as server:
        server.add(shell_step(command), {"text": f"answer {HOSTILE} end"})
        app = app_for(make_session(workspace, server, mode="full-auto"))
        async with app.run_test(size=(160, 50)) as pilot:
            await send(pilot, app, "go")
            await turn_done(pilot, app, 2, server)
            inner(app)._bus.publish(ErrorEvent(message=HOSTILE, title=f"[red]{HOSTILE}"))
            inner(app)._bus.publish(Notice(message=HOSTILE, level="warning"))
            await pilot.pause(0.3)
            shown = drawn(app)
            for control in ("\x1b", "\x07", "\x9b"):
                assert control not in shown, repr(control)
            assert "[b]not bold[/b]" in shown  # shown as written, never interpreted
            assert "[red]plain[/red]" in shown
            assert app.is_running  # the click markup ran nothing

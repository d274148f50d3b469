"""The tmux tools: look at panes, type into them, and manage the agent's own sessions and panes.

Only registered when the backend is a ``TmuxPane`` (see ``builtin_tools``): each tool talks to
the call's backend through that protocol (``common.pane_backend``). ``capture`` looks,
``send_keys`` types, ``manage`` creates and kills sessions and panes within their limits.
The tools' modules load only with a tmux backend; ``common`` is shared with ``run_shell``.
"""

from __future__ import annotations

from typing import Any

from tui.tools.base import Tool


def tmux_tools() -> list[Tool[Any]]:
    """The six tmux tools, in the order the model sees them."""
    from tui.tools.builtin.tmux.capture import TmuxCapturePaneTool
    from tui.tools.builtin.tmux.manage import (
        TmuxCreatePaneTool,
        TmuxCreateSessionTool,
        TmuxKillPaneTool,
        TmuxKillSessionTool,
    )
    from tui.tools.builtin.tmux.send_keys import TmuxSendKeysTool

    return [
        TmuxCapturePaneTool(),
        TmuxSendKeysTool(),
        TmuxCreateSessionTool(),
        TmuxKillSessionTool(),
        TmuxCreatePaneTool(),
        TmuxKillPaneTool(),
    ]

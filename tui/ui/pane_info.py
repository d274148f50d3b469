"""What ``/pane`` says: the agent's tmux session, how to attach to it, whether it is kept.

The agent's shell lives in a tmux session of its own; a person may want to watch or join it
from another terminal, or keep it past quitting. The session knows the tmux session behind its
pane (``SessionAPI.pane_session``) and where the person's own tmux pane is
(``SessionAPI.user_pane``); a target without tmux has nothing to tell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.session_api import SessionAPI


async def pane_lines(session: SessionAPI) -> list[str]:
    """The session, the exact attach command, and the person's own tmux pane if any."""
    lines: list[str] = []
    tmux = await session.pane_session()
    if tmux is not None:
        fate = (
            "kept after you quit: /pane close closes it then"
            if tmux.kept
            else "closed when you quit: /pane keep keeps it"
        )
        lines.append(f"the agent's shell: tmux session {tmux.name} ({fate})")
        lines.append(f"watch or join it from another terminal: {tmux.attach}")
    mine = await session.user_pane()
    if mine is not None:
        lines.append(mine)
    return lines


async def set_kept(session: SessionAPI, keep: bool) -> str:
    """``/pane keep`` / ``/pane close``: the answer to show."""
    tmux = await session.keep_pane(keep)
    if tmux is None:
        return f"no tmux session to keep: the backend is {session.actor}"
    if keep:
        return (
            f"the agent's session {tmux.name} stays when you quit; the next agent-tui started in "
            "this workspace re-attaches it"
        )
    return f"the agent's session {tmux.name} closes when you quit"

"""What ``/pane`` says: the agent's tmux session, how to attach to it, whether it is kept.

The agent's shell lives in a tmux session of its own; a person may want to watch or join it
from another terminal, or keep it past quitting. Everything is asked of the session's pane
(``AgentSession.pane``), which knows its socket and session; a target without tmux has nothing
to tell. Where the person's own tmux pane is, the session tells (``AgentSession.user_pane``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.session import AgentSession


async def pane_lines(session: AgentSession) -> list[str]:
    """The session, the exact attach command, and the person's own tmux pane if any."""
    pane = session.pane()
    lines: list[str] = []
    if pane is not None:
        kept = await pane.is_kept()
        fate = (
            "kept after you quit: /pane close closes it then"
            if kept
            else "closed when you quit: /pane keep keeps it"
        )
        lines.append(f"the agent's shell: tmux session {pane.default_session} ({fate})")
        lines.append(f"watch or join it from another terminal: {pane.attach_command()}")
    mine = await session.user_pane()
    if mine is not None:
        lines.append(mine)
    return lines


async def set_kept(session: AgentSession, keep: bool) -> str:
    """``/pane keep`` / ``/pane close``: the answer to show."""
    pane = session.pane()
    if pane is None:
        return f"no tmux session to keep: the backend is {session.actor}"
    await pane.set_kept(keep)
    name = pane.default_session
    if keep:
        return (
            f"the agent's session {name} stays when you quit; the next agent-tui started in "
            "this workspace re-attaches it"
        )
    return f"the agent's session {name} closes when you quit"

"""The person's own tmux, when agent-tui runs inside one: which pane they are in.

Read only, through libtmux on the socket named by ``$TMUX`` (``path,pid,session``), and only
to tell the person where they are beside the agent's session; nothing is ever typed there.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

from tui.exec.tmux.libtmux_loader import load_libtmux


def _describe(environ: Mapping[str, str]) -> str | None:
    tmux, pane = environ.get("TMUX", ""), environ.get("TMUX_PANE", "")
    socket_path = tmux.split(",", 1)[0]
    if not socket_path or not pane:
        return None
    libtmux = load_libtmux()
    server = libtmux.Server(socket_path=socket_path)
    fmt = "#{pane_id}\t#{session_name}\t#{window_index}\t#{pane_index}"
    result = server.cmd("display-message", "-p", "-t", pane, fmt)
    fields = (result.stdout[0] if result.returncode == 0 and result.stdout else "").split("\t")
    if len(fields) != 4 or fields[0] != pane:
        return f"you are in tmux pane {pane} (its server at {socket_path} did not answer)"
    return (
        f"you are in tmux pane {pane} (session {fields[1]}, window {fields[2]}, "
        f"pane {fields[3]}) on {socket_path}; the agent's shell is on its own server"
    )


async def user_pane(environ: Mapping[str, str] | None = None) -> str | None:
    """One line on the person's own tmux pane; None when agent-tui is not inside tmux."""
    return await asyncio.to_thread(_describe, dict(os.environ if environ is None else environ))

"""The person's own tmux, when agent-tui runs inside one: which pane they are in.

Read only, through libtmux on the socket named by ``$TMUX`` (``path,pid,session``): to tell
the person where they are beside the agent's session, and, when they allow it (``[tmux]
allow_user_pane_capture``), to let ``tmux_capture_pane user_pane=true`` read their pane.
Nothing is ever typed there.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

from tui.exec.backend import BackendError
from tui.exec.tmux.libtmux_loader import load_libtmux
from tui.exec.tmux.sessions import capture_flags


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


def _capture(environ: Mapping[str, str], flags: list[str]) -> tuple[str, str]:
    tmux, pane = environ.get("TMUX", ""), environ.get("TMUX_PANE", "")
    socket_path = tmux.split(",", 1)[0]
    if not socket_path or not pane:
        raise BackendError("agent-tui is not running inside tmux: there is no user pane to read")
    server = load_libtmux().Server(socket_path=socket_path)
    result = server.cmd("capture-pane", "-p", "-t", pane, *flags)
    if result.returncode != 0:
        raise BackendError(f"the user's pane {pane} could not be read: {' '.join(result.stderr)}")
    lines = list(result.stdout)
    while lines and not lines[-1].strip():
        lines.pop()
    return pane, "\n".join(lines)


async def capture_user_pane(
    *,
    join_wrapped: bool = True,
    environ: Mapping[str, str] | None = None,
    **options: Any,
) -> tuple[str, str]:
    """``(pane id, text)`` of the person's own pane: reading only, never typing.

    Whether the agent may read it at all is the caller's decision (``[tmux]
    allow_user_pane_capture``); ``options`` are ``capture_flags``'s.
    """
    flags = (["-J"] if join_wrapped else []) + capture_flags(**options)
    env = dict(os.environ if environ is None else environ)
    return await asyncio.to_thread(_capture, env, flags)

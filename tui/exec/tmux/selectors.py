"""``session`` / ``pane`` selectors: Buddy's way of naming a managed pane, resolved to a pane id.

The tools accept a raw tmux ``target`` and, as Buddy does, a ``session`` (a managed session's
name) and a ``pane`` (a pane's name from ``tmux_create_pane``, its index in the session's
current window, or its ``%id``). Every answer comes from the backend's owner-filtered listing
or ``resolve_target``, so a selector can only ever reach a pane agent-tui created: a person's
own session on the same socket, or another instance's, is "not found", never typed into.
"""

from __future__ import annotations

from typing import Any

from tui.exec.tmux.sessions import NotOurs, canonical_pane_name, canonical_session_name, is_pane_id


async def select_target(
    backend: Any, *, target: str | None, session: str | None, pane: str | int | None
) -> str | None:
    """The pane id the selectors name; None when none is given (the shared pane).

    Raises:
        NotOurs: the session or pane does not exist among agent-tui's own, or ``target``
            was given together with ``session``/``pane``.
    """
    if target is not None and (session is not None or pane is not None):
        raise NotOurs("give either target or session/pane, not both")
    if target is not None:
        return str(await backend.resolve_target(target))
    if session is None and pane is None:
        return None
    session_name = _session(session) if session is not None else backend.default_session
    if pane is None:
        return str(await backend.resolve_target(session_name))
    text = str(pane).strip()
    if is_pane_id(text):
        pane_id = str(await backend.resolve_target(text))
        if session is not None:
            await _check_in_session(backend, pane_id, session_name)
        return pane_id
    if text.isdigit():
        return str(await backend.resolve_target(f"{session_name}:.{int(text)}"))
    try:
        name = canonical_pane_name(text)
    except ValueError as error:
        raise NotOurs(str(error)) from None
    for info in await backend.list_panes(session_name):
        if info.name == name:
            return str(info.pane_id)
    raise NotOurs(f"no pane named {name!r} in agent-tui's session {session_name}")


def _session(session: str) -> str:
    try:
        return canonical_session_name(session)
    except ValueError as error:
        raise NotOurs(str(error)) from None


async def _check_in_session(backend: Any, pane_id: str, session: str) -> None:
    if pane_id not in {info.pane_id for info in await backend.list_panes(session)}:
        raise NotOurs(f"pane {pane_id} is not in agent-tui's session {session}")

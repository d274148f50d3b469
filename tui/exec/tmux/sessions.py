"""Managed tmux sessions and panes: names, ownership tags, limits, listing.

The socket may hold sessions that are not ours (a person's own, another agent's), so nothing
here trusts a name alone: every session we create carries the user option
``@agent_tui_owner <owner>``, and only sessions with our owner are listed, targeted or
killed. Names get an ``atui-`` prefix so ours are recognisable in ``tmux ls`` too, and a
session is created with a placeholder window first so that its ``history-limit`` is set
before the first real pane exists (tmux fixes a pane's history size when it is created).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.exec.backend import BackendError
from tui.exec.tmux.control import ControlClient, quote

PREFIX = "atui-"
OWNER_OPTION = "@agent_tui_owner"
DEFAULT_PANE_OPTION = "@agent_tui_default_pane"
NONCE_OPTION = "@agent_tui_nonce"
PANE_NAME_OPTION = "@agent_tui_pane_name"
"""A pane's name (``tmux_create_pane name=…``), also shown as its title; ``pane=NAME`` finds it."""
PLACEHOLDER = "cat"
"""What a new session's first window runs until the real pane exists: cheap, waits on input."""

_FIELD_SEP = "\t"
_PANE_ID = re.compile(r"%[0-9]+")


class LimitReached(BackendError):
    title = "tmux limit reached"


class NotOurs(BackendError):
    """A session or pane that does not exist or is not tagged with our owner."""

    title = "Not found"


def canonical_session_name(name: str) -> str:
    """``build`` → ``atui-build``: tmux-safe characters, our prefix, at most 64 characters."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", name.strip()).strip("-")
    if not cleaned:
        raise ValueError(f"not a usable session name: {name!r}")
    if not cleaned.startswith(PREFIX):
        cleaned = PREFIX + cleaned
    return cleaned[:64]


def canonical_pane_name(name: str) -> str:
    """``"Web Server"`` → ``web-server``: the session rule without the prefix, 32 characters.

    Lower case, so ``pane="Worker"`` and ``pane="worker"`` find the same pane; never all digits
    or a ``%`` id, which ``pane=`` reads as an index or a pane id.
    """
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", name.strip().lower()).strip("-")[:32]
    if not cleaned or cleaned.isdigit():
        raise ValueError(f"not a usable pane name: {name!r} (letters, digits, - and _)")
    return cleaned


async def name_pane(client: ControlClient, pane_id: str, name: str) -> None:
    """Tag ``pane_id`` with ``name`` (already canonical) and show it as the pane's title."""
    for reply in await client.commands(
        [
            f"set-option -p -t {pane_id} {PANE_NAME_OPTION} {quote(name)}",
            f"select-pane -t {pane_id} -T {quote(name)}",
        ]
    ):
        reply.check()


def capture_flags(
    *,
    escape_sequences: bool = False,
    preserve_trailing_spaces: bool = False,
    escape_non_printable: bool = False,
    start: int | str | None = None,
    end: int | str | None = None,
) -> list[str]:
    """``capture-pane`` flags (``-e -N -C -S -E``), shared by our panes and the person's.

    A line is ``"-"`` (history start / screen end) or a whole number, nothing else: the value
    lands on a tmux command line.
    """
    flags = [
        flag
        for flag, wanted in (
            ("-e", escape_sequences),
            ("-N", preserve_trailing_spaces),
            ("-C", escape_non_printable),
        )
        if wanted
    ]
    for flag, line in (("-S", start), ("-E", end)):
        if line is None:
            continue
        if line != "-" and not isinstance(line, int):
            raise BackendError(f'a capture line must be "-" or a whole number, not {line!r}')
        flags += [flag, str(line)]
    return flags


def is_pane_id(target: str) -> bool:
    return bool(_PANE_ID.fullmatch(target))


@dataclass(frozen=True)
class SessionInfo:
    id: str
    name: str
    windows: int
    attached: int
    is_default: bool = False


@dataclass(frozen=True)
class PaneInfo:
    pane_id: str
    session: str
    window_index: int
    pane_index: int
    command: str
    width: int
    height: int
    dead: bool
    path: str
    is_default: bool = False
    name: str = ""
    """Its name from ``tmux_create_pane name=…`` (canonical), empty when it has none."""

    @property
    def address(self) -> str:
        return f"{self.session}:{self.window_index}.{self.pane_index}"


def _fmt(*fields: str) -> str:
    return quote(_FIELD_SEP.join(f"#{{{field}}}" for field in fields))


async def list_sessions(client: ControlClient, owner: str) -> list[SessionInfo]:
    """Our sessions on the socket (by owner tag), others ignored."""
    lines = await client.command(
        "list-sessions -F "
        + _fmt("session_id", "session_name", OWNER_OPTION, "session_windows", "session_attached")
    )
    sessions = []
    for line in lines:
        parts = line.split(_FIELD_SEP)
        if len(parts) != 5 or parts[2] != owner:
            continue
        sessions.append(SessionInfo(parts[0], parts[1], _int(parts[3]), _int(parts[4])))
    return sessions


async def list_panes(
    client: ControlClient, owner: str, *, session: str | None = None
) -> list[PaneInfo]:
    """Panes of our sessions (optionally one of them), in tmux's order."""
    ours = {info.name for info in await list_sessions(client, owner)}
    if session is not None:
        ours &= {session}
    if not ours:
        return []
    lines = await client.command(
        "list-panes -a -F "
        + _fmt(
            "pane_id",
            "session_name",
            "window_index",
            "pane_index",
            "pane_current_command",
            "pane_width",
            "pane_height",
            "pane_dead",
            "pane_current_path",
            PANE_NAME_OPTION,
        )
    )
    panes = []
    seen: set[str] = set()
    for line in lines:
        parts = line.split(_FIELD_SEP)
        if len(parts) != 10 or parts[1] not in ours or parts[0] in seen:
            continue
        seen.add(parts[0])
        panes.append(
            PaneInfo(
                pane_id=parts[0],
                session=parts[1],
                window_index=_int(parts[2]),
                pane_index=_int(parts[3]),
                command=parts[4],
                width=_int(parts[5]),
                height=_int(parts[6]),
                dead=parts[7] == "1",
                path=parts[8],
                name=parts[9],
            )
        )
    return panes


async def session_owner(client: ControlClient, name: str) -> str:
    target = quote(f"={name}:")
    lines = await client.command(f"display-message -p -t {target} {_fmt(OWNER_OPTION)}")
    return lines[0] if lines else ""


async def setup_new_session(
    client: ControlClient,
    name: str,
    *,
    owner: str,
    history_limit: int,
    shell: str | None,
    cwd: str | None,
) -> str:
    """Turn a just-created session (placeholder window) into ours; the real pane's id.

    Tags it, sets ``history-limit``, opens the real first window, closes the placeholder.
    """
    target = window = quote(f"={name}:")
    (placeholder,) = await client.command(f"display-message -p -t {window} '#{{window_id}}'")
    replies = await client.commands(
        [
            f"set-option -t {target} {OWNER_OPTION} {quote(owner)}",
            f"set-option -t {target} history-limit {int(history_limit)}",
            new_pane_command("new-window", window, shell=shell, cwd=cwd),
        ]
    )
    for reply in replies:
        reply.check()
    pane_id = replies[-1].lines[0].strip()
    await client.commands(
        [
            f"kill-window -t {quote(placeholder)}",
            f"set-option -p -t {pane_id} {OWNER_OPTION} {quote(owner)}",
        ]
    )
    return pane_id


def new_pane_command(
    verb: str, target: str, *, shell: str | None, cwd: str | None, flags: str = ""
) -> str:
    """``new-window``/``split-window`` that prints the new pane's id."""
    parts = [verb, "-P", "-F", "'#{pane_id}'", "-t", target]
    if flags:
        parts.append(flags)
    if cwd:
        parts += ["-c", quote(cwd.replace("#", "##"))]  # -c is format-expanded
    if shell:
        parts.append(quote(shell))
    return " ".join(parts)


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0

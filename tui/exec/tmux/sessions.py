"""Our tmux sessions and panes: their names, the tags that make them ours, listing them.

The socket may hold sessions that are not ours (a person's own, another agent's), so nothing
here trusts a name alone: every session we create carries the user option
``@agent_tui_owner <owner>``, and only sessions with our owner are listed, targeted or
killed. Names get an ``atui-`` prefix so ours are recognisable in ``tmux ls`` too, and a
session is created with a placeholder window first so that its ``history-limit`` is set
before the first real pane exists (tmux fixes a pane's history size when it is created).

An instance's own session carries more tags: its workspace (``@agent_tui_workspace``),
whether it is kept past quit (``@agent_tui_kept``: ``/pane keep``, ``[tmux] keep_session``),
and which agent-tui process made it (``Owner``: this machine's name, the pid and that
process's start time, since a pid alone may be reused), so the next start tells the leftover
of a dead instance from the session of a live one. Each instance's session is named after its
workspace's folder plus a short random id (``atui-myproject-3f2a``): a person finds the agent's
shell in ``tmux ls`` by its workspace, and two instances never meet in one shell.

The person's own tmux, when agent-tui runs inside one, is read here too, never typed into:
which pane they are in (to say where they are beside the agent's session) and, when they allow
it (``[tmux] allow_user_pane_capture``), its text. That goes through libtmux on the socket
``$TMUX`` names, imported only when first needed (``load_libtmux``).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import secrets
import socket
import sys
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from types import ModuleType
from typing import Unpack

from tui.exec import procs
from tui.exec.backend import BackendError
from tui.exec.tmux.control import ControlClient, TmuxCommandError, quote
from tui.exec.tmux_pane import PREFIX, CaptureOptions, PaneInfo, SessionInfo

OWNER_OPTION = "@agent_tui_owner"
DEFAULT_PANE_OPTION = "@agent_tui_default_pane"
NONCE_OPTION = "@agent_tui_nonce"
PANE_NAME_OPTION = "@agent_tui_pane_name"
"""A pane's name (``tmux_create_pane name=…``), also shown as its title; ``pane=NAME`` finds it."""
WORKSPACE_OPTION = "@agent_tui_workspace"
KEPT_OPTION = "@agent_tui_kept"
PID_OPTION = "@agent_tui_pid"
HOST_OPTION = "@agent_tui_host"
START_OPTION = "@agent_tui_start"
CREATOR_VARIABLE = "AGENT_TUI_TMUX_CREATOR"
"""In every tmux client's environment, so a server's global environment names the agent-tui
that started it: a start killed between making its server and marking its session leaves a
session with no marks, and this is how the next start still knows whose it was."""
PLACEHOLDER = "cat"
"""What a new session's first window runs until the real pane exists: cheap, waits on input."""

_FIELD_SEP = "\t"


# -- names ------------------------------------------------------------------------------------

STEM_LIMIT = 40
"""Characters of the workspace name kept: the whole name stays short enough to read."""


def instance_id() -> str:
    """Four hex digits: enough to tell a few instances of one workspace apart."""
    return secrets.token_hex(2)


def workspace_stem(workspace: str | PurePath) -> str:
    """``/home/me/My.Project`` → ``My-Project``; ``/`` → ``root``."""
    name = PurePath(workspace).name
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:STEM_LIMIT].strip("-")
    return stem or "root"


def session_name(workspace: str | PurePath, instance: str) -> str:
    """``atui-<workspace>-<instance>``, tmux-safe."""
    return f"{PREFIX}{workspace_stem(workspace)}-{instance}"


def fresh_session_name(workspace: str | PurePath, taken: Collection[str]) -> str:
    """A name for a new instance's session that no session on the server has yet."""
    while True:
        name = session_name(workspace, instance_id())
        if name not in taken:
            return name


# -- tags ------------------------------------------------------------------------------------


_ME: dict[int, Owner] = {}


@dataclass(frozen=True)
class Owner:
    """One agent-tui process: the machine it runs on, its pid and its start time."""

    host: str
    pid: int
    start: int

    @classmethod
    def me(cls) -> Owner:
        pid = os.getpid()
        if _ME.get(pid) is None:  # a forked child is another process
            own = procs.read(pid)
            _ME[pid] = cls(socket.gethostname(), pid, own.start if own is not None else 0)
        return _ME[pid]

    @classmethod
    def parse(cls, host: str, pid: str, start: str) -> Owner | None:
        """From the session's options; None when they are missing (an older agent-tui)."""
        if not host or not pid.isdigit() or not start.isdigit():
            return None
        return cls(host, int(pid), int(start))

    def alive(self) -> bool | None:
        """True or False on this machine; None when it ran on another one."""
        if self.host != socket.gethostname():
            return None
        current = procs.read(self.pid)
        return current is not None and current.start == self.start

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"

    def token(self) -> str:
        """``host:pid:start``, as ``CREATOR_VARIABLE`` holds it."""
        return f"{self.host}:{self.pid}:{self.start}"

    @classmethod
    def from_token(cls, token: str) -> Owner | None:
        host, _, rest = token.strip().partition(":")
        pid, _, start = rest.partition(":")
        return cls.parse(host, pid, start)


async def tag_session(
    client: ControlClient, session: str, *, workspace: str | None, kept: bool
) -> None:
    """Mark ``session`` as this workspace's and this process's (``Owner``: the next start
    tells a leftover by it); mark it kept when asked (never unmark here)."""
    target = quote(f"={session}:")
    me = Owner.me()
    lines = [
        f"set-option -t {target} {HOST_OPTION} {quote(me.host)}",
        f"set-option -t {target} {PID_OPTION} {me.pid}",
        f"set-option -t {target} {START_OPTION} {me.start}",
    ]
    if workspace:
        lines.append(f"set-option -t {target} {WORKSPACE_OPTION} {quote(workspace)}")
    if kept:
        lines.append(f"set-option -t {target} {KEPT_OPTION} 1")
    if lines:
        for reply in await client.commands(lines):
            reply.check()


async def set_kept(client: ControlClient, session: str, kept: bool) -> None:
    target = quote(f"={session}:")
    if kept:
        await client.command(f"set-option -t {target} {KEPT_OPTION} 1")
    else:
        await client.command(f"set-option -u -t {target} {KEPT_OPTION}")


async def is_kept(client: ControlClient, session: str) -> bool:
    try:
        lines = await client.command(
            f"display-message -p -t {quote(f'={session}:')} '#{{{KEPT_OPTION}}}'"
        )
    except (TmuxCommandError, ValueError):
        return False
    return bool(lines) and lines[0].strip() == "1"


# -- creating and listing ----------------------------------------------------------------------


async def name_pane(client: ControlClient, pane_id: str, name: str) -> None:
    """Tag ``pane_id`` with ``name`` (already canonical) and show it as the pane's title."""
    for reply in await client.commands(
        [
            f"set-option -p -t {pane_id} {PANE_NAME_OPTION} {quote(name)}",
            f"select-pane -t {pane_id} -T {quote(name)}",
        ]
    ):
        reply.check()


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


def capture_flags(
    *,
    join_wrapped: bool = False,
    escape_sequences: bool = False,
    preserve_trailing_spaces: bool = False,
    escape_non_printable: bool = False,
    start: int | str | None = None,
    end: int | str | None = None,
) -> list[str]:
    """``capture-pane`` flags (``-J -e -N -C -S -E``), shared by our panes and the person's.

    A line is ``"-"`` (history start / screen end) or a whole number, nothing else: the value
    lands on a tmux command line.
    """
    flags = [
        flag
        for flag, wanted in (
            ("-J", join_wrapped),
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


# -- the person's own tmux (read only) ------------------------------------------------------

_LOCK = threading.Lock()


def load_libtmux() -> ModuleType:
    """The ``libtmux`` module, imported once whatever ``sys.stdout`` is at the time."""
    loaded = sys.modules.get("libtmux")
    if loaded is not None:
        return loaded
    with _LOCK:
        stdout = sys.stdout
        if getattr(stdout, "encoding", None) is not None:
            return importlib.import_module("libtmux")
        sys.stdout = sys.__stdout__
        try:
            return importlib.import_module("libtmux")
        finally:
            sys.stdout = stdout


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
    *, environ: Mapping[str, str] | None = None, **options: Unpack[CaptureOptions]
) -> tuple[str, str]:
    """``(pane id, text)`` of the person's own pane: reading only, never typing.

    Whether the agent may read it at all is the caller's decision (``[tmux]
    allow_user_pane_capture``); ``options`` are ``capture_flags``'s (wrapped lines joined
    unless ``join_wrapped`` is False).
    """
    given = CaptureOptions(join_wrapped=True)
    given.update(options)
    flags = capture_flags(**given)
    env = dict(os.environ if environ is None else environ)
    return await asyncio.to_thread(_capture, env, flags)

"""The sessions and panes the tmux tools list, create and kill, within their limits.

Only what carries our owner tag is listed or killed; the shared session and the shared pane
are never killed (their shell is the one the person watches). New sessions and panes are set
up before they are returned, so a command can be typed into them at once, and each counts
against ``max_sessions``/``max_panes``. Sessions created here are remembered
(``created``): they close with our own session at quit unless it is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from tui.exec.backend import BackendError
from tui.exec.tmux.clients import ClientPool
from tui.exec.tmux.control import ControlClient, TmuxCommandError, quote
from tui.exec.tmux.pane_setup import PaneSetup
from tui.exec.tmux.panes import PaneRegistry
from tui.exec.tmux.sessions import (
    OWNER_OPTION,
    LimitReached,
    NotOurs,
    PaneInfo,
    SessionInfo,
    canonical_session_name,
    list_panes,
    list_sessions,
    name_pane,
    new_pane_command,
    setup_new_session,
)
from tui.exec.tmux.shared import SharedSession

Direction = Literal["right", "below", "window"]


class ManagedSessions:
    """Lists, creates and kills the tools' sessions and panes.

    Args:
        shared, clients, panes, setup: The collaborators it finds, attaches and sets up with.
        max_sessions, max_panes: Limits on what may be created (the shared ones included).
        mark_used: Called with each pane created, so the mirror follows it.
    """

    def __init__(
        self,
        shared: SharedSession,
        clients: ClientPool,
        panes: PaneRegistry,
        setup: PaneSetup,
        *,
        max_sessions: int,
        max_panes: int,
        mark_used: Callable[[str], None],
    ) -> None:
        self.shared = shared
        self.clients = clients
        self.panes = panes
        self.setup = setup
        self.max_sessions = max_sessions
        self.max_panes = max_panes
        self.mark_used = mark_used
        self.created: set[str] = set()
        """Sessions the tools created here: closed with ours unless ours is kept."""

    @property
    def owner(self) -> str:
        return self.shared.owner

    async def list_sessions(self) -> list[SessionInfo]:
        await self.shared.ensure_started(self.shared.notices)
        sessions = await list_sessions(await self.shared.primary(), self.owner)
        return [
            SessionInfo(s.id, s.name, s.windows, s.attached, s.name == self.shared.session)
            for s in sessions
        ]

    async def list_panes(self, session: str | None = None) -> list[PaneInfo]:
        await self.shared.ensure_started(self.shared.notices)
        name = _session_name(session) if session else None
        panes = await list_panes(await self.shared.primary(), self.owner, session=name)
        return [
            PaneInfo(**{**p.__dict__, "is_default": p.pane_id == self.shared.pane_id})
            for p in panes
        ]

    async def create_session(
        self, name: str, *, cwd: str | None = None, pane_name: str | None = None
    ) -> tuple[str, str]:
        """A new tagged session with one set-up pane: ``(session name, pane id)``."""
        await self.shared.ensure_started(self.shared.notices)
        session = _session_name(name)
        primary = await self.shared.primary()
        existing = await list_sessions(primary, self.owner)
        if any(info.name == session for info in existing):
            raise BackendError(f"session {session} already exists")
        if len(existing) >= self.max_sessions:
            raise LimitReached(
                f"already {len(existing)} agent-tui sessions (max_sessions={self.max_sessions});"
                " kill one with tmux_kill_session first"
            )
        await self._check_pane_limit(primary)
        try:
            await primary.command(f"has-session -t {quote(f'={session}:')}")
        except TmuxCommandError:
            pass
        else:
            raise BackendError(f"a session named {session} exists and is not agent-tui's")
        client, _, _ = await self.clients.connect(session, create=True)
        walls = self.shared.shells.base()
        start = cwd or self.shared.default_cwd
        pane_id = await setup_new_session(
            client,
            session,
            owner=self.owner,
            history_limit=self.shared.history_limit,
            shell=await self.shared.shells.command(walls, start),
            cwd=start,
        )
        await self.shared.shells.tag(client, pane_id, walls)
        if pane_name:
            await name_pane(client, pane_id, pane_name)
        await self.setup.set_up(pane_id, session, created=True)
        self.mark_used(pane_id)
        self.created.add(session)
        return session, pane_id

    async def kill_session(self, name: str) -> str:
        await self.shared.ensure_started(self.shared.notices)
        session = _session_name(name)
        if session == self.shared.session:
            raise BackendError(
                f"{session} is the shared session and cannot be killed; kill its extra panes, "
                "or stop a program with tmux_send_keys C-c"
            )
        primary = await self.shared.primary()
        if session not in {info.name for info in await list_sessions(primary, self.owner)}:
            raise NotOurs(f"no agent-tui session {session}")
        client = self.clients.pop(session)
        await primary.command(f"kill-session -t {quote(f'={session}:')}")
        if client is not None:
            await client.close()
        self.panes.forget_session(session, "its session was killed")
        return session

    async def create_pane(
        self,
        *,
        session: str | None = None,
        target: str | None = None,
        direction: Direction = "below",
        cwd: str | None = None,
        name: str | None = None,
    ) -> str:
        """A new set-up pane: split ``target`` (or the session's active pane), or a window."""
        shared = self.shared
        await shared.ensure_started(shared.notices)
        primary = await shared.primary()
        await self._check_pane_limit(primary)
        anchor = await shared.resolve_target(
            target if target is not None else session or shared.session
        )
        (owner_session,) = await primary.command(
            f"display-message -p -t {anchor} '#{{session_name}}'"
        )
        if name and any(
            p.name == name for p in await list_panes(primary, self.owner, session=owner_session)
        ):
            raise BackendError(f"session {owner_session} already has a pane named {name!r}")
        client = await self.clients.client(owner_session)  # attached before the pane makes output
        walls = shared.shells.base()
        shell = await shared.shells.command(walls, cwd or shared.default_cwd)
        if direction == "window":
            command = new_pane_command(
                "new-window", quote(f"={owner_session}:"), shell=shell, cwd=cwd
            )
        else:
            flag = "-h" if direction == "right" else "-v"
            command = new_pane_command(
                "split-window",
                anchor,
                shell=shell,
                cwd=cwd or shared.default_cwd,
                flags=flag,
            )
        (line,) = await client.command(command)
        pane_id = line.strip()
        await client.command(f"set-option -p -t {pane_id} {OWNER_OPTION} {quote(self.owner)}")
        await shared.shells.tag(client, pane_id, walls)
        if name:
            await name_pane(client, pane_id, name)
        await self.setup.set_up(pane_id, owner_session, created=True)
        self.mark_used(pane_id)
        return pane_id

    async def kill_pane(self, target: str) -> str:
        await self.shared.ensure_started(self.shared.notices)
        pane_id = await self.shared.resolve_target(target)
        if pane_id == self.shared.pane_id:
            raise BackendError(
                f"{pane_id} is the shared pane and cannot be killed; stop what runs there "
                "with tmux_send_keys C-c"
            )
        pane = self.panes.pop(pane_id)
        if pane is not None:
            pane.fail("the pane was killed")
        await (await self.shared.primary()).command(f"kill-pane -t {pane_id}")
        return pane_id

    async def _check_pane_limit(self, client: ControlClient) -> None:
        count = len(await list_panes(client, self.owner))
        if count >= self.max_panes:
            raise LimitReached(
                f"already {count} agent-tui panes (max_panes={self.max_panes}); kill one with "
                "tmux_kill_pane first"
            )


def _session_name(name: str) -> str:
    try:
        return canonical_session_name(name)
    except ValueError as error:
        raise BackendError(str(error)) from None

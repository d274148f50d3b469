"""The sessions and panes the tmux tools list, create and kill, within their limits.

Only what carries our owner tag is listed or killed; the shared session and the shared pane
are never killed (their shell is the one the person watches). New sessions and panes are set
up before they are returned, so a command can be typed into them at once, and each counts
against ``max_sessions``/``max_panes``. Sessions created here are remembered
(``created_sessions``): they close with our own session at quit unless it is kept.
"""

from __future__ import annotations

from tui.exec.backend import BackendError
from tui.exec.tmux.control import ControlClient, TmuxCommandError, quote
from tui.exec.tmux.sessions import (
    OWNER_OPTION,
    list_panes,
    list_sessions,
    name_pane,
    new_pane_command,
    setup_new_session,
)
from tui.exec.tmux.shared import SharedShell
from tui.exec.tmux_pane import (
    Direction,
    LimitReached,
    NotOurs,
    PaneInfo,
    SessionInfo,
    canonical_session_name,
)


class ManagedPanes(SharedShell):
    """The tmux backend's sessions and panes for the tools; see the module docstring."""

    async def list_sessions(self) -> list[SessionInfo]:
        await self.ensure_started(self._notices)
        sessions = await list_sessions(await self._primary(), self.owner)
        return [
            SessionInfo(s.id, s.name, s.windows, s.attached, s.name == self.default_session)
            for s in sessions
        ]

    async def list_panes(self, session: str | None = None) -> list[PaneInfo]:
        await self.ensure_started(self._notices)
        name = _session_name(session) if session else None
        panes = await list_panes(await self._primary(), self.owner, session=name)
        return [PaneInfo(**{**p.__dict__, "is_default": p.pane_id == self._pane_id}) for p in panes]

    async def create_session(
        self, name: str, *, cwd: str | None = None, pane_name: str | None = None
    ) -> tuple[str, str]:
        """A new tagged session with one set-up pane: ``(session name, pane id)``."""
        await self.ensure_started(self._notices)
        session = _session_name(name)
        primary = await self._primary()
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
        client, _, _ = await self._clients.connect(session, create=True)
        walls = self._shells.base()
        start = cwd or self.default_cwd
        pane_id = await setup_new_session(
            client,
            session,
            owner=self.owner,
            history_limit=self.history_limit,
            shell=await self._shells.command(walls, start),
            cwd=start,
        )
        await self._shells.tag(client, pane_id, walls)
        if pane_name:
            await name_pane(client, pane_id, pane_name)
        await self._shells.set_up(client, pane_id, session, created=True)
        self._mark_used(pane_id)
        self.created_sessions.add(session)
        return session, pane_id

    async def kill_session(self, name: str) -> str:
        await self.ensure_started(self._notices)
        session = _session_name(name)
        if session == self.default_session:
            raise BackendError(
                f"{session} is the shared session and cannot be killed; kill its extra panes, "
                "or stop a program with tmux_send_keys C-c"
            )
        primary = await self._primary()
        if session not in {info.name for info in await list_sessions(primary, self.owner)}:
            raise NotOurs(f"no agent-tui session {session}")
        client = self._clients.pop(session)
        await primary.command(f"kill-session -t {quote(f'={session}:')}")
        if client is not None:
            await client.close()
        self._forget_session(session, "its session was killed")
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
        await self.ensure_started(self._notices)
        primary = await self._primary()
        await self._check_pane_limit(primary)
        anchor = await self.resolve_target(
            target if target is not None else session or self.default_session
        )
        (owner_session,) = await primary.command(
            f"display-message -p -t {anchor} '#{{session_name}}'"
        )
        if name and any(
            p.name == name for p in await list_panes(primary, self.owner, session=owner_session)
        ):
            raise BackendError(f"session {owner_session} already has a pane named {name!r}")
        client = await self._clients.client(owner_session)  # attached before the pane makes output
        walls = self._shells.base()
        shell = await self._shells.command(walls, cwd or self.default_cwd)
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
                cwd=cwd or self.default_cwd,
                flags=flag,
            )
        (line,) = await client.command(command)
        pane_id = line.strip()
        await client.command(f"set-option -p -t {pane_id} {OWNER_OPTION} {quote(self.owner)}")
        await self._shells.tag(client, pane_id, walls)
        if name:
            await name_pane(client, pane_id, name)
        await self._shells.set_up(client, pane_id, owner_session, created=True)
        self._mark_used(pane_id)
        return pane_id

    async def kill_pane(self, target: str) -> str:
        await self.ensure_started(self._notices)
        pane_id = await self.resolve_target(target)
        if pane_id == self._pane_id:
            raise BackendError(
                f"{pane_id} is the shared pane and cannot be killed; stop what runs there "
                "with tmux_send_keys C-c"
            )
        pane = self._panes.pop(pane_id)
        if pane is not None:
            pane.fail("the pane was killed")
        await (await self._primary()).command(f"kill-pane -t {pane_id}")
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

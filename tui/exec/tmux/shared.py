"""The shared session and its shared pane: started, found again, recreated when gone.

The agent's commands go to one shared pane of one session unless a call names another pane.
``SharedSession`` keeps a live control client on that session: it attaches (or creates the
session, and the server with it) on first use and again after the server was killed or the
session closed, and it opens a fresh shared pane when the old one died, was killed or was
moved out of the session. Every such recovery leaves a notice, because the shell state went
with it. It also turns a target the model names (``%3``, ``build``, ``build:1.0``) into a pane
id, only ever among sessions tagged with our owner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from tui.exec.backend import BackendError
from tui.exec.tmux import lifecycle
from tui.exec.tmux.clients import ClientPool
from tui.exec.tmux.control import ControlClient, ControlClosed, TmuxCommandError, quote
from tui.exec.tmux.markers import detect_shell
from tui.exec.tmux.pane_setup import PaneSetup
from tui.exec.tmux.pane_shells import PaneShells
from tui.exec.tmux.panes import ManagedPane, PaneRegistry, pane_status
from tui.exec.tmux.sessions import (
    DEFAULT_PANE_OPTION,
    OWNER_OPTION,
    PANE_NAME_OPTION,
    NotOurs,
    canonical_session_name,
    is_pane_id,
    list_sessions,
    new_pane_command,
    setup_new_session,
)
from tui.security.confinement import Confinement


class SharedSession:
    """The shared session's client and pane, and targets resolved among our sessions.

    Args:
        clients, panes, setup: The collaborators it starts clients and sets panes up with.
        session: The shared session's name (canonical).
        owner, history_limit, shell, default_cwd: How sessions and panes are created.
        workspace, own_session, keep_session: How our own session is tagged (``lifecycle``).
        notices: Notices of calls that return none, for the next call that does.
    """

    def __init__(
        self,
        clients: ClientPool,
        panes: PaneRegistry,
        setup: PaneSetup,
        *,
        session: str,
        owner: str,
        history_limit: int,
        shell: str | None,
        default_cwd: str | None,
        workspace: str | None,
        own_session: bool,
        keep_session: bool,
        notices: list[str],
        shells: PaneShells | None = None,
    ) -> None:
        self.clients = clients
        self.shells = shells or PaneShells(shell, None)
        self.panes = panes
        self.setup = setup
        self.session = session
        self.owner = owner
        self.history_limit = history_limit
        self.shell = shell
        self.default_cwd = default_cwd
        self.workspace = workspace
        self.own_session = own_session
        self.keep_session = keep_session
        self.notices = notices
        self.pane_id: str | None = None
        """The shared pane (None before the first start)."""
        self.started_once = False
        self._start_lock = asyncio.Lock()
        self.walled: dict[str, str] = {}
        """Windows beside the shared pane for commands approved with other walls (an approval
        in ask mode, a command run outside the sandbox): ``Confinement.key`` → pane id."""

    @property
    def target(self) -> str:
        """The shared session as a tmux target (quoted)."""
        return quote(f"={self.session}:")

    async def ensure_started(
        self, notices: list[str], *, env: Mapping[str, str] | None = None
    ) -> None:
        """A live control client on the shared session, recreating server or session."""
        client = self.clients.open_client(self.session)
        if client is not None and self.pane_id:
            return
        async with self._start_lock:
            client = self.clients.open_client(self.session)
            if client is not None and self.pane_id:
                return
            if self.clients.env is None and env is not None:
                self.clients.env = dict(env)
            client, created, why = await self.clients.connect(self.session, create=True)
            if self.own_session:
                await lifecycle.tag_session(
                    client, self.session, workspace=self.workspace, kept=self.keep_session
                )
            if created:
                walls = self.shells.base()
                pane_id = await setup_new_session(
                    client,
                    self.session,
                    owner=self.owner,
                    history_limit=self.history_limit,
                    shell=await self.shells.command(walls, self.default_cwd),
                    cwd=self.default_cwd,
                )
                await client.command(f"set-option -t {self.target} {DEFAULT_PANE_OPTION} {pane_id}")
                await self.shells.tag(client, pane_id, walls)
                self.pane_id = pane_id
                await self.setup.set_up(pane_id, self.session, created=True)
                if self.started_once:
                    notices.append(
                        f"{why}; started a fresh shared pane {pane_id} and set it up again: "
                        "its shell state (cwd, variables, history) was lost"
                    )
            else:
                (line,) = await client.command(
                    f"display-message -p -t {self.target} '#{{{DEFAULT_PANE_OPTION}}}'"
                )
                self.pane_id = line.strip() or None
            self.started_once = True

    async def shared_pane(self, notices: list[str]) -> ManagedPane:
        """The shared pane, recreated (with a notice) when it died or was killed."""
        async with self._start_lock:
            pane_id = self.pane_id
            client = await self.clients.client(self.session)
            status = await pane_status(client, pane_id) if pane_id else None
            moved = status is not None and status.session != self.session
            if pane_id is None or status is None or status.dead or moved:
                new = await self._new_shared_pane(client)
                if pane_id is not None:
                    why = (
                        "moved out of the shared session"
                        if moved
                        else "gone (killed, or its shell exited)"
                    )
                    notices.append(
                        f"the shared pane {pane_id} was {why}; "
                        f"opened {new} and set it up again: its shell state (cwd, variables, "
                        "history) was lost"
                    )
                pane_id = new
            elif pane_id not in self.panes and detect_shell(status.command) is None:
                raise BackendError(
                    f"the shared pane {pane_id} is running `{status.command}`, not a shell"
                )
        pane = await self.managed(pane_id)
        walls = self.shells.base()
        if walls is not None and pane.confinement != walls:
            await self.restart_in(pane, walls, notices)
            pane = await self.managed(pane_id)
        return pane

    async def restart_in(self, pane: ManagedPane, walls: Confinement, notices: list[str]) -> None:
        """Start the shared pane's shell afresh inside ``walls`` (the mode changed)."""
        async with pane.lock:
            client = await self.clients.client(pane.session)
            cwd = (pane.prompt.cwd if pane.prompt is not None else None) or self.default_cwd
            command = await self.shells.command(walls, cwd)
            was = pane.confinement.label if pane.confinement else "no known sandbox"
            self.panes.pop(pane.pane_id)
            pane.fail("its shell was restarted in a new sandbox")
            parts = ["respawn-pane", "-k", "-t", pane.pane_id]
            if cwd:
                parts += ["-c", quote(cwd.replace("#", "##"))]
            if command:
                parts.append(quote(command))
            await client.command(" ".join(parts))
            await self.shells.tag(client, pane.pane_id, walls)
        await self.setup.set_up(pane.pane_id, pane.session, created=True)
        notices.append(
            f"the shared pane {pane.pane_id}'s shell was restarted for the new approval mode: it "
            f"ran {was}, it now runs {walls.label} (its variables and history were reset)"
        )

    async def walled_pane(self, walls: Confinement, notices: list[str]) -> ManagedPane:
        """The window for commands approved with ``walls`` other than the shared pane's."""
        pane_id = self.walled.get(walls.key)
        client = await self.clients.client(self.session)
        status = await pane_status(client, pane_id) if pane_id else None
        if pane_id is None or status is None or status.dead or status.session != self.session:
            name = "outside" if walls.outside else f"approved-{walls.key}"
            command = await self.shells.command(walls, self.default_cwd)
            (line,) = await client.command(
                new_pane_command(
                    "new-window", self.target, shell=command, cwd=self.default_cwd, flags="-d"
                )
            )
            pane_id = line.strip()
            await client.commands(
                [
                    f"set-option -p -t {pane_id} {OWNER_OPTION} {quote(self.owner)}",
                    f"set-option -p -t {pane_id} {PANE_NAME_OPTION} {quote(name)}",
                    f"select-pane -t {pane_id} -T {quote(walls.label)}",
                    f"rename-window -t {pane_id} {quote(name)}",
                ]
            )
            await self.shells.tag(client, pane_id, walls)
            await self.setup.set_up(pane_id, self.session, created=True)
            self.walled[walls.key] = pane_id
            notices.append(f"this command runs in window {name} ({pane_id}): {walls.label}")
        return await self.managed(pane_id)

    async def _new_shared_pane(self, client: ControlClient) -> str:
        walls = self.shells.base()
        command = await self.shells.command(walls, self.default_cwd)
        (line,) = await client.command(
            new_pane_command("new-window", self.target, shell=command, cwd=self.default_cwd)
        )
        pane_id = line.strip()
        await client.commands(
            [
                f"set-option -p -t {pane_id} {OWNER_OPTION} {quote(self.owner)}",
                f"set-option -t {self.target} {DEFAULT_PANE_OPTION} {pane_id}",
            ]
        )
        await self.shells.tag(client, pane_id, walls)
        self.pane_id = pane_id
        await self.setup.set_up(pane_id, self.session, created=True)
        return pane_id

    async def managed(self, pane_id: str) -> ManagedPane:
        """``pane_id`` as a managed pane, set up now if it was not yet."""
        pane = self.panes.get(pane_id)
        if pane is not None:
            return pane
        client = await self.primary()
        (line,) = await client.command(
            f"display-message -p -t {pane_id} '#{{session_name}}\t#{{pane_current_command}}'"
        )
        session, _, command = line.partition("\t")
        if not session:
            raise NotOurs(f"pane {pane_id} is gone")
        if detect_shell(command) is None:
            raise BackendError(
                f"pane {pane_id} is running `{command}`, not a shell: commands cannot be "
                "typed into it (use tmux_send_keys)"
            )
        await self.setup.set_up(pane_id, session, created=False)
        pane = self.panes.get(pane_id)
        assert pane is not None
        return pane

    async def pane_for_command(
        self,
        target: str | None,
        notices: list[str],
        env: Mapping[str, str] | None,
        confinement: Confinement | None = None,
    ) -> ManagedPane:
        """The managed pane a command goes to: ``target``'s, or the shared one, or the window
        of the walls it was approved for when those differ from the shared pane's.

        Raises:
            BackendError: ``target``'s walls are wider than the command was approved for.
        """
        for attempt in range(2):
            try:
                await self.ensure_started(notices, env=env)
                if target is None:
                    base = self.shells.base()
                    if base is None or confinement is None or confinement == base:
                        return await self.shared_pane(notices)
                    return await self.walled_pane(confinement, notices)
                pane_id = await self.resolve_target(target)
                pane = await self.managed(pane_id)
                self.shells.check(pane.confinement, confinement, pane_id)
                return pane
            except ControlClosed:
                # The session or server went away before its %exit reached us: once more,
                # now that the client is known to be gone (this recreates the shared pane).
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def primary(self) -> ControlClient:
        """Any live client: every command reaches the same server."""
        client = self.clients.open_client(self.session) or self.clients.any_open()
        if client is not None:
            return client
        await self.ensure_started(self.notices)
        client = self.clients.known(self.session)
        assert client is not None
        return client

    async def client_for(self, pane_id: str) -> ControlClient:
        """The client of a managed pane's session, else any live client."""
        pane = self.panes.get(pane_id)
        return await self.clients.client(pane.session) if pane else await self.primary()

    async def resolve_target(self, target: str) -> str:
        """A pane id of ours for ``%3``, ``build`` (a session), ``build:1.0``; else NotOurs."""
        target = target.strip()
        if not target:
            raise NotOurs("empty target")
        client = await self.primary()
        if is_pane_id(target):
            lookup = target
        else:
            session, _, rest = target.partition(":")
            try:
                name = canonical_session_name(session)
            except ValueError:
                raise NotOurs(f"{target!r} is not a pane or session name") from None
            lookup = f"={name}:{rest}"
        try:
            (line,) = await client.command(
                f"display-message -p -t {quote(lookup)} '#{{pane_id}}\t#{{session_name}}'"
            )
        except (TmuxCommandError, ValueError):
            raise NotOurs(f"no pane {target!r} in agent-tui's tmux sessions") from None
        pane_id, _, session_name = line.partition("\t")
        ours = {info.name for info in await list_sessions(client, self.owner)}
        if session_name not in ours or (is_pane_id(target) and pane_id != target):
            raise NotOurs(f"no pane {target!r} in agent-tui's tmux sessions")
        return pane_id

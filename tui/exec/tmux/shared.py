"""The shared shell: the state every part of the tmux backend works on, and finding panes.

``TmuxBackend`` is one class written in four parts, each a file: this base (the settings, the
control clients, the managed panes, the shared session and pane, pane output and pane use),
``jobs`` (a command's life in a pane), ``pane_io`` (screens and keys) and ``managed`` (the
sessions and panes the tools create and kill). Each part's methods work on the same state
directly, so no method of the backend only passes a call on.

The agent's commands go to one shared pane of one session unless a call names another pane.
A live control client is kept on that session: it attaches (or creates the session, and the
server with it) on first use and again after the server was killed or the session closed, and
a fresh shared pane opens when the old one died, was killed or was moved out of the session.
Every such recovery leaves a notice, because the shell state went with it. A target the model
names (``%3``, ``build``, ``build:1.0``) becomes a pane id only among sessions tagged with our
owner. Every ``%output`` a control client hears is routed to its ``ManagedPane`` (its prompt
watch and running job), then to the pane's raw-output listeners (the mirror), which also hear
which pane the agent acted on last; a failing listener is logged and skipped, never allowed
to stop the control client's reader.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from tui.exec.backend import BackendError, ExecutionBackend
from tui.exec.local import LocalBackend
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.tmux.control import ControlClient, ControlClosed, TmuxCommandError, quote
from tui.exec.tmux.markers import detect_shell
from tui.exec.tmux.panes import ManagedPane, PaneRegistry, pane_status
from tui.exec.tmux.server import ClientPool, Place, attach_command
from tui.exec.tmux.sessions import (
    DEFAULT_PANE_OPTION,
    OWNER_OPTION,
    PANE_NAME_OPTION,
    list_sessions,
    new_pane_command,
    setup_new_session,
    tag_session,
)
from tui.exec.tmux.shells import PaneShells
from tui.exec.tmux_pane import NotOurs, canonical_session_name, is_pane_id
from tui.security.confinement import Confinement

log = logging.getLogger(__name__)


class SharedShell(ExecutionBackend):
    """The tmux backend's state and its shared session and pane; see the module docstring.

    Args:
        host: Where tmux runs (must support ``spawn``) and where files are read and written.
        socket_name: The tmux server (``tmux -L``); private to agent-tui by default.
        session: The shared session's name (canonicalised to ``atui-…``).
        history_limit: Scrollback of panes we create.
        shell: Command new panes run (``bash --norc``); None: tmux's ``default-shell``.
        owner: The tag on everything we create; only tagged sessions are listed or killed.
        default_cwd: Where new panes start.
        env: Environment for the tmux client (and so a server it starts, and its panes).
        config: ``tmux -f`` file for a server we start (None: tmux's usual ~/.tmux.conf).
        max_sessions, max_panes: Limits on what the tools may create (default included).
        allow_user_pane_capture: ``[tmux] allow_user_pane_capture``: the capture tool may
            read the person's own pane (``$TMUX_PANE``).
        width, height: Size of sessions we create while nobody is attached.
        workspace: The workspace's real path, tagged on the session (``sessions``).
        own_session: The session is this instance's own: ``close`` kills it (and the
            sessions the tools created) unless it is kept.
        keep_session: Mark the session kept from the start (``[tmux] keep_session``).
        sandbox: Where the panes' shells start (default: the host's, for a local host).
        take_turns: The server is shared by instances (a fixed ``[tmux] session``): attach
            and create holding its start lock (``server.start_turn``).
    """

    def __init__(
        self,
        host: ExecutionBackend,
        *,
        socket_name: str = "agent-tui",
        session: str = "agent",
        history_limit: int = 50_000,
        shell: str | None = None,
        owner: str = "agent-tui",
        default_cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        config: str | None = None,
        max_sessions: int = 8,
        max_panes: int = 16,
        allow_user_pane_capture: bool = False,
        width: int = 200,
        height: int = 50,
        workspace: str | None = None,
        own_session: bool = False,
        keep_session: bool = False,
        sandbox: Sandbox | None = None,
        take_turns: bool = False,
    ) -> None:
        if not host.SUPPORTS_SPAWN:
            raise BackendError(f"{host.actor} cannot host tmux: it cannot start processes")
        self.host = host
        self.socket_name = socket_name
        self.default_session = canonical_session_name(session)
        self.history_limit = history_limit
        self.owner = owner
        self.default_cwd = default_cwd
        self.max_sessions = max_sessions
        self.max_panes = max_panes
        self.allow_user_pane_capture = allow_user_pane_capture
        """The person let ``tmux_capture_pane user_pane=true`` read their own pane."""
        self.width = width
        self.height = height
        self.workspace = workspace
        self.own_session = own_session
        self.keep_session = keep_session
        self.sandbox = sandbox if sandbox is not None else getattr(host, "sandbox", None)
        self.take_turns = take_turns
        self.created_sessions: set[str] = set()
        """Sessions the tools created here: closed with ours unless ours is kept."""
        self._notices: list[str] = []
        """Notices from calls that return none (send_keys, list_…): the next run or capture
        reports them, so a recreated pane is never silent."""
        self._panes = PaneRegistry()
        self._shells = PaneShells(
            shell,
            self.sandbox,
            self._panes,
            local_host=isinstance(host, LocalBackend),
            notices=self._notices,
        )
        self._clients = ClientPool(
            host,
            socket_name=socket_name,
            config=config,
            env=env,
            owner=owner,
            width=width,
            height=height,
            default_cwd=default_cwd,
            on_output=self._on_output,
            on_notification=self._on_notification,
            take_turns=take_turns,
        )
        self._pane_id: str | None = None
        self._started_once = False
        self._start_lock = asyncio.Lock()
        self._walled: dict[str, str] = {}
        """Windows beside the shared pane for commands approved with other walls (an approval
        in ask mode, a command run outside the sandbox): ``Confinement.key`` → pane id."""
        self._last_pane: str | None = None
        self._output_listeners: dict[str, list[Callable[[bytes], None]]] = {}
        self._use_listeners: list[Callable[[str], None]] = []
        self._gone_listeners: list[Callable[[str, str], None]] = []
        self._background: set[asyncio.Future[None]] = set()

    # -- who and where ---------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str] | None:
        """Environment for the tmux client (and so a server it starts, and its panes)."""
        return self._clients.env

    @property
    def default_pane(self) -> str | None:
        """The shared pane (None before the first start)."""
        return self._pane_id

    @property
    def last_pane(self) -> str | None:
        """The pane the agent acted on last (what the mirror follows)."""
        return self._last_pane

    @property
    def actor(self) -> str:
        pane = self._pane_id
        return f"{self.host.actor}/tmux:{pane}" if pane else f"{self.host.actor}/tmux"

    def pane_actor(self, pane_id: str) -> str:
        return f"{self.host.actor}/tmux:{pane_id}"

    @property
    def place(self) -> Place:
        """The server as the host reaches it (socket, config, the client's environment)."""
        return self._clients.place

    def attach_command(self) -> str:
        """What a person types in another terminal to watch or join the agent's session."""
        return attach_command(self.place, self.default_session)

    # -- files go to the host, never through a pane ------------------------------------------

    async def read_file(self, path: str) -> bytes:
        return await self.host.read_file(path)

    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        await self.host.write_file(path, data, make_parents=make_parents)

    # -- pane output and pane use ------------------------------------------------------------

    def _on_output(self, session: str, pane_id: str, data: bytes) -> None:
        """A ``%output`` heard by the client of ``session``."""
        pane = self._panes.get(pane_id)
        if pane is not None and pane.session != session:
            return  # a window linked into two sessions: take it from its own session only
        if pane is not None:
            pane.feed(data)
        for listener in list(self._output_listeners.get(pane_id, ())):
            try:
                listener(data)
            except Exception:
                log.exception("pane output listener failed")

    def add_output_listener(
        self, pane_id: str, listener: Callable[[bytes], None]
    ) -> Callable[[], None]:
        """Call ``listener`` with every raw output chunk of ``pane_id``; returns the remover."""
        self._output_listeners.setdefault(pane_id, []).append(listener)

        def remove() -> None:
            listeners = self._output_listeners.get(pane_id, [])
            if listener in listeners:
                listeners.remove(listener)

        return remove

    def add_use_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(pane_id)`` whenever the agent acts on another pane."""
        self._use_listeners.append(listener)

        def remove() -> None:
            if listener in self._use_listeners:
                self._use_listeners.remove(listener)

        return remove

    def add_gone_listener(self, listener: Callable[[str, str], None]) -> Callable[[], None]:
        """Call ``listener(pane_id, why)`` when a pane goes with its session or server."""
        self._gone_listeners.append(listener)

        def remove() -> None:
            if listener in self._gone_listeners:
                self._gone_listeners.remove(listener)

        return remove

    def _forget_session(self, session: str, why: str) -> None:
        """``session``'s panes are gone: their jobs fail with ``why``, and the gone listeners
        (the mirror) hear of each."""
        gone = self._panes.session_panes(session)
        self._panes.forget_session(session, why)
        for pane_id in gone:
            for listener in list(self._gone_listeners):
                try:
                    listener(pane_id, why)
                except Exception:
                    log.exception("pane-gone listener failed")

    def _mark_used(self, pane_id: str) -> None:
        """The agent acted on ``pane_id``: tell the use listeners if that is a change."""
        changed = pane_id != self._last_pane
        self._last_pane = pane_id
        if changed:
            for listener in list(self._use_listeners):
                try:
                    listener(pane_id)
                except Exception:
                    log.exception("pane-use listener failed")

    def _on_notification(self, session: str, name: str, args: str) -> None:
        if name == "exit":
            if self._clients.open_client(session) is not None:
                return  # an older client of a session we have reconnected to
            self._clients.pop(session)
            self._forget_session(
                session, f"tmux went away: {args}" if args else "its tmux session or server ended"
            )
        elif name in ("window-close", "unlinked-window-close", "layout-change"):
            self._panes.check_closed(self._clients.open_client)

    def _take_notices(self) -> list[str]:
        notices = list(self._notices)
        self._notices.clear()
        return notices

    # -- the shared session and pane, and targets --------------------------------------------

    @property
    def _shared_target(self) -> str:
        """The shared session as a tmux target (quoted)."""
        return quote(f"={self.default_session}:")

    async def ensure_started(
        self, notices: list[str], *, env: Mapping[str, str] | None = None
    ) -> None:
        """A live control client on the shared session, recreating server or session."""
        client = self._clients.open_client(self.default_session)
        if client is not None and self._pane_id:
            return
        async with self._start_lock:
            client = self._clients.open_client(self.default_session)
            if client is not None and self._pane_id:
                return
            if self._clients.env is None and env is not None:
                self._clients.env = dict(env)
            client, created, why = await self._clients.connect(self.default_session, create=True)
            if self.own_session:
                await tag_session(
                    client, self.default_session, workspace=self.workspace, kept=self.keep_session
                )
            if created:
                walls = self._shells.base()
                pane_id = await setup_new_session(
                    client,
                    self.default_session,
                    owner=self.owner,
                    history_limit=self.history_limit,
                    shell=await self._shells.command(walls, self.default_cwd),
                    cwd=self.default_cwd,
                )
                await client.command(
                    f"set-option -t {self._shared_target} {DEFAULT_PANE_OPTION} {pane_id}"
                )
                await self._shells.tag(client, pane_id, walls)
                self._pane_id = pane_id
                await self._shells.set_up(client, pane_id, self.default_session, created=True)
                if self._started_once:
                    notices.append(
                        f"{why}; started a fresh shared pane {pane_id} and set it up again: "
                        "its shell state (cwd, variables, history) was lost"
                    )
            else:
                (line,) = await client.command(
                    f"display-message -p -t {self._shared_target} '#{{{DEFAULT_PANE_OPTION}}}'"
                )
                self._pane_id = line.strip() or None
            self._started_once = True

    async def _shared_pane(self, notices: list[str]) -> ManagedPane:
        """The shared pane, recreated (with a notice) when it died or was killed."""
        async with self._start_lock:
            pane_id = self._pane_id
            client = await self._clients.client(self.default_session)
            status = await pane_status(client, pane_id) if pane_id else None
            moved = status is not None and status.session != self.default_session
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
            elif pane_id not in self._panes and detect_shell(status.command) is None:
                raise BackendError(
                    f"the shared pane {pane_id} is running `{status.command}`, not a shell"
                )
        pane = await self._managed_pane(pane_id)
        walls = self._shells.base()
        if walls is not None and pane.confinement != walls:
            await self._restart_in(pane, walls, notices)
            pane = await self._managed_pane(pane_id)
        return pane

    async def _restart_in(self, pane: ManagedPane, walls: Confinement, notices: list[str]) -> None:
        """Start the shared pane's shell afresh inside ``walls`` (the mode changed)."""
        async with pane.lock:
            client = await self._clients.client(pane.session)
            cwd = (pane.prompt.cwd if pane.prompt is not None else None) or self.default_cwd
            command = await self._shells.command(walls, cwd)
            was = pane.confinement.label if pane.confinement else "no known sandbox"
            self._panes.pop(pane.pane_id)
            pane.fail("its shell was restarted in a new sandbox")
            parts = ["respawn-pane", "-k", "-t", pane.pane_id]
            if cwd:
                parts += ["-c", quote(cwd.replace("#", "##"))]
            if command:
                parts.append(quote(command))
            await client.command(" ".join(parts))
            await self._shells.tag(client, pane.pane_id, walls)
        await self._shells.set_up(client, pane.pane_id, pane.session, created=True)
        notices.append(
            f"the shared pane {pane.pane_id}'s shell was restarted for the new approval mode: it "
            f"ran {was}, it now runs {walls.label} (its variables and history were reset)"
        )

    async def _walled_pane(self, walls: Confinement, notices: list[str]) -> ManagedPane:
        """The window for commands approved with ``walls`` other than the shared pane's."""
        pane_id = self._walled.get(walls.key)
        client = await self._clients.client(self.default_session)
        status = await pane_status(client, pane_id) if pane_id else None
        if (
            pane_id is None
            or status is None
            or status.dead
            or status.session != self.default_session
        ):
            name = "outside" if walls.outside else f"approved-{walls.key}"
            command = await self._shells.command(walls, self.default_cwd)
            (line,) = await client.command(
                new_pane_command(
                    "new-window",
                    self._shared_target,
                    shell=command,
                    cwd=self.default_cwd,
                    flags="-d",
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
            await self._shells.tag(client, pane_id, walls)
            await self._shells.set_up(client, pane_id, self.default_session, created=True)
            self._walled[walls.key] = pane_id
            notices.append(f"this command runs in window {name} ({pane_id}): {walls.label}")
        return await self._managed_pane(pane_id)

    async def _new_shared_pane(self, client: ControlClient) -> str:
        walls = self._shells.base()
        command = await self._shells.command(walls, self.default_cwd)
        (line,) = await client.command(
            new_pane_command("new-window", self._shared_target, shell=command, cwd=self.default_cwd)
        )
        pane_id = line.strip()
        await client.commands(
            [
                f"set-option -p -t {pane_id} {OWNER_OPTION} {quote(self.owner)}",
                f"set-option -t {self._shared_target} {DEFAULT_PANE_OPTION} {pane_id}",
            ]
        )
        await self._shells.tag(client, pane_id, walls)
        self._pane_id = pane_id
        await self._shells.set_up(client, pane_id, self.default_session, created=True)
        return pane_id

    async def _managed_pane(self, pane_id: str) -> ManagedPane:
        """``pane_id`` as a managed pane, set up now if it was not yet."""
        pane = self._panes.get(pane_id)
        if pane is not None:
            return pane
        client = await self._primary()
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
        await self._shells.set_up(
            await self._clients.client(session), pane_id, session, created=False
        )
        pane = self._panes.get(pane_id)
        assert pane is not None
        return pane

    async def _pane_for_command(
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
                    base = self._shells.base()
                    if base is None or confinement is None or confinement == base:
                        return await self._shared_pane(notices)
                    return await self._walled_pane(confinement, notices)
                pane_id = await self.resolve_target(target)
                pane = await self._managed_pane(pane_id)
                self._shells.check(pane.confinement, confinement, pane_id)
                return pane
            except ControlClosed:
                # The session or server went away before its %exit reached us: once more,
                # now that the client is known to be gone (this recreates the shared pane).
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _primary(self) -> ControlClient:
        """Any live client: every command reaches the same server."""
        client = self._clients.open_client(self.default_session) or self._clients.any_open()
        if client is not None:
            return client
        await self.ensure_started(self._notices)
        client = self._clients.known(self.default_session)
        assert client is not None
        return client

    async def _client_for(self, pane_id: str) -> ControlClient:
        """The client of a managed pane's session, else any live client."""
        pane = self._panes.get(pane_id)
        return await self._clients.client(pane.session) if pane else await self._primary()

    async def resolve_target(self, target: str) -> str:
        """A pane id of ours for ``%3``, ``build`` (a session), ``build:1.0``; else NotOurs."""
        target = target.strip()
        if not target:
            raise NotOurs("empty target")
        client = await self._primary()
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

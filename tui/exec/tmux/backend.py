"""TmuxBackend: commands typed into a tmux pane the person can watch and take over.

It wraps a HOST backend (local today; a container or SSH host later) and never runs tmux
itself: it starts ``tmux -C`` control clients through ``host.spawn``, one per managed session
(tmux sends a client ``%output`` only for panes of the session it is attached to). Files
never go through a pane: ``read_file``/``write_file`` are the host's.

A command's life: guard it (``guard``), check the pane is at its prompt and not in copy mode,
paste the text (``paste-buffer -p``: bracketed where the shell asked for it, so tabs and
newlines are not keystrokes), press Enter, and wait for the end marker in the pane's
``%output`` (``markers``). Nothing polls: the reader task wakes the waiter the moment the
marker arrives. On timeout the command is left running, since a person may want it, and the
result says how to recover. A shared pane or server that disappeared is recreated and set up
again, and every result of that call says so.

The class is a coordinator: ``ClientPool`` keeps the control clients, ``PaneRegistry`` the
panes set up for the marker protocol (``PaneSetup``), ``SharedSession`` the shared session and
pane and target lookup, ``CommandRunner`` a command's life, ``PaneIO`` capture and keys,
``ManagedSessions`` the tools' sessions and panes, and ``PaneFeed`` routes output to panes and
to the mirror.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from tui.exec.backend import BackendError, ChunkSink, ExecResult, ExecutionBackend, cancelled_early
from tui.exec.local import LocalBackend
from tui.exec.sandbox.explain import sandbox_notes
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.tmux import lifecycle, teardown
from tui.exec.tmux.clients import ClientPool
from tui.exec.tmux.feed import PaneFeed
from tui.exec.tmux.guard import check_shared_shell
from tui.exec.tmux.jobs import CommandRunner, report_notices
from tui.exec.tmux.managed import Direction, ManagedSessions
from tui.exec.tmux.pane_io import CaptureResult, PaneIO
from tui.exec.tmux.pane_setup import PaneSetup
from tui.exec.tmux.pane_shells import PaneShells
from tui.exec.tmux.panes import PaneRegistry
from tui.exec.tmux.sessions import PaneInfo, SessionInfo, canonical_session_name
from tui.exec.tmux.shared import SharedSession
from tui.security.confinement import Confinement

log = logging.getLogger(__name__)


class TmuxBackend(ExecutionBackend):
    """Runs commands in a shared tmux pane on ``host``; see the module docstring.

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
        workspace: The workspace's real path, tagged on the session (``lifecycle``).
        own_session: The session is this instance's own: ``close`` kills it (and the
            sessions the tools created) unless it is kept.
        keep_session: Mark the session kept from the start (``[tmux] keep_session``).
        sandbox: Where the panes' shells start (default: the host's, for a local host).
        take_turns: The server is shared by instances (a fixed ``[tmux] session``): attach
            and create holding its start lock (``start_lock``).
    """

    SUPPORTS_TMUX = True

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
        self.shell = shell
        self.owner = owner
        self.default_cwd = default_cwd
        self.config = config
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
        self._shells = PaneShells(shell, self.sandbox)
        self.take_turns = take_turns
        self._notices: list[str] = []
        """Notices from calls that return none (send_keys, list_…): the next run or capture
        reports them, so a recreated pane is never silent."""
        self._panes = PaneRegistry()
        self._feed = PaneFeed(self._panes)
        self._clients = ClientPool(
            host,
            socket_name=socket_name,
            config=config,
            env=env,
            owner=owner,
            width=width,
            height=height,
            default_cwd=default_cwd,
            on_output=self._feed.on_output,
            on_notification=self._on_notification,
            take_turns=take_turns,
        )
        setup = PaneSetup(
            self._clients,
            self._panes,
            shell=shell,
            local_host=isinstance(host, LocalBackend),
            notices=self._notices,
        )
        self._shared = SharedSession(
            self._clients,
            self._panes,
            setup,
            session=self.default_session,
            owner=owner,
            history_limit=history_limit,
            shell=shell,
            default_cwd=default_cwd,
            workspace=workspace,
            own_session=own_session,
            keep_session=keep_session,
            notices=self._notices,
            shells=self._shells,
        )
        self._runner = CommandRunner(
            self._clients,
            self._panes,
            default_session=self.default_session,
            mark_used=self._feed.mark_used,
        )
        self._io = PaneIO(
            self._shared, take_notices=self._take_notices, mark_used=self._feed.mark_used
        )
        self._managed = ManagedSessions(
            self._shared,
            self._clients,
            self._panes,
            setup,
            max_sessions=max_sessions,
            max_panes=max_panes,
            mark_used=self._feed.mark_used,
        )
        self.created_sessions = self._managed.created
        """Sessions the tools created here: closed with ours unless ours is kept."""

    # -- identity ----------------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str] | None:
        """Environment for the tmux client (and so a server it starts, and its panes)."""
        return self._clients.env

    @property
    def default_pane(self) -> str | None:
        """The shared pane (None before the first start)."""
        return self._shared.pane_id

    @property
    def last_pane(self) -> str | None:
        """The pane the agent acted on last (what the mirror follows)."""
        return self._feed.last_pane

    @property
    def actor(self) -> str:
        pane = self.default_pane
        return f"{self.host.actor}/tmux:{pane}" if pane else f"{self.host.actor}/tmux"

    def pane_actor(self, pane_id: str) -> str:
        return f"{self.host.actor}/tmux:{pane_id}"

    def tmux_argv(self, *args: str) -> list[str]:
        """A ``tmux`` command line on our socket, never nested in the person's own tmux."""
        return self.place.argv(*args)

    @property
    def place(self) -> lifecycle.Place:
        return self._clients.place

    def attach_command(self) -> str:
        """What a person types in another terminal to watch or join the agent's session."""
        return lifecycle.attach_command(self.place, self.default_session)

    async def set_kept(self, kept: bool) -> None:
        """Keep the session after quit (re-attached at the next start here), or not."""
        await lifecycle.set_kept(await self._shared.primary(), self.default_session, kept)

    async def is_kept(self) -> bool:
        return await lifecycle.is_kept(await self._shared.primary(), self.default_session)

    # -- files go to the host, never through a pane -----------------------------------------

    async def read_file(self, path: str) -> bytes:
        return await self.host.read_file(path)

    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        await self.host.write_file(path, data, make_parents=make_parents)

    # -- commands ----------------------------------------------------------------------------

    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
        confinement: Confinement | None = None,
        target: str | None = None,
        expect_cwd: str | None = None,
    ) -> ExecResult:
        """Type ``command`` into the shared pane (or ``target``) and wait for its prompt.

        ``env`` only matters when this call starts the tmux server: a pane's shell keeps
        its environment. ``cwd`` is a ``cd`` typed first, when the pane is elsewhere.
        On timeout the command keeps running; ``timed_out`` is set and a notice names the
        pane and how to stop or watch it. ``expect_cwd``: the directory the command was
        approved in; if the shell is elsewhere now, nothing is typed (BackendError).
        ``confinement``: the sandbox walls it was approved for; a command approved for walls
        other than the shared pane's runs in a window of those walls (shown in the mirror).
        """
        if (early := cancelled_early(cancel, merged_output=True)) is not None:
            return early
        check_shared_shell(command)
        started = time.perf_counter()
        notices = self._take_notices()
        pane = await self._shared.pane_for_command(target, notices, env, confinement)
        cwd, expect_cwd = self._start_dir(pane.pane_id, target, cwd, expect_cwd)
        report_notices(notices, on_chunk)
        moment = time.monotonic()
        async with pane.lock:
            job = await self._runner.start(pane, command, cwd, on_chunk, expect_cwd)
            result = await self._runner.finish(pane, job, timeout, cancel, started, notices)
        if pane.confinement is not None and self.sandbox is not None:
            result.notices += sandbox_notes(
                pane.confinement,
                result.stdout,
                self.sandbox.refusals_since(moment),
                failed=result.exit_code not in (0, None),
            )
        return result

    async def dispatch(
        self,
        command: str,
        *,
        target: str | None = None,
        cwd: str | None = None,
        expect_cwd: str | None = None,
        confinement: Confinement | None = None,
    ) -> tuple[str, list[str]]:
        """Type ``command`` and return at once: ``(pane id, notices)``. It runs on alone."""
        check_shared_shell(command)
        notices = self._take_notices()
        pane = await self._shared.pane_for_command(target, notices, None, confinement)
        cwd, expect_cwd = self._start_dir(pane.pane_id, target, cwd, expect_cwd)
        async with pane.lock:
            await self._runner.start(pane, command, cwd, None, expect_cwd)
        return pane.pane_id, notices

    def _start_dir(
        self, pane_id: str, target: str | None, cwd: str | None, expect_cwd: str | None
    ) -> tuple[str | None, str | None]:
        """In a window of other walls, start where the shared shell stands (the directory the
        person approved), by a ``cd`` if need be, rather than check that window's own."""
        if target is not None or pane_id == self.default_pane or cwd is not None:
            return cwd, expect_cwd
        return expect_cwd or self.shell_cwd() or self.default_cwd, None

    def sandbox_label(self, pane_id: str | None = None) -> str | None:
        """Which sandbox the shell of ``pane_id`` (default: the shared pane) runs in."""
        if not self._shells.active:
            return None if self.sandbox is None else "no sandbox"
        pane = self._panes.get(pane_id or self.default_pane or "")
        walls = pane.confinement if pane is not None else None
        return walls.label if walls is not None else "sandbox unknown"

    async def refresh_sandbox(self) -> list[str]:
        """Restart the shared pane's shell if the mode's walls changed; what was said."""
        if not self._shells.active:
            return []
        notices = self._take_notices()
        await self.ensure_started(notices)
        await self._shared.shared_pane(notices)
        return notices + self._take_notices()

    def running_command(self, pane_id: str) -> str | None:
        """The command we typed into ``pane_id`` that has not reached its prompt yet."""
        pane = self._panes.get(pane_id)
        if pane is None or pane.job is None or pane.job.done.done():
            return None
        return pane.job.command

    def prompt_state(self, pane_id: str | None = None) -> str | None:
        """``prompt``, ``running`` or ``continuation`` (see ``prompt.PromptWatch``)."""
        pane = self._panes.get(pane_id or self.default_pane or "")
        return pane.prompt.state if pane is not None and pane.prompt is not None else None

    def shell_cwd(self, pane_id: str | None = None) -> str | None:
        """The directory the shell of ``pane_id`` (default: the shared pane) last reported.

        It is where its next command runs: a person's ``cd`` during a take-over moves it
        too. None before the pane was set up, or when the shell cannot report it (POSIX sh).
        """
        pane = self._panes.get(pane_id or self.default_pane or "")
        return pane.prompt.cwd if pane is not None and pane.prompt is not None else None

    async def wait_for_prompt(self, pane_id: str, timeout: float) -> int | None:
        """Wait until the command we typed into ``pane_id`` is back at its prompt.

        Returns its exit code (None when nothing was running). Raises TimeoutError.
        """
        pane = self._panes.get(pane_id)
        if pane is None:
            return None
        job = pane.job or pane.last_job
        if job is None:
            return None
        await asyncio.wait_for(asyncio.shield(job.done), timeout)
        return job.stream.exit_code

    # -- the shared session ------------------------------------------------------------------

    async def start(self) -> list[str]:
        """Connect (starting tmux and the shared pane if needed); the notices it produced."""
        notices = self._take_notices()
        await self.ensure_started(notices)
        await self._shared.shared_pane(notices)
        return notices + self._take_notices()

    async def ensure_started(
        self, notices: list[str], *, env: Mapping[str, str] | None = None
    ) -> None:
        """A live control client on the shared session, recreating server or session."""
        await self._shared.ensure_started(notices, env=env)

    def _on_notification(self, session: str, name: str, args: str) -> None:
        if name == "exit":
            if self._clients.open_client(session) is not None:
                return  # an older client of a session we have reconnected to
            self._clients.pop(session)
            self._panes.forget_session(session, f"tmux went away ({args or 'client exited'})")
        elif name in ("window-close", "unlinked-window-close", "layout-change"):
            self._panes.check_closed(self._clients.open_client)

    # -- capture, keys -----------------------------------------------------------------------

    async def resolve_target(self, target: str) -> str:
        """A pane id of ours for ``%3``, ``build`` (a session), ``build:1.0``; else NotOurs."""
        return await self._shared.resolve_target(target)

    async def capture(
        self,
        target: str | None = None,
        *,
        start: int | str | None = None,
        end: int | str | None = None,
        join_wrapped: bool = True,
        escape_sequences: bool = False,
        alternate: bool = False,
        preserve_trailing_spaces: bool = False,
        escape_non_printable: bool = False,
    ) -> CaptureResult:
        """The pane's text (visible screen by default; ``start=-200`` or ``"-"`` for history)."""
        return await self._io.capture(
            target,
            start=start,
            end=end,
            join_wrapped=join_wrapped,
            escape_sequences=escape_sequences,
            alternate=alternate,
            preserve_trailing_spaces=preserve_trailing_spaces,
            escape_non_printable=escape_non_printable,
        )

    async def send_keys(
        self,
        target: str,
        keys: str | Sequence[str] = (),
        *,
        literal: bool = False,
        enter: bool = False,
        guard: bool = True,
        confinement: Confinement | None = None,
    ) -> str:
        """Send ``keys`` to ``target``; see ``PaneIO.send_keys``. Returns the pane id.

        With ``guard`` (the agent's keys, not the person's) the pane's walls must be no wider
        than ``confinement`` (None: what the mode lets run unasked): keys are commands too.
        """
        if guard and self._shells.active:
            await self.ensure_started(self._notices)
            pane_id = await self._shared.resolve_target(target)
            pane = self._panes.get(pane_id)
            if pane is not None:
                walls = pane.confinement
            else:  # a pane running a program, not set up for commands: its tag says
                walls = await PaneShells.read_tag(await self._shared.primary(), pane_id)
            self._shells.check(walls, confinement, pane_id)
        return await self._io.send_keys(target, keys, literal=literal, enter=enter, guard=guard)

    async def send_input(self, pane_id: str, data: bytes) -> None:
        """Raw bytes from a person's keyboard to a pane (``send-keys -H``): no guard, no policy."""
        await self._io.send_input(pane_id, data)

    async def paste(self, pane_id: str, text: str) -> None:
        """A person's paste into a pane, as their terminal would paste it: no guard, no policy."""
        await self._io.paste(pane_id, text)

    async def resize_pane(self, pane_id: str, columns: int, rows: int) -> None:
        """Give ``pane_id`` (and its window) ``columns`` x ``rows``: the size of the mirror box."""
        await self._io.resize_pane(pane_id, columns, rows)

    async def snapshot(self, pane_id: str) -> tuple[list[str], int, int, int, int]:
        """The visible screen with colours, cursor x/y and pane width/height (one round trip)."""
        return await self._io.snapshot(pane_id)

    # -- sessions and panes for the tools ------------------------------------------------------

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._managed.list_sessions()

    async def list_panes(self, session: str | None = None) -> list[PaneInfo]:
        return await self._managed.list_panes(session)

    async def create_session(
        self, name: str, *, cwd: str | None = None, pane_name: str | None = None
    ) -> tuple[str, str]:
        """A new tagged session with one set-up pane: ``(session name, pane id)``.

        ``pane_name``: the first pane's name (canonical, see ``canonical_pane_name``).
        """
        return await self._managed.create_session(name, cwd=cwd, pane_name=pane_name)

    async def kill_session(self, name: str) -> str:
        return await self._managed.kill_session(name)

    async def create_pane(
        self,
        *,
        session: str | None = None,
        target: str | None = None,
        direction: Direction = "below",
        cwd: str | None = None,
        name: str | None = None,
    ) -> str:
        """A new set-up pane: split ``target`` (or the session's active pane), or a window.

        ``name`` (canonical) must be new in that session: ``pane=NAME`` then finds it.
        """
        return await self._managed.create_pane(
            session=session, target=target, direction=direction, cwd=cwd, name=name
        )

    async def kill_pane(self, target: str) -> str:
        return await self._managed.kill_pane(target)

    # -- for the mirror ------------------------------------------------------------------------

    def add_output_listener(
        self, pane_id: str, listener: Callable[[bytes], None]
    ) -> Callable[[], None]:
        """Call ``listener`` with every raw output chunk of ``pane_id``; returns the remover."""
        return self._feed.add_output_listener(pane_id, listener)

    def add_use_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(pane_id)`` whenever the agent acts on a pane."""
        return self._feed.add_use_listener(listener)

    def _take_notices(self) -> list[str]:
        notices = list(self._notices)
        self._notices.clear()
        return notices

    # -- shutdown -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close our own session unless kept (``own_session``); detach our control clients."""
        self._panes.stop_checking()
        if self.own_session and self._shared.started_once:
            try:
                ending = await lifecycle.ending_sessions(
                    self.place, self.owner, [self.default_session, *sorted(self.created_sessions)]
                )
                # First whatever runs in their panes, detached jobs too: they outlive a kill.
                await teardown.stop_panes(self.place, ending)
                await lifecycle.kill_sessions(
                    self.place, ending, client=self._clients.known(self.default_session)
                )
                if ending and not self.take_turns:  # a server of its own: nothing else there
                    await teardown.forget_server(self.place)
            except (BackendError, OSError) as error:
                log.warning("could not close tmux session %s: %s", self.default_session, error)
        await self._clients.close()
        self._panes.close("the backend was closed")

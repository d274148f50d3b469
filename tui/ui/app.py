"""The full-screen app: one subscriber of the bus, one sender of the person's intent.

Everything the agent does reaches the panels through ``BusAdapter`` → ``BusBatch`` (one
message per frame); everything the person does leaves through the session's narrow methods
(submit, steer, cancel, answer an approval, run a ``!`` command, switch model or mode, trust)
and, while the person holds the mirrored pane's keyboard, the backend's ``send_keys``. Nothing
here reaches into the loop's internals, and nothing blocks the event loop.

The app is the layout and the keys; its collaborators do the rest: ``SessionLink`` (attach,
switch and replay sessions), ``ApprovalFlow`` (the modals and the auto-approve window),
``PaneControl`` (the mirrored pane and its keyboard), ``UsageMeter`` (the status bar's counts),
``EventRouter`` (events to those, by class), ``BlockActions`` and ``SlashCommands``.

First paint comes before the agent: this module imports Textual and the light UI modules
only. The session is opened (by the opener ``tui.cli`` gives it) after the first frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual import events, on, work
from textual.actions import SkipAction
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, TextArea
from textual.worker import Worker, WorkerState

from tui.app_log import log_error
from tui.errors import AgentTuiError
from tui.locations import styles_dir
from tui.ui.adapter import FRAME_SECONDS
from tui.ui.approval.flow import ApprovalFlow
from tui.ui.attention import Attention
from tui.ui.block_actions import BlockActions
from tui.ui.chat.panel import ChatPanel
from tui.ui.chat.todo import TodoList
from tui.ui.commands import SlashCommandProvider, SlashCommands
from tui.ui.control_filter import ControlFilter
from tui.ui.fleet.control import FleetView
from tui.ui.fleet.grid import HostCell
from tui.ui.fleet.hosts import HostList
from tui.ui.habits import ThemeMemory, cycle_mode
from tui.ui.interrupt import QUIT_HINT, QUIT_WINDOW, CtrlC
from tui.ui.key_bar import KeyBar
from tui.ui.keymap import APP_BINDINGS
from tui.ui.messages import BusBatch, PromptSubmitted, ToolBlockAction
from tui.ui.mirror.messages import PaneKeys, PaneRelease
from tui.ui.mirror.pane import MirrorPanel
from tui.ui.pane_control import PaneControl
from tui.ui.panels import PanelLayout, PanelTabs
from tui.ui.prompt.history import PromptHistory
from tui.ui.prompt.input import PromptInput
from tui.ui.prompt.mentions import attach_mentions
from tui.ui.session_link import SessionLink
from tui.ui.status.bar import StatusBar
from tui.ui.status.usage import UsageMeter
from tui.ui.tools.output import SPILL
from tui.ui.tools.panel import ToolPanel

if TYPE_CHECKING:
    from textual.filter import LineFilter
    from textual.notifications import SeverityLevel

    from tui.events import Event
    from tui.session_api import SessionAPI, SessionFactory, SessionOpener, SettingsReload
    from tui.views import TrustView

STYLES = (
    "app.tcss",
    "chat.tcss",
    "tools.tcss",
    "mirror.tcss",
    "status.tcss",
    "prompt.tcss",
    "fleet.tcss",
)


class AgentApp(App[int]):
    """The agent's full-screen UI for one ``SessionAPI``.

    Args:
        session: The wired session (its bus is read, its loop driven); None with ``builder``.
        builder: Opens the session once the first frame is up (built by ``tui.cli``).
        session_factory: Builds a new or resumed session for ``/clear`` and ``/resume``.
        clock: Wall-clock seconds (tests freeze it for deterministic frames).
        monotonic: Monotonic seconds for the auto-approve window and the approval modal's
            wait for answers.
        cursor_blink: Off in tests and snapshots.
        history_path: Where prompt history is kept (None: memory only).
        frame: Seconds per adapter batch.
        state_path: Where the chosen theme is kept (None: memory only).
        prompt: Sent as soon as the session is up (``agent-tui "fix the tests"``).
        pick_session: Open the saved-session picker once the session is up (``-r``).
    """

    TITLE = "agent-tui"
    ESCAPE_TO_MINIMIZE = False
    """Esc cancels a turn (or reaches the pane being typed into); f5 leaves the zoom."""
    CSS_PATH = [str(styles_dir() / name) for name in STYLES]
    COMMANDS = App.COMMANDS | {SlashCommandProvider}
    BINDINGS = APP_BINDINGS

    def __init__(
        self,
        session: SessionAPI | None = None,
        *,
        builder: SessionOpener | None = None,
        session_factory: SessionFactory | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        cursor_blink: bool = True,
        history_path: Path | None = None,
        frame: float = FRAME_SECONDS,
        state_path: Path | None = None,
        prompt: str | None = None,
        pick_session: bool = False,
    ) -> None:
        super().__init__()
        if session is None and builder is None:
            raise ValueError("AgentApp needs a session or a builder")
        self.builder = builder
        self._wound_down = False
        self._hangup: asyncio.Future[None] | None = None
        self._queued: list[str] = [prompt] if prompt else []
        """Prompts sent before the session was ready (the command line's first)."""
        self.pick_session = pick_session
        self.clock = clock
        self.monotonic = monotonic
        self.cursor_blink = cursor_blink
        self.frame = frame
        self.history = PromptHistory(history_path)
        self.ctrl_c = CtrlC(clock=monotonic)
        self.session_ready = asyncio.Event()
        """Set once a session is attached."""
        self.reload_settings: SettingsReload | None = None
        """Re-reads the settings before ``/trust`` starts the session again (set by the CLI)."""
        self.format_time: Callable[[float], str] | None = None
        """How the grants screen shows a time (snapshots pin it to UTC)."""
        self.themes = ThemeMemory(state_path)
        remembered = self.themes.load()
        self.theme = remembered if remembered in self.available_themes else "textual-dark"
        self.attention = Attention(
            self._write_terminal, self._toast, lambda: self.app_focus, monotonic
        )
        """OSC 52 copies, the last answer, bell and desktop notices."""
        self.approvals = ApprovalFlow(self, self.attention, monotonic)
        self.panes = PaneControl(self)
        self.usage = UsageMeter()
        self.block_actions = BlockActions(self, self.attention)
        self.link = SessionLink(
            self,
            self.panes,
            self.approvals,
            self.usage,
            self.attention,
            self._deliver,
            partial(self.apply_events, replay=True),
            frame,
        )
        self.link.session = session
        self.link.factory = session_factory
        self.commands = SlashCommands(self, self.approvals, self.panes, self.link.switch)
        self._controls = ControlFilter()

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then the one that keeps control characters off the terminal."""
        return [*super().get_line_filters(), self._controls]

    @property
    def session(self) -> SessionAPI:
        """The session shown (raises before the first one is attached)."""
        session = self.link.session
        if session is None:
            raise RuntimeError("the session is not ready yet")
        return session

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # Kept as attributes: panels are reached without a query, even while a modal is up
        # or the app is shutting down.
        self.chat = ChatPanel(id="chat")
        self.prompt = PromptInput(
            self.history, id="prompt", cursor_blink=self.cursor_blink, clock=self.monotonic
        )
        self.todo = TodoList(id="todo")
        self.tools = ToolPanel(id="tools", clock_ms=lambda: self.clock() * 1000)
        self.hosts = HostList(id="hosts")
        self.mirror = MirrorPanel(id="mirror")
        self.status = StatusBar(id="status")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield self.chat
                yield self.todo
                yield self.prompt.popup
                yield self.prompt
            with Vertical(id="right"):
                yield PanelTabs(id="panel-tabs")
                with Horizontal(id="tools-row"):
                    yield self.tools
                    yield self.hosts
                yield self.mirror
        yield self.status
        yield KeyBar()

    async def on_mount(self) -> None:
        # The terminal closing (SIGHUP) quits as Ctrl+C twice does: the session closes, and
        # its tmux session with whatever runs there, instead of dying where it stands.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self._hung_up)
        self.panels = PanelLayout(
            self.query_one("#main"),
            self.query_one("#right"),
            self.query_one(PanelTabs),
            self.mirror,
        )
        self.fleet = FleetView(self, self.panes, self.hosts, self.query_one("#right"))
        self.panels.fit(self.size.width)
        self.set_interval(1.0, self._tick)
        self.prompt.focus()
        if self.link.session is not None:
            self.link.attach(self.link.session)
            await self.link.replay()
        else:
            self.status.set(provider="", model="starting…")
            # After the first frame: the opener's imports would compete with it for the GIL.
            self.call_after_refresh(self._build_session)

    # -- the session -----------------------------------------------------------------------

    @work(exclusive=True, group="build", exit_on_error=False, description="build the session")
    async def _build_session(self) -> None:
        """Settings, target, session, provider: what would otherwise delay the first frame."""
        assert self.builder is not None
        try:
            session, factory = await self.builder()
        except AgentTuiError as error:
            code = int(getattr(error, "exit_code", 2))
            self.exit(None, code, f"agent-tui: {' '.join(error.msg.split())}")
            return
        if self.link.factory is None:
            self.link.factory = factory
        self.link.attach(session)
        await self.link.replay()
        queued, self._queued = self._queued, []
        for text in queued:
            await self.on_prompt_submitted(PromptSubmitted(text))
        if self.pick_session:
            await self.commands.sessions("")

    async def ask_trust(self, trust: TrustView) -> bool:
        """Show what the workspace's files would change (its ``WorkspaceTrust``); True only if
        the person trusts it."""
        from tui.ui.trust.screen import TrustScreen

        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.push_screen(TrustScreen(trust), lambda ok: answer.set_result(bool(ok)))
        return await answer

    # -- the adapter -----------------------------------------------------------------------

    def _deliver(self, events: list[Event], dropped: int) -> None:
        self.post_message(BusBatch(events, dropped))

    async def on_bus_batch(self, message: BusBatch) -> None:
        try:
            await self.apply_events(message.events, replay=message.replay)
            if message.dropped:
                self.status.set(dropped=message.dropped)
        finally:
            adapter = self.link.adapter
            if not message.replay and adapter is not None:
                adapter.consumed()

    async def apply_events(self, events: list[Event], *, replay: bool = False) -> None:
        """One frame's events to every panel, inside one batch update."""
        now_ms = self.clock() * 1000
        with self.batch_update():
            await self.chat.apply(events)
            self.tools.apply(events, now_ms=now_ms)
            if self.link.router is not None:
                self.link.router.route(events, replay=replay)
            self.usage.show(self.status, self.session, self.tools.running)

    def _tick(self) -> None:
        if self.link.session is None:
            return
        self.tools.tick(self.clock() * 1000)
        self.approvals.tick()

    # -- the prompt ------------------------------------------------------------------------

    async def on_prompt_submitted(self, message: PromptSubmitted) -> None:
        text = message.text
        stripped = text.strip()
        if stripped.startswith("/") and not stripped.startswith("//"):
            await self.commands.run(stripped)
            return
        await self.send_text(text)

    async def send_text(self, text: str) -> None:
        """The person's message to the agent (``!`` runs a command; a turn steers)."""
        stripped = text.strip()
        if self.link.session is None:
            self._queued.append(text)
            self.chat.add_notice("starting up: this is sent as soon as the session is ready")
            return
        if stripped.startswith("!"):
            command = stripped[1:].strip()
            if command:
                # ``!cmd``: the same path the agent's calls take (policy, approval, backend).
                self.run_worker(
                    self.session.run_user_command(command),
                    group="shell",
                    exit_on_error=False,
                    description="a ! command typed by the user",
                )
            return
        session = self.session
        problem = session.model_problem
        if problem is not None:
            self.chat.add_user(text)
            self.chat.add_error(
                "No model provider",
                problem + " — see the banner above for what to set; !command works meanwhile.",
            )
            return
        if session.loop_running:
            session.steer(text)
            return
        self.status.set(working=True)
        self._submit(text)

    @work(group="turn", exit_on_error=False, description="one agent turn")
    async def _submit(self, text: str) -> None:
        attached = await attach_mentions(text, self.session.read_mentioned)
        for note in attached.notes:
            self.chat.add_notice(note, level="warning")
        await self.session.submit(attached.text, images=attached.images)

    # -- keys ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the person types into the pane, every key is theirs, except giving it back
        # and quitting.
        if self.link.session is None and action in ("cancel_turn", "take_pane", "grants"):
            return False  # still starting: nothing to cancel, no pane, no grants yet
        if action == "release_pane":
            return self.panes.holding
        if action == "switch_panel" and not self.panes.holding:
            panels = getattr(self, "panels", None)  # set on mount
            return panels is not None and panels.narrow  # only stacked panels switch
        return not self.panes.holding or action == "quit"

    async def action_interrupt(self) -> None:
        """Ctrl+C: copy a selection, else cancel a running turn, else (twice) quit."""
        focused = self.focused
        if isinstance(focused, TextArea | Input) and focused.selected_text:
            focused.action_copy()
            return
        if self.screen.get_selected_text():
            self.screen.action_copy_text()
            return
        draft = self.screen is self.screen_stack[0] and bool(self.prompt.text.strip())
        press = self.ctrl_c.press(busy=self._busy(), draft=draft)
        if press == "cancel":
            self.action_cancel_turn()
        elif press == "clear":
            self.prompt.clear()
        elif press == "arm":
            self.notify(QUIT_HINT, timeout=QUIT_WINDOW)
        else:
            await self.action_quit()

    def _on_main_prompt(self) -> bool:
        return self.screen is self.screen_stack[0] and self.focused is self.prompt

    def action_cycle_mode(self) -> None:
        """Shift+Tab in the prompt: the next approval mode (``tui.ui.habits``)."""
        if self.link.session is None or not self._on_main_prompt() or self.prompt.popup.is_open:
            raise SkipAction()
        cycle_mode(self)

    async def action_quit_when_empty(self) -> None:
        """Ctrl+D on an empty prompt quits; elsewhere the key does what it did."""
        if not self._on_main_prompt() or self.prompt.text:
            raise SkipAction()
        await self.action_quit()

    def watch_theme(self, theme: str) -> None:
        """Kept for the next start (written off the event loop)."""
        if self.is_running:
            self._save_theme(theme)

    @work(group="theme", exclusive=True, exit_on_error=False, description="remember the theme")
    async def _save_theme(self, theme: str) -> None:
        await asyncio.to_thread(self.themes.save, theme)

    def _busy(self) -> bool:
        """A turn or a ``!`` command is running: Ctrl+C cancels rather than quits."""
        if self.link.session is None:
            return False
        return self.usage.turn_active or self.session.working

    def action_cancel_turn(self) -> None:
        if self.session.cancel():
            self.chat.add_notice(
                "cancelling: the turn and its running tools stop now", level="warning"
            )

    def action_resize_columns(self, delta: int) -> None:
        """Move the border between the chat and the tool column by ``delta`` cells."""
        left = self.query_one("#left")
        total = self.screen.size.width
        width = max(30, min(total - 30, left.size.width + delta))
        left.styles.width = width

    def on_resize(self, event: events.Resize) -> None:
        panels = getattr(self, "panels", None)  # the first resize comes before on_mount
        if panels is not None:
            panels.fit(event.size.width)

    def action_toggle_mirror(self) -> None:
        self.panels.toggle_mirror()

    def action_switch_panel(self) -> None:
        """Stacked layout: the tool calls or the pane mirror under the chat."""
        self.panels.switch()

    def action_zoom_mirror(self) -> None:
        """The mirror (and so the agent's pane) on the whole terminal, or back."""
        self.panels.toggle_zoom()

    def action_toggle_latest(self) -> None:
        self.block_actions.toggle(self.focused)

    def action_latest_output(self) -> None:
        self.block_actions.open_output(self.focused)

    def action_grants(self) -> None:
        self.commands.grants("")

    @on(ToolBlockAction)
    async def _block_action(self, message: ToolBlockAction) -> None:
        await self.block_actions.act(message.tool_call_id, message.action)

    # -- the pane --------------------------------------------------------------------------

    @on(MirrorPanel.Resized)
    def _mirror_resized(self) -> None:
        self.panes.fit()

    def action_take_pane(self) -> None:
        self.panes.take()

    def action_focus_host(self) -> None:
        """A fleet: the highlighted host's pane full-size, or back to the grid of hosts."""
        self.fleet.toggle()

    @on(HostCell.Chosen)
    def _host_chosen(self, message: HostCell.Chosen) -> None:
        self.fleet.choose(message.host)

    @on(PaneRelease)
    def action_release_pane(self) -> None:
        """Ctrl+] (a binding here, or the mirror's own ``PaneRelease``)."""
        self.panes.release()

    @on(PaneKeys)
    def _pane_keys_typed(self, message: PaneKeys) -> None:
        self.panes.typed(message.keys)

    # -- clipboard and notifications --------------------------------------------------------

    def _write_terminal(self, data: str) -> None:
        if self._driver is not None:
            self._driver.write(data)

    def _toast(self, message: str, severity: str) -> None:
        self.notify(message, severity=cast("SeverityLevel", severity), timeout=3, markup=False)

    def copy_to_clipboard(self, text: str) -> None:
        """Every copy (a selection, the keys, the prompt's own) as OSC 52, tmux-aware."""
        self._clipboard = text
        self.attention.copy(text)

    def on_text_selected(self, event: events.TextSelected) -> None:
        """A mouse selection (chat, tool blocks, pager) is copied as it is made."""
        text = self.screen.get_selected_text()
        if text:
            self.copy_to_clipboard(text)

    def action_copy_answer(self) -> None:
        self.attention.copy_answer()

    # -- failures and exit -----------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure ends here, said in the chat rather than lost."""
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        log_error(f"worker {event.worker.description!r} failed", error)
        title = getattr(error, "title", None) or f"{event.worker.description or 'worker'} failed"
        message = getattr(error, "msg", None) or f"{type(error).__name__}: {error}"
        self.chat.add_error(str(title), str(message))
        if event.worker.group == "turn":
            self.usage.turn_active = False
            self.status.set(working=False)

    def _hung_up(self) -> None:
        """The terminal is gone: close the session (its tmux session, what runs there, the
        transcript), then leave. Not through Textual's exit, which restores a terminal that
        no longer exists and can wait for ever on output nobody can take."""
        self._hangup = asyncio.ensure_future(self._leave_after_hangup())

    async def _leave_after_hangup(self) -> None:
        try:
            await self._wind_down()
        finally:
            os._exit(129)

    def _handle_exception(self, error: Exception) -> None:
        """An exception nothing caught ends the app (Textual's hook, its version pinned): its
        traceback goes to the error log first, so a crash leaves more than a screen."""
        log_error("the app stopped on an unexpected error", error)
        super()._handle_exception(error)

    async def on_unmount(self) -> None:
        await self._wind_down()

    async def _wind_down(self) -> None:
        """Close the session once, whichever way the app ends."""
        if self._wound_down:
            return
        self._wound_down = True
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        if self.link.session is None:
            return
        session = self.session
        self.link.unsubscribe()
        session.cancel_approvals("the app was closed")
        session.cancel()
        # Let the turn wind down before the transcript closes under it.
        busy = [w for w in self.workers if w.group in ("turn", "shell") and not w.is_finished]
        if busy:
            waiting = asyncio.gather(*(w.wait() for w in busy), return_exceptions=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiting, 3.0)
        await session.stop_pane_mirror()
        await self.panes.close()
        await session.aclose()
        await asyncio.to_thread(SPILL.flush, 2.0)

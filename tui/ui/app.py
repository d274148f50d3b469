"""The full-screen app: one subscriber of the bus, one sender of the user's intent.

Everything the agent does reaches the panels through ``BusAdapter`` → ``BusBatch`` (one
message per frame); everything the person does leaves through four doors only —
``session.submit`` (in a worker), ``loop.steer``, ``loop.cancel`` and
``broker.resolve`` — plus the tool registry for ``!`` commands and the backend's
``send_keys`` while the person holds the mirrored pane's keyboard. Nothing here reaches into
the loop's internals, and nothing blocks the event loop.

First paint comes before the agent: this module imports Textual and the light UI modules
only. The session (settings, pydantic models, providers, the command parser) is built in a
thread after the first frame, and panels read events by their ``kind``, never by class.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import inspect
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input, TextArea
from textual.worker import Worker, WorkerState

from tui.errors import AgentTuiError
from tui.locations import data_dir, styles_dir, tool_output_dir
from tui.ui.adapter import FRAME_SECONDS, BusAdapter
from tui.ui.attention import Attention
from tui.ui.autoapprove import AutoApprove, DurationError, format_remaining, parse_duration
from tui.ui.chat.panel import ChatPanel
from tui.ui.chat.todo import TodoList
from tui.ui.commands import SlashCommandProvider, UnknownCommand, help_markdown, parse_slash
from tui.ui.interrupt import QUIT_HINT, QUIT_WINDOW, CtrlC
from tui.ui.messages import BusBatch, PaneKeys, PaneRelease, PromptSubmitted, ToolBlockAction
from tui.ui.mirror.follow import PaneSizeFollower
from tui.ui.mirror.keys import KeysNotSent, Typed, forward
from tui.ui.mirror.pane import MirrorPanel, PaneFrame
from tui.ui.panels import SWITCH_KEY, ZOOM_KEY, PanelLayout, PanelTabs
from tui.ui.prompt.completer import SessionSource
from tui.ui.prompt.history import PromptHistory
from tui.ui.prompt.input import PromptInput
from tui.ui.prompt.mentions import attach_mentions
from tui.ui.status.bar import StatusBar
from tui.ui.tools.block import ToolBlock
from tui.ui.tools.output import SPILL
from tui.ui.tools.panel import ToolPanel

if TYPE_CHECKING:
    from tui.bus import Subscription
    from tui.events import ApprovalAnswer, ApprovalRequested, Event
    from tui.exec.backend import ExecutionBackend
    from tui.extensions import Extensions
    from tui.security.trust import WorkspaceTrust
    from tui.session import AgentSession
    from tui.ui.approval.modal import ApprovalScreen

SessionFactory = Callable[[str | None, "ExecutionBackend"], "AgentSession"]
"""Builds a fresh (``None``) or resumed session on the same backend: ``/clear``, ``/resume``."""
SessionBuilder = Callable[[], "Awaitable[tuple[AgentSession, SessionFactory | None]]"]
"""Builds the first session (after the first frame) and the factory for later ones.

Raises ``AgentTuiError`` (a bad config file, an unreachable host, an unknown session id) to end
the app with that message; its ``exit_code`` attribute, if any, is the exit status (else 2)."""


class StartupError(AgentTuiError):
    """The session could not be built; ``exit_code`` is what ``agent-tui`` exits with."""

    title = "Cannot start"

    def __init__(self, msg: str, exit_code: int = 2) -> None:
        super().__init__(msg)
        self.exit_code = exit_code


STYLES = ("app.tcss", "chat.tcss", "tools.tcss", "mirror.tcss", "status.tcss", "prompt.tcss")
REPLAY_EVENTS = 2000
"""A resumed session shows at most this many of its last events."""
_PANE_IN_ACTOR = re.compile(r"tmux:(%\d+)")
_user_call_ids = itertools.count(1)


def _context_window(loop: Any) -> int | None:
    """The model's window from the loop's context meter (``loop.context.meter.window``)
    where the loop has one; ``None`` keeps the status bar's percentage hidden."""
    meter = getattr(getattr(loop, "context", None), "meter", None)
    window = getattr(meter, "window", None)
    return window if isinstance(window, int) and window > 0 else None


def untrusted_notice(trust: WorkspaceTrust) -> str:
    return (
        f"{len(trust.held)} setting(s) from this workspace's files are not applied "
        "(untrusted); /trust reviews them again"
    )


def no_provider_text(reason: str) -> Text:
    """What the no-provider banner says: the exact reason, then the ways out."""
    text = Text()
    text.append("No model provider", "bold")
    text.append(" — " + reason.rstrip(".") + ".\n\n")
    text.append("To talk to a model, set one of:\n")
    for label, how, note in (
        ("OpenAI     ", "OPENAI_API_KEY=…", ""),
        ("Anthropic  ", "ANTHROPIC_API_KEY=…", " and --provider anthropic"),
        ("local model", "--base-url http://127.0.0.1:11434/v1", ""),
    ):
        text.append(f"  {label}  ", "dim")
        text.append(how, "bold")
        text.append(note + "\n", "dim")
    text.append("\nMeanwhile ")
    text.append("!command", "bold")
    text.append(" runs a shell command through the same approvals, and the pane mirror works.")
    return text


class AgentApp(App[int]):
    """The agent's full-screen UI for one ``AgentSession``.

    Args:
        session: The wired session (its bus is read, its loop driven); None with ``builder``.
        builder: Builds the session in a thread once the first frame is up.
        session_factory: Builds a new or resumed session for ``/clear`` and ``/resume``.
        clock: Wall-clock seconds (tests freeze it for deterministic frames).
        monotonic: Monotonic seconds for the auto-approve window.
        cursor_blink: Off in tests and snapshots.
        history_path: Where prompt history is kept (None: memory only).
        frame: Seconds per adapter batch.
    """

    TITLE = "agent-tui"
    ESCAPE_TO_MINIMIZE = False
    """Esc cancels a turn (or reaches the pane being typed into); f5 leaves the zoom."""
    CSS_PATH = [str(styles_dir() / name) for name in STYLES]
    COMMANDS = App.COMMANDS | {SlashCommandProvider}
    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel"),
        # Priority: the prompt's own ctrl+c (copy) would swallow it otherwise; a selection is
        # still copied (see ``action_interrupt``).
        Binding("ctrl+c", "interrupt", "Cancel / quit", show=False, priority=True),
        Binding("ctrl+t", "take_pane", "Take pane"),
        Binding("f4", "toggle_mirror", "Mirror"),
        # Priority: the prompt's text area would take f6 (select line) for itself.
        Binding(ZOOM_KEY, "zoom_mirror", "Zoom", priority=True),
        Binding(SWITCH_KEY, "switch_panel", "Switch panel", priority=True),
        Binding("ctrl+o", "toggle_latest", "Expand"),
        Binding("ctrl+l", "latest_output", "Output"),
        Binding("ctrl+g", "grants", "Grants"),
        # Priority: the prompt's text area binds ctrl+y to redo (super+y still redoes there).
        Binding("ctrl+y", "copy_answer", "Copy answer", show=False, priority=True),
        Binding("ctrl+right_square_bracket", "release_pane", "Give the pane back"),
        Binding("alt+left", "resize_columns(-4)", "Narrower chat", show=False),
        Binding("alt+right", "resize_columns(4)", "Wider chat", show=False),
    ]

    def __init__(
        self,
        session: AgentSession | None = None,
        *,
        builder: SessionBuilder | None = None,
        session_factory: SessionFactory | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        cursor_blink: bool = True,
        history_path: Path | None = None,
        frame: float = FRAME_SECONDS,
    ) -> None:
        super().__init__()
        if session is None and builder is None:
            raise ValueError("AgentApp needs a session or a builder")
        self._session = session
        self.builder = builder
        self.session_factory = session_factory
        self._queued: list[str] = []
        """Prompts sent before the session was ready."""
        self.clock = clock
        self.cursor_blink = cursor_blink
        self.frame = frame
        self.history = PromptHistory(history_path)
        self.auto_approve = AutoApprove(clock=monotonic)
        self.ctrl_c = CtrlC(clock=monotonic)
        self.holding_pane = False
        self.pane_target: str | None = None
        self.frames: dict[str, PaneFrame] = {}
        self.usage = [0, 0, 0, 0]
        """Tokens in, out, cached, and the last main request's prompt."""
        self.cost: float | None = None
        self.approval_open: tuple[ApprovalRequested, ApprovalScreen] | None = None
        self.session_ready = asyncio.Event()
        """Set once a session is attached."""
        self._approvals: collections.deque[ApprovalRequested] = collections.deque()
        self._user_cancels: dict[str, asyncio.Event] = {}
        self._pane_keys: list[Typed] = []
        self._sending_keys = False
        self._keys_failing = False
        self._subscription: Subscription | None = None
        self._adapter: BusAdapter | None = None
        self._was_auto = False
        self._turn_active = False
        self._pane_pump: Any = None
        self._pane_sizer: PaneSizeFollower | None = None
        self.reload_settings: Callable[[], Awaitable[None]] | None = None
        """Re-reads the settings before ``/trust`` starts the session again (set by ``run``)."""
        self.format_time: Callable[[float], str] | None = None
        """How the grants screen shows a time (snapshots pin it to UTC)."""
        self.theme = "textual-dark"
        self.attention = Attention(
            self._write_terminal, self._toast, lambda: self.app_focus, monotonic
        )
        """OSC 52 copies, the last answer, bell and desktop notices."""

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # Kept as attributes: panels are reached without a query, even while a modal is up
        # or the app is shutting down.
        self.chat = ChatPanel(id="chat")
        self.prompt = PromptInput(self.history, id="prompt", cursor_blink=self.cursor_blink)
        self.todo = TodoList(id="todo")
        self.tools = ToolPanel(id="tools", clock_ms=lambda: self.clock() * 1000)
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
                yield self.tools
                yield self.mirror
        yield self.status
        yield Footer()

    @property
    def session(self) -> AgentSession:
        if self._session is None:
            raise RuntimeError("the session is not ready yet")
        return self._session

    def _spill_dir(self) -> Path:
        return tool_output_dir() / "ui" / self.session.session_id

    async def on_mount(self) -> None:
        self.panels = PanelLayout(
            self.query_one("#main"),
            self.query_one("#right"),
            self.query_one(PanelTabs),
            self.mirror,
        )
        self.panels.fit(self.size.width)
        self.set_interval(1.0, self._tick)
        self.prompt.focus()
        if self._session is not None:
            self._attach_session(self._session)
            await self._replay_saved()
        else:
            self.status.set(provider="", model="starting…")
            # After the first frame: the builder's imports would compete with it for the GIL.
            self.call_after_refresh(self._build_session)

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
        await self._session_ready(session, factory)

    async def _session_ready(self, session: AgentSession, factory: SessionFactory | None) -> None:
        if self.session_factory is None:
            self.session_factory = factory
        self._attach_session(session)
        await self._replay_saved()
        queued, self._queued = self._queued, []
        for text in queued:
            await self.on_prompt_submitted(PromptSubmitted(text))

    def _attach_session(self, session: AgentSession) -> None:
        """Subscribe to ``session``'s bus and show what it is."""
        self._session = session
        self.session_ready.set()
        self.refresh_bindings()  # the footer shows what is possible now
        self.tools.spill_dir = self._spill_dir()
        self.tools.spill_cap = session.loaded.settings.agent.output_disk_cap
        self.attention.configure(session.loaded.settings.notify)
        self._subscription = session.bus.subscribe("ui")
        self._adapter = BusAdapter(self._subscription, self._deliver, frame=self.frame)
        self._drain_bus(self._adapter)
        provider = session.provider
        self.status.set(
            provider=provider.name if provider else "",
            model=provider.model if provider else "",
            actor=session.backend.actor,
            mode=session.policy.approval_mode.value,
        )
        if not session.backend.SUPPORTS_TMUX:
            self.mirror.set_unavailable(f"no tmux pane: the backend is {session.backend.actor}")
        else:
            self.mirror.set_unavailable(None)
            self._start_pane_pump(session)
        resize = getattr(session.backend, "resize_pane", None)
        if session.backend.SUPPORTS_TMUX and resize is not None:
            self._pane_sizer = PaneSizeFollower(
                resize, on_resized=self._pane_resized, on_error=self._pane_resize_failed
            )
            self._fit_pane()
        self.prompt.completion_source = SessionSource(session)
        self._banner()
        for warning in session.warnings:
            # Said while the session was built, before this app listened to its bus.
            self.chat.add_notice(warning, level="warning")
        self._start_extensions(session)

    @work(group="extensions", exit_on_error=False, description="MCP servers, OpenAPI, cron")
    async def _start_extensions(self, session: AgentSession) -> None:
        """Adapter tools arrive while the person types; jobs run while the app is open."""
        session.start_scheduler()
        await session.start_extensions()

    def _banner(self) -> None:
        session = self.session
        if session.loop is None:
            reason = session.provider_error or "no model provider is configured"
            self.chat.add_banner(no_provider_text(reason), warning=True)
            return
        provider = session.provider
        text = Text()
        text.append("agent-tui", "bold")
        text.append(f"  ·  {session.workspace}\n", "dim")
        if provider is not None:
            text.append(f"{provider.name} · {provider.model}", "bold")
        text.append(
            f" on {session.backend.actor} · approvals: {session.policy.approval_mode.value}"
        )
        text.append("\nType a message, /help for commands, !cmd to run one yourself.", "dim")
        self.chat.add_banner(text)

    @work(group="pane-pump", exclusive=True, exit_on_error=False, description="pane frames")
    async def _start_pane_pump(self, session: AgentSession) -> None:
        """Frames of the agent's tmux pane onto the bus (``PaneSnapshot``), for the mirror."""
        from tui.exec.tmux.backend import TmuxBackend
        from tui.exec.tmux.mirror import PaneMirror as PanePump

        if not isinstance(session.backend, TmuxBackend):
            return  # tmux-capable but not ours: its owner publishes the frames
        await self._stop_pane_pump()
        pump = PanePump(session.backend, session.bus.publish)
        self._pane_pump = pump
        await pump.start()

    async def _stop_pane_pump(self) -> None:
        pump, self._pane_pump = self._pane_pump, None
        if pump is not None:
            await pump.close()

    # -- the adapter -----------------------------------------------------------------------

    @work(group="bus", exclusive=True, exit_on_error=False, description="bus → UI adapter")
    async def _drain_bus(self, adapter: BusAdapter) -> None:
        await adapter.run()

    def _deliver(self, events: list[Event], dropped: int) -> None:
        self.post_message(BusBatch(events, dropped))

    async def on_bus_batch(self, message: BusBatch) -> None:
        try:
            await self.apply_events(message.events, replay=message.replay)
            if message.dropped:
                self.status.set(dropped=message.dropped)
        finally:
            if not message.replay and self._adapter is not None:
                self._adapter.consumed()

    async def apply_events(self, events: list[Event], *, replay: bool = False) -> None:
        """One frame's events to every panel, inside one batch update."""
        now_ms = self.clock() * 1000
        with self.batch_update():
            await self.chat.apply(events)
            self.tools.apply(events, now_ms=now_ms)
            snapshots: dict[str, Any] = {}
            for event in events:
                kind = getattr(event, "kind", "")
                if kind == "pane_snapshot":
                    snapshots[str(getattr(event, "pane_id", ""))] = event
                elif kind == "usage":
                    self.usage[0] += event.input_tokens  # type: ignore[attr-defined]
                    self.usage[1] += event.output_tokens  # type: ignore[attr-defined]
                    self.usage[2] += event.cached_tokens  # type: ignore[attr-defined]
                    if event.loop_id == "main":
                        self.usage[3] = event.input_tokens  # type: ignore[attr-defined]
                    if event.cost_usd is not None:  # type: ignore[attr-defined]
                        self.cost = (self.cost or 0.0) + event.cost_usd  # type: ignore[attr-defined]
                elif kind == "tool_started":
                    match = _PANE_IN_ACTOR.search(event.actor)  # type: ignore[attr-defined]
                    if match:
                        self._select_pane(match.group(1))
                elif kind == "approval_requested" and not replay:
                    self._on_approval_requested(event)  # type: ignore[arg-type]
                elif kind == "approval_resolved":
                    self._close_approval(request_id=event.request_id)  # type: ignore[attr-defined]
                elif kind == "tool_completed":
                    self._close_approval(tool_call_id=event.tool_call_id)  # type: ignore[attr-defined]
                elif kind == "todo_list" and event.loop_id == "main":
                    self.todo.show(event.items)  # type: ignore[attr-defined]
            for snapshot in snapshots.values():
                self._on_snapshot(PaneFrame.from_event(snapshot))
            self._refresh_status(events)
            if not replay:
                self.attention.observe(events)

    def _refresh_status(self, events: list[Event]) -> None:
        for event in events:
            if event.loop_id != "main":
                continue
            kind = getattr(event, "kind", "")
            if kind == "turn_started" or (
                kind == "user_message" and not event.steering  # type: ignore[attr-defined]
            ):
                self._turn_active = True
            elif kind == "turn_ended":
                self._turn_active = False
        loop = self.session.loop
        self.status.set(
            input_tokens=self.usage[0],
            output_tokens=self.usage[1],
            cached_tokens=self.usage[2],
            context_tokens=self.usage[3],
            # Hook: the loop's context meter, once it has one, knows the model's window.
            context_window=_context_window(loop),
            cost_usd=self.cost,
            running_tools=self.tools.running,
            working=self._turn_active or bool(loop and loop.running),
        )

    def _tick(self) -> None:
        if self._session is None:
            return
        self.tools.tick(self.clock() * 1000)
        remaining = self.auto_approve.remaining()
        if self._was_auto and remaining <= 0:
            self.chat.add_notice("auto-approve ended: requests ask again", level="warning")
        self._was_auto = remaining > 0
        self.status.set(auto_approve=format_remaining(remaining) if remaining > 0 else "")

    # -- approvals -------------------------------------------------------------------------

    def _on_approval_requested(self, request: ApprovalRequested) -> None:
        broker = self.session.broker
        if broker is None:
            return  # another approver (a test's, say) answers this session
        if self.auto_approve.active:
            from tui.events import ApprovalAnswer

            if broker.resolve(request.request_id, ApprovalAnswer.allow_once()):
                self.auto_approve.answered += 1
                left = format_remaining(self.auto_approve.remaining())
                what = request.command or request.tool_name
                self.chat.add_notice(
                    f"auto-approved {request.tool_name}: {what} ({left} left in the window)",
                    level="warning",
                )
            return
        self._approvals.append(request)
        self.attention.approval_waiting(request.tool_name)
        self._pump_approvals()

    def _pump_approvals(self) -> None:
        if self.approval_open is None and self._approvals:
            self._ask_approval(self._approvals.popleft())

    @work(group="approval", exit_on_error=False, description="ask the user to approve a call")
    async def _ask_approval(self, request: ApprovalRequested) -> None:
        from tui.ui.approval.modal import ApprovalScreen

        screen = ApprovalScreen(request, waiting=len(self._approvals))
        self.approval_open = (request, screen)
        try:
            answer = await self.push_screen_wait(screen)
        finally:
            self.approval_open = None
        if answer is not None:
            self.answer_approval(request.request_id, answer)
        self._pump_approvals()

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Resolve a pending request; False when it no longer waits."""
        broker = self.session.broker
        return broker.resolve(request_id, answer) if broker is not None else False

    def _close_approval(
        self, *, request_id: str | None = None, tool_call_id: str | None = None
    ) -> None:
        """A request answered or ended elsewhere (timeout, cancel): its modal goes away."""
        self._approvals = collections.deque(
            r
            for r in self._approvals
            if r.request_id != request_id and r.tool_call_id != tool_call_id
        )
        if self.approval_open is None:
            return
        request, screen = self.approval_open
        matches = request.request_id == request_id or request.tool_call_id == tool_call_id
        if matches and screen.is_current:
            screen.dismiss(None)

    # -- the prompt ------------------------------------------------------------------------

    async def on_prompt_submitted(self, message: PromptSubmitted) -> None:
        text = message.text
        stripped = text.strip()
        if stripped.startswith("/") and not stripped.startswith("//"):
            await self.run_slash(stripped)
            return
        if self._session is None:
            self._queued.append(text)
            self.chat.add_notice("starting up: this is sent as soon as the session is ready")
            return
        if stripped.startswith("!"):
            command = stripped[1:].strip()
            if command:
                self.run_user_shell(command)
            return
        loop = self.session.loop
        if loop is None:
            self.chat.add_user(text)
            self.chat.add_error(
                "No model provider",
                (self.session.provider_error or "no model provider is configured")
                + " — see the banner above for what to set; !command works meanwhile.",
            )
            return
        if loop.running:
            loop.steer(text)
            return
        self.status.set(working=True)
        self._submit(text)

    @work(group="turn", exit_on_error=False, description="one agent turn")
    async def _submit(self, text: str) -> None:
        attached = await attach_mentions(text, self.session.read_mentioned)
        for note in attached.notes:
            self.chat.add_notice(note, level="warning")
        await self.session.submit(attached.text)

    @work(group="shell", exit_on_error=False, description="a ! command typed by the user")
    async def run_user_shell(self, command: str) -> None:
        """``!cmd``: the same path the agent's calls take (policy, approval, backend, bus)."""
        from tui.events import ToolCallRequested
        from tui.tools.context import ToolContext

        session = self.session
        call_id = f"user-{next(_user_call_ids)}"
        cancel = asyncio.Event()
        self._user_cancels[call_id] = cancel
        arguments = {"command": command}
        session.bus.publish(
            ToolCallRequested(
                tool_call_id=call_id, tool_name="run_shell", arguments=json.dumps(arguments)
            )
        )
        ctx = ToolContext(
            tool_call_id=call_id,
            tool_name="run_shell",
            backend=session.backend,
            policy=session.policy,
            cancel=cancel,
            on_update=session.bus.publish,
        )
        try:
            await session.registry.execute("run_shell", arguments, ctx)
        finally:
            self._user_cancels.pop(call_id, None)

    # -- slash commands --------------------------------------------------------------------

    async def run_slash(self, text: str) -> None:
        try:
            command = parse_slash(text)
        except UnknownCommand as error:
            self.chat.add_notice(str(error), level="warning")
            return
        if self._session is None and command.name != "help":
            self.chat.add_notice("starting up: try again in a moment", level="warning")
            return
        handler = getattr(self, f"_slash_{command.name}")
        result = handler(command.argument)
        if inspect.isawaitable(result):
            await result

    def _slash_help(self, argument: str) -> None:
        self.chat.add_markdown(help_markdown())

    def _slash_approve(self, argument: str) -> None:
        if argument.lower() in ("off", "stop", "0"):
            was = self.auto_approve.active
            self.auto_approve.stop()
            self._was_auto = False
            self.status.set(auto_approve="")
            self.chat.add_notice("auto-approve is off" if was else "auto-approve was not on")
            return
        if not argument:
            left = self.auto_approve.remaining()
            self.chat.add_notice(
                f"auto-approve: {format_remaining(left)} left" if left else "auto-approve is off"
            )
            return
        try:
            seconds = parse_duration(argument)
        except DurationError as error:
            self.chat.add_notice(str(error), level="warning")
            return
        self.auto_approve.start(seconds)
        self._was_auto = True
        self.status.set(auto_approve=format_remaining(seconds))
        self.chat.add_notice(
            f"auto-approving every request for {format_remaining(seconds)}; each one is listed "
            "here. /approve off ends it.",
            level="warning",
        )

    def _slash_compact(self, argument: str) -> None:
        if self.session.loop is None:
            self.chat.add_notice("no model provider: nothing to compact", level="warning")
            return
        self._compact(argument)

    @work(group="compact", exclusive=True, exit_on_error=False, description="compact the chat")
    async def _compact(self, focus: str) -> None:
        await self.session.compact(focus)

    async def _slash_mcp(self, argument: str) -> None:
        extensions = self.session.extensions
        if extensions is None:
            return
        verb, _, name = argument.partition(" ")
        if verb == "restart" and name.strip():
            self.chat.add_notice(f"restarting MCP server {name.strip()}…")
            self._restart_mcp(extensions, name.strip())
            return
        if verb == "trust":
            self._slash_trust("")
            return
        if verb:
            self.chat.add_notice("usage: /mcp, /mcp restart NAME, /mcp trust", level="warning")
            return
        self.chat.add_info("/mcp", extensions.describe())

    @work(group="mcp", exit_on_error=False, description="restart an MCP server")
    async def _restart_mcp(self, extensions: Extensions, name: str) -> None:
        try:
            await extensions.restart(name)
        except ValueError as error:
            self.chat.add_notice(str(error), level="warning")
            return
        self.chat.add_info("/mcp", extensions.describe())

    async def ask_trust(self, trust: WorkspaceTrust) -> bool:
        """Show what the workspace's files would change; True only if the person trusts it."""
        from tui.ui.trust.screen import TrustScreen

        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.push_screen(TrustScreen(trust), lambda ok: answer.set_result(bool(ok)))
        return await answer

    def _slash_trust(self, argument: str) -> None:
        loaded = self.session.loaded
        trust = loaded.trust
        if not trust.held:
            self.chat.add_notice(
                "nothing here waits for trust: this workspace's files only tighten your settings"
                if trust.files
                else "this workspace has no .agent-tui.toml or .mcp.json"
            )
            return
        if trust.trusted:
            self.chat.add_notice(f"{trust.key} is trusted; its settings apply")
            return
        self._trust_flow()

    @work(group="trust", exclusive=True, exit_on_error=False, description="workspace trust")
    async def _trust_flow(self) -> None:
        """Ask, record, and start the session again under the workspace's settings (a worker:
        the screen's answer arrives through the app's own message queue)."""
        from tui.session import trust_workspace

        loaded = self.session.loaded
        trust = loaded.trust
        if not await self.ask_trust(trust):
            self.chat.add_notice(untrusted_notice(trust), level="warning")
            return
        await asyncio.to_thread(trust_workspace, loaded)
        if self.reload_settings is not None:
            await self.reload_settings()
        await self.switch_session(self.session.session_id)
        self.chat.add_notice(f"trusted {trust.key} in {loaded.user_config_path}")

    def _slash_tools(self, argument: str) -> None:
        registry = self.session.registry
        deferred = {tool.name for tool in registry.deferred_tools()}
        rows = ["| tool | permission | state |", "|---|---|---|"]
        for name in registry.names():
            tool = registry.get(name)
            if tool is None:
                continue
            state = "deferred (tool_search)" if name in deferred else "loaded"
            rows.append(f"| `{name}` | {tool.permission.value} | {state} |")
        self.chat.add_markdown("\n".join(rows))

    async def _slash_cron(self, argument: str) -> None:
        from tui.tools.context import ToolContext

        session = self.session
        if "cron_list" not in session.registry:
            self.chat.add_notice("the cron tools are switched off", level="warning")
            return
        ctx = ToolContext("user-cron", "cron_list", session.backend, session.policy)
        result = await session.registry.execute("cron_list", "{}", ctx)
        self.chat.add_info("/cron", result.text)

    async def _slash_skills(self, argument: str) -> None:
        from tui.tools.builtin.catalog import user_skills_dir
        from tui.tools.builtin.skill import format_skill_list, list_skills

        skill = self.session.registry.get("skill")
        workspace = getattr(skill, "workspace", self.session.workspace)
        scan = await asyncio.to_thread(list_skills, workspace, user_skills_dir())
        lines = [format_skill_list(scan) or "No skills found."]
        places = (
            [f"{workspace}/.agent-tui/skills", f"{workspace}/.claude/skills"] if workspace else []
        )
        lines.append(f"\nLooked in {', '.join([*places, str(user_skills_dir())])}.")
        lines += [f"- problem: {problem}" for problem in scan.problems]
        self.chat.add_markdown("\n".join(lines))

    def _slash_mode(self, argument: str) -> None:
        from tui.security.permissions import ApprovalMode

        policy = self.session.policy
        if not argument:
            modes = ", ".join(mode.value for mode in ApprovalMode)
            self.chat.add_notice(f"approval mode: {policy.approval_mode.value} (choices: {modes})")
            return
        try:
            policy.approval_mode = ApprovalMode(argument)
        except ValueError:
            modes = ", ".join(mode.value for mode in ApprovalMode)
            self.chat.add_notice(f"no mode {argument!r}; choose one of {modes}", level="warning")
            return
        self.status.set(mode=policy.approval_mode.value)
        self.chat.add_notice(f"approval mode is now {policy.approval_mode.value}")

    def _slash_model(self, argument: str) -> None:
        provider = self.session.provider
        if provider is None:
            self.chat.add_notice(
                "no model provider: see the banner for what to set", level="warning"
            )
            return
        if not argument:
            self.chat.add_notice(f"model: {provider.name} · {provider.model}")
            return
        provider.model = argument
        self.status.set(model=argument)
        self.chat.add_notice(f"the next request goes to {provider.name} · {argument}")

    async def _slash_clear(self, argument: str) -> None:
        await self.switch_session(None)

    async def _slash_resume(self, argument: str) -> None:
        if not argument:
            await self._slash_sessions("")
            return
        await self.switch_session(argument)

    async def _slash_sessions(self, argument: str) -> None:
        store = self.session.store
        infos = await asyncio.to_thread(store.list, self.session.workspace)

        async def chosen(session_id: str | None) -> None:
            if session_id is not None and session_id != self.session.session_id:
                await self.switch_session(session_id)

        from tui.ui.sessions.screen import SessionsScreen

        self.push_screen(SessionsScreen(infos, self.session.session_id), chosen)

    def _slash_grants(self, argument: str) -> None:
        self.action_grants()

    async def _slash_pane(self, argument: str) -> None:
        from tui.ui import pane_info

        word = argument.strip()
        if word in ("keep", "close"):
            self.chat.add_notice(await pane_info.set_kept(self.session.backend, word == "keep"))
            return
        self.panels.show_mirror()
        if word:
            self._select_pane(word if word.startswith("%") else f"%{word}")
        known = ", ".join(sorted(self.frames)) or "none yet"
        target = self.pane_target or "none"
        lines = [f"mirrored pane: {target} (panes seen: {known})"]
        lines += await pane_info.pane_lines(self.session)
        self.chat.add_notice("\n".join(lines))

    async def switch_session(self, resume: str | None) -> None:
        """``/clear`` (a new session) or ``/resume ID``, on the same backend."""
        if self.session_factory is None:
            self.chat.add_notice("this app was started without a session factory", level="warning")
            return
        loop = self.session.loop
        if loop is not None and loop.busy:
            self.chat.add_notice("the agent is working: esc cancels it first", level="warning")
            return
        from tui.errors import AgentTuiError

        old = self.session
        try:
            new = self.session_factory(resume, old.backend)
        except AgentTuiError as error:
            self.chat.add_notice(error.msg, level="warning")
            return
        if self._subscription is not None:
            old.bus.unsubscribe(self._subscription)
        if old.provider is not None:
            await old.provider.aclose()
        old.transcript.close()
        await self._stop_pane_pump()
        self.chat.clear_entries()
        self.tools.clear_blocks()
        self.usage = [0, 0, 0, 0]
        self.cost = None
        self._attach_session(new)
        await self._replay_saved()

    async def _replay_saved(self) -> None:
        """A resumed session shows its saved story (never asking its old approvals again)."""
        session = self.session
        if session.loop is None or not session.loop.messages:
            return
        try:
            events = await asyncio.to_thread(session.store.load_events, session.session_id)
        except Exception:
            return
        events = [e for e in events if getattr(e, "kind", "") != "assistant_delta"]
        await self.apply_events(list(events[-REPLAY_EVENTS:]), replay=True)
        for block in self.tools.blocks.values():
            if not block.state.finished:
                block.state.status = "cancelled"
                block.state.summary = "interrupted: the session ended before this call finished"
                block.sync()
        self.chat.add_notice(f"resumed session {session.session_id}")

    # -- keys ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the person types into the pane, every key is theirs, except giving it back
        # and quitting.
        if self._session is None and action in ("cancel_turn", "take_pane", "grants"):
            return False  # still starting: nothing to cancel, no pane, no grants yet
        if action == "release_pane":
            return self.holding_pane
        if action == "switch_panel" and not self.holding_pane:
            panels = getattr(self, "panels", None)  # set on mount
            return panels is not None and panels.narrow  # only stacked panels switch
        return not self.holding_pane or action == "quit"

    async def action_interrupt(self) -> None:
        """Ctrl+C: copy a selection, else cancel a running turn, else (twice) quit."""
        focused = self.focused
        if isinstance(focused, TextArea | Input) and focused.selected_text:
            focused.action_copy()
            return
        if self.screen.get_selected_text():
            self.screen.action_copy_text()
            return
        press = self.ctrl_c.press(busy=self._busy())
        if press == "cancel":
            self.action_cancel_turn()
        elif press == "arm":
            self.notify(QUIT_HINT, timeout=QUIT_WINDOW)
        else:
            await self.action_quit()

    def _busy(self) -> bool:
        """A turn or a ``!`` command is running: Ctrl+C cancels rather than quits."""
        if self._session is None:
            return False
        loop = self.session.loop
        return self._turn_active or bool(self._user_cancels) or bool(loop and loop.running)

    def action_cancel_turn(self) -> None:
        cancelled = False
        loop = self.session.loop
        if loop is not None and loop.busy:
            loop.cancel()
            cancelled = True
        for event in self._user_cancels.values():
            event.set()
            cancelled = True
        if cancelled:
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

    def _target_block(self) -> ToolBlock | None:
        focused = self.focused
        if isinstance(focused, ToolBlock):
            return focused
        return self.tools.latest()

    def action_toggle_latest(self) -> None:
        block = self._target_block()
        if block is not None:
            block.expanded = not block.expanded
            block.scroll_visible()

    def action_latest_output(self) -> None:
        block = self._target_block()
        if block is not None:
            self.open_pager(block.state.call_id)

    def action_grants(self) -> None:
        def closed(revoked: int | None) -> None:
            if revoked:
                self.chat.add_notice(f"revoked {revoked} grant{'s' if revoked > 1 else ''}")

        from tui.ui.grants.screen import GrantsScreen, format_created

        screen = GrantsScreen(self.session.grants, format_time=self.format_time or format_created)
        self.push_screen(screen, closed)

    @on(ToolBlockAction)
    async def _block_action(self, message: ToolBlockAction) -> None:
        block = self.tools.blocks.get(message.tool_call_id)
        if message.action.startswith("copy_") and block is not None:
            await self.attention.copy_block(block, message.action)
        else:
            self.open_pager(message.tool_call_id)

    # -- clipboard and notifications --------------------------------------------------------

    def _write_terminal(self, data: str) -> None:
        if self._driver is not None:
            self._driver.write(data)

    def _toast(self, message: str, severity: str) -> None:
        self.notify(message, severity=severity, timeout=3)  # type: ignore[arg-type]

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

    @work(group="pager", exclusive=True, exit_on_error=False, description="open the pager")
    async def open_pager(self, call_id: str) -> None:
        block = self.tools.blocks.get(call_id)
        if block is None:
            return
        if block.state.output.spilling:
            await asyncio.to_thread(SPILL.flush)
        text, path, description = block.output_source()
        state = block.state
        title = f"{state.tool_name} · {state.command or json.dumps(state.arguments)[:200]}"
        from tui.ui.tools.pager import OutputPager

        await self.push_screen(OutputPager(title, text, path, description))

    # -- the pane --------------------------------------------------------------------------

    def _select_pane(self, pane_id: str) -> None:
        if self.pane_target == pane_id:
            return
        self.pane_target = pane_id
        frame = self.frames.get(pane_id)
        if frame is not None:
            self.mirror.show(frame)
        self._fit_pane()

    def _on_snapshot(self, frame: PaneFrame) -> None:
        self.frames[frame.pane_id] = frame
        if len(self.frames) > 16:
            del self.frames[next(iter(self.frames))]
        if self.pane_target is None:
            self.pane_target = frame.pane_id
        if frame.pane_id == self.pane_target:
            self.mirror.show(frame)
            if (frame.width, frame.height) != self.mirror.inner_size():
                self._fit_pane()

    @on(MirrorPanel.Resized)
    def _mirror_resized(self) -> None:
        self._fit_pane()

    def _fit_pane(self) -> None:
        """The followed pane takes the mirror box's inner size (debounced, at least 20x5)."""
        if self._pane_sizer is not None and self.pane_target is not None:
            self._pane_sizer.request(self.pane_target, *self.mirror.inner_size())

    def _pane_resized(self, pane_id: str) -> None:
        if self._pane_pump is not None:
            self._pane_pump.refresh()

    def _pane_resize_failed(self, error: Exception) -> None:
        self.notify(f"could not resize the pane to the mirror: {error}", severity="warning")

    def action_take_pane(self) -> None:
        backend = self.session.backend
        if not backend.SUPPORTS_TMUX:
            self.notify(f"no tmux pane: the backend is {backend.actor}", severity="warning")
            return
        if self.pane_target is None:
            self.notify("no pane yet: the agent has not used one", severity="warning")
            return
        self.panels.show_mirror()
        self.holding_pane = True
        self._keys_failing = False
        self.refresh_bindings()
        self.mirror.set_holding(True)
        self.status.set(holding_pane=True)
        self.chat.add_notice(
            f"you have the keyboard of tmux {self.pane_target}; ctrl+] gives it back",
            level="warning",
        )

    def action_release_pane(self) -> None:
        if not self.holding_pane:
            return
        self.holding_pane = False
        self.refresh_bindings()
        self.mirror.set_holding(False)
        self.status.set(holding_pane=False)
        self.chat.add_notice(f"the agent has the keyboard of tmux {self.pane_target} again")
        self.prompt.focus()

    @on(PaneRelease)
    def _pane_release(self) -> None:
        self.action_release_pane()

    @on(PaneKeys)
    def _pane_keys_typed(self, message: PaneKeys) -> None:
        if not self.holding_pane:
            return
        self._pane_keys.extend(message.keys)
        if not self._sending_keys:
            self._sending_keys = True
            self._send_pane_keys()

    @work(group="pane-keys", exit_on_error=False, description="forward keys to the tmux pane")
    async def _send_pane_keys(self) -> None:
        """Send what was typed, in order; a failure is said once per take-over, never ends it."""
        backend: Any = self.session.backend
        try:
            while self._pane_keys and self.pane_target is not None:
                batch = list(self._pane_keys)
                self._pane_keys.clear()
                try:
                    await forward(backend, self.pane_target, batch)
                except KeysNotSent as failed:
                    if not self._keys_failing:
                        self._keys_failing = True
                        self.chat.add_error(
                            "keys not sent",
                            f"tmux {self.pane_target} did not take {len(failed.unsent)} of "
                            f"the keys you typed: {failed.error}. You still have its keyboard; "
                            "ctrl+] gives it back.",
                        )
        finally:
            self._sending_keys = False

    # -- failures and exit -----------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure ends here, said in the chat rather than lost."""
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        title = getattr(error, "title", None) or f"{event.worker.description or 'worker'} failed"
        message = getattr(error, "msg", None) or f"{type(error).__name__}: {error}"
        self.chat.add_error(str(title), str(message))
        if event.worker.group == "turn":
            self._turn_active = False
            self.status.set(working=False)

    async def on_unmount(self) -> None:
        if self._session is None:
            return
        if self._subscription is not None:
            self.session.bus.unsubscribe(self._subscription)
        broker = self.session.broker
        if broker is not None:
            broker.cancel_all("the app was closed")
        loop = self.session.loop
        if loop is not None and loop.busy:
            loop.cancel()
        for event in self._user_cancels.values():
            event.set()
        # Let the turn wind down before the transcript closes under it.
        busy = [w for w in self.workers if w.group in ("turn", "shell") and not w.is_finished]
        if busy:
            waiting = asyncio.gather(*(w.wait() for w in busy), return_exceptions=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiting, 3.0)
        await self._stop_pane_pump()
        if self._pane_sizer is not None:
            await self._pane_sizer.close()
        await self.session.aclose()
        await asyncio.to_thread(SPILL.flush, 2.0)


def run(workspace: Path, args: argparse.Namespace) -> int:
    """``agent-tui`` with no prompt: paint first, then settings, target and session."""
    app = make_app(workspace, args)
    app.run()
    return int(app.return_code or 0)


def make_app(workspace: Path, args: argparse.Namespace, **options: Any) -> AgentApp:
    """The app for ``agent-tui`` with no prompt, its session built after the first frame.

    The target follows ``--ssh``/``--container``/``--tmux`` as in headless mode, except that
    tmux is used by default when the target has it (a person is watching: the pane mirror and
    take-over need it). A bad config file or an unknown ``--resume`` id ends the app with exit
    code 2, an unreachable target with 1, each with the same one-line reason as headless mode.
    """

    def prepare() -> Any:
        # In a thread: these imports (pydantic models, the command parser, providers) are
        # most of the start-up time and must not hold the first frame back.
        from tui.cli import load
        from tui.config import ConfigError

        remote = bool(getattr(args, "ssh", None) or getattr(args, "container", None))
        try:
            return load(Path.cwd() if remote else workspace, args)
        except ConfigError as error:
            raise StartupError(error.msg) from None

    current: dict[str, Any] = {}

    async def reload_settings() -> None:
        """After ``/trust``: the next session reads the settings as they now apply."""
        current["loaded"] = await asyncio.to_thread(prepare)

    async def builder() -> tuple[AgentSession, SessionFactory]:
        loaded = await asyncio.to_thread(prepare)
        from tui.session import trust_workspace

        if loaded.trust.pending and await app.ask_trust(loaded.trust):
            await asyncio.to_thread(trust_workspace, loaded)
            loaded = await asyncio.to_thread(prepare)
        current["loaded"] = loaded
        from tui.agent.transcript import SessionNotFound
        from tui.exec.backend import BackendError
        from tui.session import build_session
        from tui.targets import TargetChoice, open_target
        from tui.tools.structured_output import JsonSchemaError

        choice = TargetChoice(
            ssh=getattr(args, "ssh", None),
            container=getattr(args, "container", None),
            tmux=getattr(args, "tmux", None),
        )
        try:
            target = await open_target(choice, loaded.settings, workspace, interactive=True)
        except BackendError as error:
            raise StartupError(error.msg, exit_code=1) from None

        def factory(resume: str | None, backend: ExecutionBackend) -> AgentSession:
            return build_session(
                target.workspace,
                current["loaded"],
                resume=resume,
                backend=backend,
                local_paths=target.local_paths,
                target_home=target.home,
            )

        try:
            session = build_session(
                target.workspace,
                loaded,
                resume=getattr(args, "resume", None),
                continue_latest=bool(getattr(args, "continue_latest", False)),
                backend=target.backend,
                local_paths=target.local_paths,
                target_home=target.home,
            )
        except (SessionNotFound, JsonSchemaError) as error:
            await target.backend.close()
            raise StartupError(error.msg) from None
        # Published before the app listened: shown when the session is attached.
        session.warnings.extend(target.notices)
        if loaded.trust.pending:
            session.warnings.insert(0, untrusted_notice(loaded.trust))
        return session, factory

    options.setdefault("history_path", data_dir() / "prompt-history.jsonl")
    app = AgentApp(builder=builder, **options)
    app.reload_settings = reload_settings
    return app


if __name__ == "__main__":
    from tui.cli import main

    raise SystemExit(main())

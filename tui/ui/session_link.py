"""Which session the app shows, and the switch from one to the next.

Attaching a session subscribes the app to its bus (through the ``BusAdapter``, one batch a
frame), shows what it is (status bar, banner, warnings said while it was built), starts its
pane frames and extensions. ``/clear`` and ``/resume`` switch to a new session on the same
backend; a resumed session's saved story is replayed, never asking its old approvals again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

from tui.errors import AgentTuiError
from tui.locations import tool_output_dir
from tui.ui.adapter import BusAdapter
from tui.ui.banner import no_provider_text, session_text
from tui.ui.prompt.completer import SessionSource

if TYPE_CHECKING:
    from tui.bus import Subscription
    from tui.events import Event
    from tui.session_api import SessionAPI, SessionFactory
    from tui.ui.approval.flow import ApprovalFlow
    from tui.ui.attention import Attention
    from tui.ui.host import AppHost
    from tui.ui.pane_control import PaneControl
    from tui.ui.routing import EventRouter
    from tui.ui.status.usage import UsageMeter

REPLAY_EVENTS = 2000
"""A resumed session shows at most this many of its last events."""

Deliver = Callable[[list["Event"], int], None]
Apply = Callable[[list["Event"]], Awaitable[None]]


class SessionLink:
    """The app's tie to its session.

    Args:
        host: The app (panels, status bar, workers).
        panes: Shown the session's tmux pane, if it has one.
        approvals: Routed the session's approval requests.
        usage: Counts the session's tokens.
        attention: Configured by the session's notify settings.
        deliver: Where each frame's events go (the app posts them to itself).
        replay: Shows a resumed session's saved events (marked as a replay).
        frame: Seconds per adapter batch.
    """

    def __init__(
        self,
        host: AppHost,
        panes: PaneControl,
        approvals: ApprovalFlow,
        usage: UsageMeter,
        attention: Attention,
        deliver: Deliver,
        replay: Apply,
        frame: float,
    ) -> None:
        self.host = host
        self.panes = panes
        self.approvals = approvals
        self.usage = usage
        self.attention = attention
        self.deliver = deliver
        self.replay_events = replay
        self.frame = frame
        self.session: SessionAPI | None = None
        self.factory: SessionFactory | None = None
        """Builds a new or resumed session for ``/clear`` and ``/resume``."""
        self.adapter: BusAdapter | None = None
        self.router: EventRouter | None = None
        self._subscription: Subscription | None = None

    def attach(self, session: SessionAPI) -> None:
        """Subscribe to ``session``'s bus and show what it is."""
        from tui.ui.routing import EventRouter  # the event classes: after the first frame

        host = self.host
        self.session = session
        self.router = EventRouter(
            self.panes, self.approvals, self.usage, host.todo, self.attention, host.fleet
        )
        host.session_ready.set()
        host.refresh_bindings()  # the footer shows what is possible now
        host.tools.spill_dir = tool_output_dir() / "ui" / session.session_id
        host.tools.spill_cap = session.output_disk_cap()
        self.attention.configure(session.notify_choice())
        self._subscription = session.subscribe("ui")
        self.adapter = BusAdapter(self._subscription, self.deliver, frame=self.frame)
        host.run_worker(
            self.adapter.run,
            name="_drain_bus",
            group="bus",
            exclusive=True,
            exit_on_error=False,
            description="bus → UI adapter",
        )
        host.status.set(
            provider=session.provider_name,
            model=session.model,
            actor=session.actor,
            mode=session.approval_mode,
            sandbox=session.sandbox_status,
        )
        self.panes.attach(session)
        host.fleet.attach(session)
        host.prompt.completion_source = SessionSource(session)
        problem = session.model_problem
        if problem is not None:
            config = str(session.config_path())
            host.chat.add_banner(no_provider_text(problem, config), warning=True)
        else:
            host.chat.add_banner(session_text(session))
        for warning in session.startup_warnings():
            # Said while the session was built, before this app listened to its bus.
            host.chat.add_notice(warning, level="warning")
        host.run_worker(
            partial(self._start_extensions, session),
            name="_start_extensions",
            group="extensions",
            exit_on_error=False,
            description="MCP servers, OpenAPI, cron",
        )

    @staticmethod
    async def _start_extensions(session: SessionAPI) -> None:
        """Adapter tools arrive while the person types; jobs run while the app is open."""
        session.start_scheduler()
        await session.start_extensions()

    def unsubscribe(self) -> None:
        if self.session is not None and self._subscription is not None:
            self.session.unsubscribe(self._subscription)

    async def switch(self, resume: str | None) -> None:
        """``/clear`` (a new session) or ``/resume ID``, on the same backend."""
        host, old = self.host, self.session
        if old is None:
            return
        if self.factory is None:
            host.chat.add_notice("this app was started without a session factory", level="warning")
            return
        if old.turn_busy:
            host.chat.add_notice("the agent is working: esc cancels it first", level="warning")
            return
        try:
            new = self.factory(resume)
        except AgentTuiError as error:
            host.chat.add_notice(error.msg, level="warning")
            return
        self.unsubscribe()
        await old.close_keeping_backend()
        host.chat.clear_entries()
        host.tools.clear_blocks()
        self.usage.reset()
        self.attach(new)
        await self.replay()

    async def replay(self) -> None:
        """A resumed session shows its saved story."""
        session = self.session
        if session is None or not session.has_history:
            return
        try:
            saved = await session.saved_story()
        except Exception:
            return
        await self.replay_events(saved[-REPLAY_EVENTS:])
        for block in self.host.tools.blocks.values():
            if not block.state.finished:
                block.state.status = "cancelled"
                block.state.summary = "interrupted: the session ended before this call finished"
                block.sync()
        self.host.chat.add_notice(f"resumed session {session.session_id}")

"""What the app's collaborators may reach of the app: its panels, its session, its workers.

The approval flow, the pane control, the usage meter and the slash commands each hold the app
as an ``AppHost``, so none of them imports ``tui.ui.app`` (no circle) and each one's reach is
written down here rather than being "the whole app".
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.worker import Worker

    from tui.events import FleetHostState
    from tui.session_api import SessionAPI, SettingsReload
    from tui.ui.chat.panel import ChatPanel
    from tui.ui.chat.todo import TodoList
    from tui.ui.mirror.pane import MirrorPanel, PaneFrame
    from tui.ui.panels import PanelLayout
    from tui.ui.prompt.input import PromptInput
    from tui.ui.status.bar import StatusBar
    from tui.ui.tools.panel import ToolPanel
    from tui.views import TrustView


class FleetPanel(Protocol):
    """A fleet's host list and grid, as the session link and the event router use them
    (``tui.ui.fleet.control.FleetView``)."""

    def attach(self, session: SessionAPI) -> None: ...

    def host_state(self, event: FleetHostState) -> None: ...

    def frame(self, frame: PaneFrame) -> bool: ...

    def pane_gone(self, actor: str, why: str) -> None: ...

    def follows(self, actor: str) -> bool: ...


class AppHost(Protocol):
    """The app as its collaborators see it (``AgentApp`` is one)."""

    chat: ChatPanel
    prompt: PromptInput
    todo: TodoList
    tools: ToolPanel
    mirror: MirrorPanel
    status: StatusBar
    panels: PanelLayout
    reload_settings: SettingsReload | None
    session_ready: asyncio.Event
    format_time: Callable[[float], str] | None

    @property
    def session(self) -> SessionAPI: ...

    async def send_text(self, text: str) -> None:
        """Send ``text`` as the person's message (no slash command is read in it)."""

    async def action_quit(self) -> None: ...

    @property
    def fleet(self) -> FleetPanel: ...

    def notify(
        self,
        message: str,
        *,
        severity: SeverityLevel = ...,
        timeout: float | None = ...,
        markup: bool = ...,
    ) -> None: ...

    def refresh_bindings(self) -> None: ...

    def run_worker(
        self,
        work: Callable[[], Awaitable[Any]],
        *,
        name: str = ...,
        group: str = ...,
        description: str = ...,
        exit_on_error: bool = ...,
        exclusive: bool = ...,
    ) -> Worker[Any]: ...

    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], Any] | None = ...
    ) -> Any: ...

    async def push_screen_wait(self, screen: Screen[Any]) -> Any: ...

    async def ask_trust(self, trust: TrustView) -> bool: ...

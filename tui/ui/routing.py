"""One frame's bus events to the app's collaborators: one handler per event class.

The panels (chat, tool blocks) read every event themselves; this router does what the app
does besides: follow the pane the agent acts on, show and close approval modals, count usage,
show the todo list, keep the turn's state for the status bar and time it for the notices.
Imported once a session is attached (it needs the event classes, which the first frame must
not wait for).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tui.events import (
    ApprovalRequested,
    ApprovalResolved,
    ApprovalsWaiting,
    AssistantMessage,
    Event,
    FleetHostState,
    PaneSnapshot,
    TodoListUpdated,
    ToolCallCompleted,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
    Usage,
    UserMessage,
)
from tui.ui.mirror.pane import PaneFrame

if TYPE_CHECKING:
    from tui.ui.approval.flow import ApprovalFlow
    from tui.ui.attention import Attention
    from tui.ui.chat.todo import TodoList
    from tui.ui.host import FleetPanel
    from tui.ui.pane_control import PaneControl
    from tui.ui.status.usage import UsageMeter


class EventRouter:
    """Routes events by their class.

    Args:
        panes: Follows the agent's pane and shows its frames.
        approvals: Opens and closes approval modals.
        usage: Counts tokens and keeps the turn's state.
        todo: The main loop's todo list.
        attention: Times the main loop's turns and keeps its last answer (live events only).
        fleet: A fleet's host list and grid (frames of every host; the focused one's also go
            to the full-size mirror).
    """

    def __init__(
        self,
        panes: PaneControl,
        approvals: ApprovalFlow,
        usage: UsageMeter,
        todo: TodoList,
        attention: Attention,
        fleet: FleetPanel | None = None,
    ) -> None:
        self.panes = panes
        self.fleet = fleet
        self.approvals = approvals
        self.usage = usage
        self.todo = todo
        self.attention = attention
        self._replay = False
        self._snapshots: dict[tuple[str, str], PaneSnapshot] = {}
        self._handlers: dict[type[Event], Callable[[Any], None]] = {
            PaneSnapshot: self._pane_snapshot,
            FleetHostState: self._fleet_host,
            Usage: self.usage.add,
            ToolCallStarted: self._tool_started,
            ApprovalRequested: self._approval_requested,
            ApprovalResolved: self._approval_resolved,
            ApprovalsWaiting: self._approvals_waiting,
            ToolCallCompleted: self._tool_completed,
            TodoListUpdated: self._todo_list,
            TurnStarted: self._turn_started,
            UserMessage: self._user_message,
            AssistantMessage: self._assistant_message,
            TurnEnded: self._turn_ended,
        }

    def route(self, events: list[Event], *, replay: bool = False) -> None:
        """Act on one frame's events; ``replay`` (a saved session's story) asks nothing."""
        self._replay = replay
        self._snapshots = {}
        for event in events:
            handler = self._handlers.get(type(event))
            if handler is not None:
                handler(event)
        # Only the newest frame of each pane in a batch is worth drawing.
        for snapshot in self._snapshots.values():
            frame = PaneFrame.from_event(snapshot)
            if self.fleet is None or self.fleet.frame(frame):
                self.panes.show(frame)

    def _pane_snapshot(self, event: PaneSnapshot) -> None:
        # Keyed by where the pane lives too: two hosts of a fleet both have a %0.
        key = (event.actor.split("/tmux", 1)[0], event.pane_id)
        if event.gone is None:
            self._snapshots[key] = event
            return
        self._snapshots.pop(key, None)  # a frame taken before it went is no longer true
        if self.fleet is not None:
            self.fleet.pane_gone(event.actor, event.gone)
        if self.fleet is None or self.fleet.follows(event.actor):
            self.panes.gone(event.pane_id, event.gone)

    def _fleet_host(self, event: FleetHostState) -> None:
        if self.fleet is not None:
            self.fleet.host_state(event)

    def _tool_started(self, event: ToolCallStarted) -> None:
        if not self._replay and (self.fleet is None or self.fleet.follows(event.actor)):
            # a saved call's pane belonged to an earlier run's tmux server
            self.panes.agent_acted(event.actor)

    def _approval_requested(self, event: ApprovalRequested) -> None:
        if not self._replay:
            self.approvals.requested(event)

    def _approvals_waiting(self, event: ApprovalsWaiting) -> None:
        if not self._replay:
            self.approvals.behind(event.loop_id, event.count)

    def _approval_resolved(self, event: ApprovalResolved) -> None:
        self.approvals.close(request_id=event.request_id)

    def _tool_completed(self, event: ToolCallCompleted) -> None:
        self.approvals.close(tool_call_id=event.tool_call_id)

    def _todo_list(self, event: TodoListUpdated) -> None:
        if event.loop_id == "main":
            self.todo.show(event.items)

    def _turn_started(self, event: TurnStarted) -> None:
        if event.loop_id == "main":
            self.usage.turn_active = True
            if not self._replay:
                self.attention.turn_began()

    def _user_message(self, event: UserMessage) -> None:
        if event.loop_id == "main" and not event.steering:
            self.usage.turn_active = True
            if not self._replay:
                self.attention.turn_began()

    def _assistant_message(self, event: AssistantMessage) -> None:
        if event.loop_id == "main" and not self._replay:
            self.attention.answered(event.text)

    def _turn_ended(self, event: TurnEnded) -> None:
        if event.loop_id == "main":
            self.usage.turn_active = False
            if not self._replay:
                self.attention.turn_ended(event.final_text, event.reason)

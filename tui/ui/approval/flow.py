"""The approval flow: requests wait in a queue, one modal at a time, or pass in a window.

A request the session asks the person about is shown in an ``ApprovalScreen``; the answer
goes back through ``SessionAPI.answer_approval``. While ``/approve 10m`` runs, each request
is allowed at once and listed in the chat. A request answered or ended elsewhere (a timeout,
a cancel, its call completing) takes its modal and its place in the queue with it.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from tui.ui.autoapprove import AutoApprove, format_remaining

if TYPE_CHECKING:
    from tui.events import ApprovalRequested
    from tui.ui.approval.modal import ApprovalScreen
    from tui.ui.attention import Attention
    from tui.ui.host import AppHost


class ApprovalFlow:
    """Shows the session's approval requests to the person, in order.

    Args:
        host: The app (its chat, status bar, screens and workers).
        attention: Rings the bell / desktop notice when a request waits.
        monotonic: Monotonic seconds for the auto-approve window.
    """

    def __init__(self, host: AppHost, attention: Attention, monotonic: Callable[[], float]) -> None:
        self.host = host
        self.attention = attention
        self.auto_approve = AutoApprove(clock=monotonic)
        self.monotonic = monotonic
        self._behind: dict[str, int] = {}
        """Calls that will ask after the open question, by source (``ApprovalsWaiting``)."""
        self.open: tuple[ApprovalRequested, ApprovalScreen] | None = None
        """The request on screen and its modal."""
        self._waiting: collections.deque[ApprovalRequested] = collections.deque()
        self._was_auto = False

    def requested(self, request: ApprovalRequested) -> None:
        session = self.host.session
        if not session.answers_approvals:
            return  # another approver (a test's, say) answers this session
        if self.auto_approve.active and not request.outside:
            if session.approve_once(request.request_id):
                self.auto_approve.answered += 1
                left = format_remaining(self.auto_approve.remaining())
                what = request.command or request.tool_name
                self.host.chat.add_notice(
                    f"auto-approved {request.tool_name}: {what} ({left} left in the window)",
                    level="warning",
                )
            return
        self._waiting.append(request)
        self.attention.approval_waiting(request.tool_name)
        self._next()

    def _next(self) -> None:
        if self.open is None and self._waiting:
            request = self._waiting.popleft()
            self.host.run_worker(
                partial(self._ask, request),
                name="_ask_approval",
                group="approval",
                exit_on_error=False,
                description="ask the user to approve a call",
            )

    async def _ask(self, request: ApprovalRequested) -> None:
        from tui.ui.approval.modal import ApprovalScreen

        screen = ApprovalScreen(
            request,
            waiting=self.waiting_count(),
            last_typed=self.host.prompt.last_typed,
            monotonic=self.monotonic,
        )
        self.open = (request, screen)
        try:
            answer = await self.host.push_screen_wait(screen)
        finally:
            self.open = None
        if answer is not None:
            self.host.session.answer_approval(request.request_id, answer)
        self._next()

    def waiting_count(self) -> int:
        """Requests waiting behind the one on screen: queued here or held by the policy."""
        return len(self._waiting) + sum(self._behind.values())

    def behind(self, source: str, count: int) -> None:
        """``count`` calls of ``source`` (a loop, or the policy) will ask after this one."""
        self._behind[source] = count
        if self.open is not None and self.open[1].is_attached:
            self.open[1].show_waiting(self.waiting_count())

    def close(self, *, request_id: str | None = None, tool_call_id: str | None = None) -> None:
        """A request answered or ended elsewhere (timeout, cancel): its modal goes away."""
        self._waiting = collections.deque(
            r
            for r in self._waiting
            if r.request_id != request_id and r.tool_call_id != tool_call_id
        )
        if self.open is None:
            return
        request, screen = self.open
        matches = request.request_id == request_id or request.tool_call_id == tool_call_id
        if matches and screen.is_current:
            screen.dismiss(None)

    # -- the auto-approve window -----------------------------------------------------------

    def tick(self) -> None:
        """Once a second: the window's countdown, and a notice when it ends."""
        remaining = self.auto_approve.remaining()
        if self._was_auto and remaining <= 0:
            self.host.chat.add_notice("auto-approve ended: requests ask again", level="warning")
        self._was_auto = remaining > 0
        self.host.status.set(auto_approve=format_remaining(remaining) if remaining > 0 else "")

    def start_window(self, seconds: float) -> None:
        self.auto_approve.start(seconds)
        self._was_auto = True
        self.host.status.set(auto_approve=format_remaining(seconds))

    def stop_window(self) -> bool:
        """End the window now; False when it was not on."""
        was = self.auto_approve.active
        self.auto_approve.stop()
        self._was_auto = False
        self.host.status.set(auto_approve="")
        return was

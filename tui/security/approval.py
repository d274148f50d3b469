"""The approval protocol: a request goes out as an event, a typed answer comes back.

The policy awaits an ``Approver``. The UI and the headless prompt are approvers; with neither,
``NoApprover`` fails closed with a message that names the flag to use, never a silent denial.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Protocol

from tui.events import ApprovalAnswer, ApprovalRequested


class ApprovalUnavailable(Exception):
    """No one can answer: the policy turns this into a fail-closed refusal that says why."""


class Approver(Protocol):
    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer: ...


class NoApprover:
    """For runs with no UI and no TTY: every request is refused with the reason and remedy."""

    def __init__(self, reason: str = "no UI and no TTY to ask") -> None:
        self.reason = reason

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        raise ApprovalUnavailable(
            f"{request.tool_name} needs approval but there is {self.reason}. Rerun with "
            "--approval-mode full-auto (or auto-edit for file edits), or add an allow rule "
            f"such as {request.suggested_pattern or request.tool_name!r} to [security].allow"
        )


class CallbackApprover:
    """Wraps a plain async function (tests, scripted answers)."""

    def __init__(self, callback: Callable[[ApprovalRequested], Awaitable[ApprovalAnswer]]):
        self.callback = callback

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        return await self.callback(request)


PublishFn = Callable[[ApprovalRequested], None]


class ApprovalBroker:
    """Publishes each request on the bus and waits for whoever answers it by id.

    The UI (or headless stdin reader) calls ``resolve``; a timeout resolves to deny, so a
    forgotten prompt never leaves a call hanging for ever.
    """

    _ids = itertools.count(1)

    def __init__(self, publish: PublishFn, *, timeout: float | None = None) -> None:
        self.publish = publish
        self.timeout = timeout
        self.pending: dict[str, asyncio.Future[ApprovalAnswer]] = {}

    @classmethod
    def next_id(cls) -> str:
        return f"approval-{next(cls._ids)}"

    async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
        future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        self.pending[request.request_id] = future
        try:
            self.publish(request)
            if self.timeout is None:
                return await future
            try:
                return await asyncio.wait_for(asyncio.shield(future), self.timeout)
            except TimeoutError:
                return ApprovalAnswer.deny(
                    f"no answer within {self.timeout:g} s; the approval timed out"
                )
        finally:
            self.pending.pop(request.request_id, None)

    def resolve(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a pending request; False when it is no longer waiting."""
        future = self.pending.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    def cancel_all(self, message: str = "cancelled") -> None:
        for future in self.pending.values():
            if not future.done():
                future.set_result(ApprovalAnswer.deny(message))

"""One tool call from the loop's side: before-hooks, the call's context, the run, after-hooks.

What the call streams (output, progress, notices) goes through the update hooks on its way to
the bus; its start and end go out untouched. A call a before-hook skips never starts, so it
never ends either: the one event it gets is ``ToolCallSkipped``, carrying its result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from tui.agent.hooks import LIFECYCLE_EVENTS, Hooks, PreToolDecision, ToolCallInfo
from tui.agent.progress import ProgressCoalescer
from tui.agent.providers.base import ToolCall
from tui.events import Event, Notice, ToolCallCompleted, ToolCallSkipped
from tui.exec.backend import ExecutionBackend
from tui.safe_text import excerpt
from tui.security.policy import SecurityPolicy
from tui.tools.context import ToolContext
from tui.tools.registry import MAX_MESSAGE_CHARS, ToolRegistry
from tui.tools.result import ToolResult


@dataclass
class CallRunner:
    """Runs the calls of one response for an ``AgentLoop`` (see ``ToolExecutor.run_call``)."""

    registry: ToolRegistry
    backend: ExecutionBackend
    policy: SecurityPolicy
    hooks: Hooks
    emit: Callable[[Event], None]
    cancel: asyncio.Event
    loop_id: str = "main"
    record: Callable[[ToolCall, ToolResult], None] | None = None
    """Saves a finished call's result at once, before its end is announced: a crash after a
    call ends must never leave it looking unfinished on resume (parallel calls end apart)."""

    async def run(self, call: ToolCall) -> ToolResult:
        info = ToolCallInfo(call.id, call.name, call.arguments)
        decision = await self.hooks.run_before_tool(info)
        if decision.deny_reason:
            result = ToolResult.error(
                "PermissionDenied", f"blocked by a hook: {decision.deny_reason}"
            )
            if self.record is not None:
                self.record(call, result)
            self.emit(
                ToolCallSkipped(
                    tool_call_id=call.id,
                    tool_name=excerpt(call.name, 200),
                    result=excerpt(result.text, MAX_MESSAGE_CHARS),
                )
            )
            return result
        arguments = decision.arguments if decision.arguments is not None else call.arguments
        if decision.arguments is not None:
            self.emit(Notice(message=f"a hook rewrote the arguments of {call.name}", level="info"))
            info = ToolCallInfo(call.id, call.name, arguments)
        held: list[ToolCallCompleted] = []
        ctx, progress = self._context(info, decision, held)
        try:
            result = await self.registry.execute(call.name, arguments, ctx)
        finally:
            progress.close()  # also when the task is cancelled: no timer outlives the call
        result = await self.hooks.run_after_tool(info, result)
        # Recorded first, then announced: whoever saw the end can find the result on disk.
        if self.record is not None:
            self.record(call, result)
        for event in held:
            self.emit(event)
        return result

    def _context(
        self, info: ToolCallInfo, decision: PreToolDecision, held: list[ToolCallCompleted]
    ) -> tuple[ToolContext, ProgressCoalescer]:
        progress = ProgressCoalescer(
            lambda event: update(event),
            tool_call_id=info.tool_call_id,
            tool_name=info.tool_name,
            loop_id=self.loop_id,
        )

        def update(event: Event) -> None:
            if isinstance(event, ToolCallCompleted):
                progress.close()  # the last progress word comes before the end
                if self.record is not None and event.tool_call_id == info.tool_call_id:
                    held.append(event)  # announced once the result is recorded
                    return
            if isinstance(event, LIFECYCLE_EVENTS) or not self.hooks.watches_updates:
                self.emit(event)
                return
            changed = self.hooks.filter_update(info, event)
            if changed is None:
                return
            self.emit(changed)
            self.hooks.observe_update(info, changed)

        ctx = ToolContext(
            tool_call_id=info.tool_call_id,
            tool_name=info.tool_name,
            backend=self.backend,
            policy=self.policy,
            cancel=self.cancel,
            on_update=update,
            on_progress=progress.report,
            loop_id=self.loop_id,
            hook_permission=decision.permission,
            hook_permission_reason=decision.permission_reason,
        )
        return ctx, progress

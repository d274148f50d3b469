"""Running one response's tool calls: sequential, parallel or batched, with steering.

Whatever happens, every call gets exactly one result (the wire protocols require it), in the
order the model made them. Steering never throws work away: calls already started finish; only
calls not yet started are skipped, with a result that says plainly they were *not* run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from tui.agent.providers.base import ToolCall
from tui.tools.result import ToolResult

Strategy = Literal["sequential", "parallel", "batched"]
RunCall = Callable[[ToolCall], Awaitable[ToolResult]]


STEERED = "Skipped due to queued user message."
"""phi-core's words for a call steering skipped, so a model or prompt written for phi-core
recognises them; ours follow, saying plainly that nothing happened."""


def skipped_result(call: ToolCall, why: str, lead: str = "") -> ToolResult:
    return ToolResult.error(
        "Skipped",
        f"{lead + ' ' if lead else ''}{call.name} was NOT run: {why}. Nothing it would have "
        "done has happened; call it again if it is still needed.",
        skipped=True,
    )


@dataclass
class ToolPlan:
    """How to run a response's calls."""

    strategy: Strategy = "parallel"
    batch_size: int = 4


class ToolExecutor:
    """Runs calls per the plan; ``steered()`` says a user message is waiting."""

    def __init__(
        self,
        plan: ToolPlan,
        run_call: RunCall,
        *,
        needs_approval: Callable[[ToolCall], bool],
        exclusive: Callable[[ToolCall], bool],
        steered: Callable[[], bool],
        cancelled: Callable[[], bool],
        on_waiting: Callable[[int], None] | None = None,
    ) -> None:
        self.plan = plan
        self.on_waiting = on_waiting
        """Told, as each group starts, how many calls of later groups will ask a person (0
        at the end): the approval modal says "N more waiting"."""
        self.run_call = run_call
        self.needs_approval = needs_approval
        self.exclusive = exclusive
        self.steered = steered
        self.cancelled = cancelled

    async def run(
        self, calls: list[ToolCall], results: dict[int, ToolResult] | None = None
    ) -> list[ToolResult]:
        """One result per call, in call order.

        ``results`` (by call index) is filled as each call finishes, so a caller whose task is
        cancelled mid-way still knows which calls have a result and which never finished.
        """
        results = {} if results is None else results
        alone = [self.needs_approval(call) for call in calls]
        groups = self._groups(calls, alone)
        asking = [int(len(group) == 1 and alone[group[0]]) for group in groups]
        try:
            for number, group in enumerate(groups):
                if self.on_waiting is not None and any(asking):
                    self.on_waiting(sum(asking[number + 1 :]))
                if self.cancelled():
                    for index in group:
                        results[index] = skipped_result(calls[index], "the turn was cancelled")
                    continue
                if self.steered() and self.plan.strategy != "parallel":
                    for index in group:
                        results[index] = skipped_result(
                            calls[index], "the user sent a new message before it started", STEERED
                        )
                    continue
                await self._run_group(calls, group, results)
        finally:
            if self.on_waiting is not None and any(asking):
                self.on_waiting(0)
        return [results[index] for index in range(len(calls))]

    def _groups(self, calls: list[ToolCall], asks: list[bool]) -> list[list[int]]:
        """Index groups run one after another; the calls inside a group run together.

        Calls that need approval (``asks``) and exclusive calls always form groups of one, so
        a person answers one prompt at a time and a tool-set change never races other calls.
        """
        alone = [asks[index] or self.exclusive(call) for index, call in enumerate(calls)]
        if self.plan.strategy == "sequential":
            return [[index] for index in range(len(calls))]
        size = len(calls) if self.plan.strategy == "parallel" else max(1, self.plan.batch_size)
        groups: list[list[int]] = []
        current: list[int] = []
        for index in range(len(calls)):
            if alone[index]:
                if current:
                    groups.append(current)
                    current = []
                groups.append([index])
                continue
            current.append(index)
            if len(current) >= size:
                groups.append(current)
                current = []
        if current:
            groups.append(current)
        return groups

    async def _run_group(
        self, calls: list[ToolCall], group: list[int], results: dict[int, ToolResult]
    ) -> None:
        async def one(index: int) -> None:
            results[index] = await self.run_call(calls[index])

        if len(group) == 1:
            await one(group[0])
            return
        await asyncio.gather(*(one(index) for index in group))

"""``agent``: hand a self-contained task to a child loop with its own context and turn limit.

The child shares the provider, backend and policy (so approvals still apply) but not the
conversation; it never gets the ``agent`` tool itself, so sub-agents cannot nest without end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext
from tui.tools.errors import Cancelled, ExecutionFailed, InvalidArguments
from tui.tools.result import ToolResult

if TYPE_CHECKING:
    from tui.agent.loop import AgentLoop


class AgentParams(ToolParams):
    prompt: str = Field(description="The whole task for the sub-agent, self-contained.")
    description: str | None = Field(
        default=None, description="Three to five words naming the task, for the UI."
    )
    tools: list[str] | None = Field(
        default=None, description="Tool names the sub-agent may use (default: all but agent)."
    )
    max_turns: int | None = Field(
        default=None, ge=1, le=200, description="Model requests the sub-agent may make."
    )


class SubAgentTool(Tool[AgentParams]):
    name = "agent"
    label = "Sub-agent"
    Params = AgentParams
    description = """Run a sub-agent on a self-contained task and return its final answer.

When to use: a side task that needs many tool calls whose details would clutter this
conversation (survey a codebase, try a fix in isolation, collect facts from many files).
When NOT to use: a single tool call you could make yourself; tasks that need this
conversation's context (the sub-agent sees only its prompt).
Disambiguation: the sub-agent uses the same tools, target and approvals as you, but starts
with an empty conversation; it cannot start sub-agents of its own.
Examples: {"prompt": "List every HTTP route defined under src/api with its handler",
"description": "map API routes", "tools": ["grep_search", "read_file"]}"""

    def __init__(self, parent: AgentLoop) -> None:
        self.parent = parent

    async def execute(self, params: AgentParams, ctx: ToolContext) -> ToolResult:
        if params.tools is not None:
            unknown = [name for name in params.tools if name not in self.parent.registry]
            if unknown:
                raise InvalidArguments(
                    f"unknown tools {unknown}; available: {self.parent.registry.names()}"
                )
        outcome, child_id = await self.parent.run_child(
            params.prompt, tools=params.tools, max_turns=params.max_turns, cancel=ctx.cancel
        )
        if outcome.reason == "cancelled":
            raise Cancelled(f"the sub-agent {child_id} was cancelled")
        if outcome.reason == "error":
            raise ExecutionFailed(f"the sub-agent {child_id} failed: {outcome.error}")
        text = outcome.final_text or "(the sub-agent gave no final text)"
        if outcome.reason == "max_turns":
            text += f"\n[the sub-agent stopped at its turn limit of {outcome.turns}]"
        return ToolResult(
            text, {"turns": outcome.turns, "reason": outcome.reason}, child_loop_id=child_id
        )

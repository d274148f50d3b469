"""Sub-agents: hand a self-contained task to a child loop with its own context and turn limit.

Two kinds of tool start one: the generic ``agent`` (the model picks the task, the tools and the
turn limit) and the named sub-agents of ``[subagents.NAME]`` (the config picks the
instructions, tools, model and limits; the model only gives the task). Either way the child
shares the backend and policy (so approvals still apply) but not the conversation; it never
gets a tool that starts another loop, so sub-agents cannot nest without end; and the parent's
cancel reaches it, down to the commands it runs.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from tui.errors import Cancelled, ExecutionFailed, InvalidArguments
from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult

if TYPE_CHECKING:
    from tui.agent.loop import AgentLoop, TurnOutcome
    from tui.agent.providers.base import Provider

_child_ids = itertools.count(1)


@dataclass(frozen=True)
class ChildSpec:
    """What a child loop differs in from its parent."""

    label: str = "child"
    """Names the child in its loop id (``main.reviewer-3``) and so in the UI."""
    tools: list[str] | None = None
    """Its tools, a subset of the parent's; None: all of them (but no loop-starting ones)."""
    max_turns: int | None = None
    """None: the parent's ``subagent_max_turns``."""
    system_prompt: str | None = None
    """None: the parent's."""
    provider: Provider | None = None
    """None: the parent's (same model, same connection)."""


def nesting_tools(registry: ToolRegistry) -> set[str]:
    """The tools a child never gets: every one that would start a loop of its own."""
    return {"agent"} | {
        name
        for name in registry.names()
        if getattr(registry.get(name), "starts_loop", False) is True
    }


async def run_child(
    parent: AgentLoop, prompt: str, spec: ChildSpec, *, cancel: asyncio.Event
) -> tuple[TurnOutcome, str]:
    """Run a sub-agent to its end; its events reach the bus tagged with its own loop id.

    The tool set is taken from the parent's registry at call time (MCP tools that arrived
    later included), so a child never has a tool its parent does not.
    """
    from tui.agent.loop import AgentLoop, LoopSettings

    child_id = f"{parent.loop_id}.{spec.label}-{next(_child_ids)}"
    settings = parent.settings
    child = AgentLoop(
        provider=spec.provider or parent.provider,
        registry=parent.registry.subset(spec.tools, exclude=nesting_tools(parent.registry)),
        backend=parent.backend,
        policy=parent.policy,
        system_prompt=parent.system_prompt if spec.system_prompt is None else spec.system_prompt,
        emit=parent.emit_event,
        settings=LoopSettings(
            max_turns=spec.max_turns or settings.subagent_max_turns,
            plan=settings.plan,
            max_tokens=settings.max_tokens,
            context_window=settings.context_window,
        ),
        hooks=parent.hooks,
        loop_id=child_id,
    )
    watcher = asyncio.ensure_future(_propagate_cancel(cancel, child))
    try:
        outcome = await child.submit(prompt)
    finally:
        watcher.cancel()
    return outcome, child_id


async def _propagate_cancel(cancel: asyncio.Event, child: AgentLoop) -> None:
    """The parent's cancel event is this call's: setting it stops the child's stream and its
    running tools at once (their processes are killed by the child's own cancel)."""
    await cancel.wait()
    child.cancel()


def _result(outcome: TurnOutcome, child_id: str, who: str) -> ToolResult:
    if outcome.reason == "cancelled":
        raise Cancelled(f"{who} {child_id} was cancelled")
    if outcome.reason == "error":
        raise ExecutionFailed(f"{who} {child_id} failed: {outcome.error}")
    text = outcome.final_text or f"({who} gave no final text)"
    if outcome.reason == "max_turns":
        text += f"\n[{who} stopped at its turn limit of {outcome.turns}]"
    return ToolResult(
        text, {"turns": outcome.turns, "reason": outcome.reason}, child_loop_id=child_id
    )


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
    starts_loop: ClassVar[bool] = True
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
        spec = ChildSpec(tools=params.tools, max_turns=params.max_turns)
        outcome, child_id = await run_child(self.parent, params.prompt, spec, cancel=ctx.cancel)
        return _result(outcome, child_id, "the sub-agent")


class NamedAgentParams(ToolParams):
    prompt: str = Field(description="The whole task, self-contained: it sees nothing else.")
    description: str | None = Field(
        default=None, description="Three to five words naming the task, for the UI."
    )


class NamedSubAgentTool(Tool[NamedAgentParams]):
    """A ``[subagents.NAME]`` sub-agent offered as a tool of its own: the config fixed its
    instructions, tools, model and turn limit; the model only hands it a task."""

    Params = NamedAgentParams
    starts_loop: ClassVar[bool] = True

    def __init__(self, parent: AgentLoop, *, name: str, description: str, spec: ChildSpec) -> None:
        self.parent = parent
        self.spec = spec
        summary = description.strip() or f"The sub-agent {name}."
        # Tool declares these as class attributes; a named sub-agent learns them from config.
        self.__dict__.update(
            name=name,
            label=f"Sub-agent {name}",
            description=f"{summary}\n\n(A sub-agent: it starts with an empty conversation, "
            "works on the task you give it with its own tools and returns its final answer.)",
        )

    async def execute(self, params: NamedAgentParams, ctx: ToolContext) -> ToolResult:
        outcome, child_id = await run_child(
            self.parent, params.prompt, self.spec, cancel=ctx.cancel
        )
        return _result(outcome, child_id, f"the sub-agent {self.name}")

"""``[agent]``: how the agent loop runs, and the defaults the loop's guards start from.

The loop detector (``tui.tools.loops``) and the output spill (``tui.tools.spill``) read their
defaults from here, so that the settings, which sit below the tools, never import them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tui.config.sections import SECTION
from tui.spill import DEFAULT_DISK_CAP

DEFAULT_PING_PONG_CYCLES = 4
"""A B pairs with unchanged results before the model is told (ZeroClaw warns at 4)."""


DEFAULT_NO_PROGRESS_REPEATS = 3
"""Identical successful outputs of one call before the model is told (ZeroClaw: 3)."""


class AgentSettings(BaseModel):
    """How the agent loop runs."""

    model_config = SECTION

    max_turns: int | None = Field(default=None, ge=1)
    """Model requests allowed for one user message before the loop stops and says so; unset
    (the default) sets no cap: the context is compacted as it fills instead."""
    strategy: Literal["sequential", "parallel", "batched"] = "parallel"
    """How the tool calls of one answer run: one by one, all at once, or ``batch_size`` at
    a time."""
    batch_size: int = Field(default=4, ge=1)
    """Calls run together under the ``batched`` strategy."""
    system_prompt: str | None = None
    """Extra instructions appended to the built-in system prompt."""
    subagent_max_turns: int = Field(default=20, ge=1)
    """The ``max_turns`` of a sub-agent's own loop."""
    json_schema: str | None = None
    """A JSON Schema file the final answer must match (``--json-schema``): the model then
    answers through the ``structured_output`` tool, which validates it."""
    defer_tools_above: int = Field(default=40, ge=0)
    """When MCP and OpenAPI add more tools than this in all, theirs are not sent to the model
    up front: ``tool_search`` finds and activates them between turns. 0 never defers."""
    loop_ping_pong_cycles: int = Field(default=DEFAULT_PING_PONG_CYCLES, ge=0)
    """The same two calls alternating with unchanged results this many times (A B A B … :
    cycles of A B) get a note telling the model to change course, and the next call that
    would go on alternating is not run. 0 turns the detector off."""
    loop_no_progress_repeats: int = Field(default=DEFAULT_NO_PROGRESS_REPEATS, ge=0)
    """The same call returning the same successful output this many times gets the same
    note, and repeating it straight away again is not run. 0 turns the detector off."""
    tool_timeout: float | None = Field(default=None, ge=0)
    """Seconds any one tool call may run (after its approval) before it is cancelled and the
    model reads a Timeout error, as phi-core's ``tool_timeout``; unset or 0: no limit."""
    tool_timeouts: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)
    """Per tool name, overriding ``tool_timeout`` (``{ fetch_url = 30, run_shell = 0 }``;
    0: no limit for that tool)."""
    send_ahead: bool = True
    """A ``-p`` command run before sends its remembered first request while agent-tui is
    still starting, and uses the answer only if the real first request is the same bytes
    (``tui.agent.providers.ahead``). False: nothing is remembered, nothing sent ahead (set
    in the person's own config or as ``AGENT_TUI_AGENT__SEND_AHEAD=false``)."""
    warm_start: bool = True
    """A ``-p`` run of the same kind as one in the last ten minutes (same folder, environment
    and install, no terminal) starts a warm process, which takes the next such run already
    imported (``tui.warm``). False: none is started, running ones end (set in the person's own
    config or as ``AGENT_TUI_AGENT__WARM_START=false``)."""
    output_disk_cap: int = Field(default=DEFAULT_DISK_CAP, ge=0)
    """Bytes of one command's output saved to disk (the full-output file the model may page
    through, and each tool block's stream for the pager). Past it nothing more is saved, and
    the file ends with a line saying how much was not; the result and the block say so too."""

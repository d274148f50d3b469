"""``[hooks]``: shell commands run before and after tool calls.

The command's shape is a setting (``tui.agent.hooks`` runs it), so it is defined here, below
the agent, and the agent imports it.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator

from tui.config.sections import SECTION


class HookCommand(BaseModel):
    """A shell command run around tool calls whose tool name matches (one
    ``[[hooks.pre_tool_use]]``, ``[[hooks.post_tool_use]]`` or
    ``[[hooks.post_tool_use_failure]]`` entry)."""

    model_config = SECTION

    matcher: str = "*"
    """``*`` (or empty) for every tool, else a tool name or a regular expression matched in
    full, against our name (``edit_file``) and Claude Code's (``Edit``, ``Edit|Write``)."""
    command: str
    """The shell command; it receives the call as JSON on stdin."""
    timeout: float = Field(default=30, gt=0)
    """Seconds before the hook is killed."""

    @field_validator("matcher")
    @classmethod
    def _matcher_compiles(cls, value: str) -> str:
        """Catch a bad regex at start-up rather than on the first tool call."""
        if value not in ("*", ""):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    def matches(self, tool_name: str) -> bool:
        if self.matcher in ("*", ""):
            return True
        return re.fullmatch(self.matcher, tool_name) is not None


class HooksSettings(BaseModel):
    """Commands run before and after tool calls (checks, formatters, notifications)."""

    model_config = SECTION

    pre_tool_use: list[HookCommand] = Field(default_factory=list)
    """Run before a matching call; a non-zero exit blocks the call."""
    post_tool_use: list[HookCommand] = Field(default_factory=list)
    """Run after a matching call has finished without error."""
    post_tool_use_failure: list[HookCommand] = Field(default_factory=list)
    """Run instead of ``post_tool_use`` after a matching call ended in error."""

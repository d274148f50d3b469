"""``[subagents.NAME]``: sub-agents declared in config, each offered to the model as a tool.

A table per sub-agent (rather than ``[[agent.subagents]]``) so that a workspace file's
sub-agents are reviewed key by key: their prompts, tools and limits are harmless, but a
``provider`` or ``base_url`` sends the conversation elsewhere and waits for trust
(``tui.security.trust``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tui.choices import ProviderName
from tui.config.sections import SECTION, HttpUrl

ThinkingLevel = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class SubAgentSettings(BaseModel):
    """One named sub-agent: a child loop with its own instructions, tools and model."""

    model_config = SECTION

    description: str = ""
    """What the model reads to decide when to call it (the tool's description)."""
    system_prompt: str = ""
    """Its own instructions, appended to the built-in system prompt in place of
    ``[agent] system_prompt``."""
    tools: list[str] | None = None
    """The tools it may use, a subset of the session's; unset: all of them. Never ``agent``
    nor another sub-agent: sub-agents do not nest."""
    model: str | None = None
    """A model of its own; unset: the session's model (or the provider's default model when
    ``provider`` differs)."""
    provider: ProviderName | None = None
    """Another provider; its key comes from the environment (ANTHROPIC_API_KEY, ...)."""
    base_url: HttpUrl | None = None
    """Another endpoint for its requests (from a workspace file, this waits for trust)."""
    max_turns: int | None = Field(default=None, ge=1, le=200)
    """Model requests it may make per call; unset: ``[agent] subagent_max_turns``."""
    thinking: ThinkingLevel | None = None
    """How hard it thinks: the OpenAI reasoning effort, or an Anthropic thinking budget."""
    enabled: bool = True

    @property
    def overrides_provider(self) -> bool:
        """Whether it needs a provider of its own rather than the session's."""
        return any(
            value is not None for value in (self.model, self.provider, self.base_url, self.thinking)
        )

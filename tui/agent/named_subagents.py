"""Turn ``[subagents.NAME]`` tables into tools of the session, each with its child's settings.

Kept apart from ``session.py`` (the composition root) because each sub-agent needs a few
decisions of its own: the tool name it is offered under, the provider it talks to (the
session's, or one made for its model/provider/thinking overrides), and its system prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tui.agent.loop import AgentLoop
from tui.agent.prompt import build_system_prompt
from tui.agent.providers.base import Provider, ProviderError
from tui.agent.providers.factory import make_provider
from tui.agent.subagent import ChildSpec, NamedSubAgentTool
from tui.config import ProviderSettings, default_model
from tui.config.sections.subagents import SubAgentSettings

THINKING_BUDGETS: dict[str, int | None] = {
    "none": None,
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}
"""Anthropic has a token budget where the OpenAI APIs have an effort level: one level maps to
both, so a sub-agent's ``thinking`` means the same whichever provider it talks to."""

MAX_TOOL_NAME = 64
"""Both wire formats accept tool names of ``[A-Za-z0-9_-]`` up to 64 characters."""


@dataclass
class NamedSubAgents:
    """What a session gains from its ``[subagents]`` tables."""

    tools: list[NamedSubAgentTool] = field(default_factory=list)
    providers: list[Provider] = field(default_factory=list)
    """Providers made for overrides: the session closes them with its own."""
    warnings: list[str] = field(default_factory=list)


def child_provider(parent: ProviderSettings, sub: SubAgentSettings) -> Provider | None:
    """The provider a sub-agent talks to; None when it shares the session's.

    Whatever the sub-agent does not override follows the session: with the same provider it
    keeps the session's endpoint, key and API flavour; with another provider those come from
    that provider's environment variables, as for ``--provider``.

    Raises:
        ProviderError: no key for the provider it names.
    """
    if not sub.overrides_provider:
        return None
    name = sub.provider or parent.name
    same = name == parent.name
    anthropic = name == "anthropic"
    thinking = sub.thinking
    key = parent.api_key.get_secret_value() if same and parent.api_key else None
    inherited_model = parent.model if same else None
    return make_provider(
        name,
        sub.model or inherited_model or default_model(name),
        api_key=key,
        base_url=sub.base_url or (parent.base_url if same else None),
        stream=parent.stream,
        api=parent.api if same else None,
        idle_timeout=parent.idle_timeout,
        deadline=parent.request_timeout,
        thinking_budget=(
            THINKING_BUDGETS[thinking]
            if thinking is not None and anthropic
            else (parent.thinking_budget if same and thinking is None else None)
        ),
        reasoning_effort=(
            thinking
            if thinking is not None and not anthropic
            else (parent.reasoning_effort if same and thinking is None else None)
        ),
    )


def build_named_subagents(
    declared: Mapping[str, SubAgentSettings],
    provider_settings: ProviderSettings,
    parent: AgentLoop,
    *,
    workspace: Path,
    actor: str,
    taken: Iterable[str],
) -> NamedSubAgents:
    """One tool per enabled sub-agent. A name that is empty once cleaned, or that a tool
    already has, is skipped with a warning: a sub-agent never shadows a tool."""
    built = NamedSubAgents()
    used = set(taken) | {"agent"}
    for name, sub in declared.items():
        if not sub.enabled:
            continue
        tool_name = subagent_tool_name(name, frozenset(used))
        if tool_name is None:
            built.warnings.append(
                f"sub-agent {name!r} is not offered: its name is empty or already a tool's"
            )
            continue
        try:
            provider = child_provider(provider_settings, sub)
        except ProviderError as error:
            built.warnings.append(f"sub-agent {name!r} is not offered: {error.msg}")
            continue
        if provider is not None:
            built.providers.append(provider)
        spec = ChildSpec(
            label=tool_name,
            tools=list(sub.tools) if sub.tools is not None else None,
            max_turns=sub.max_turns,
            system_prompt=build_system_prompt(
                workspace, actor=actor, extra=sub.system_prompt or None
            ),
            provider=provider,
        )
        used.add(tool_name)
        built.tools.append(
            NamedSubAgentTool(parent, name=tool_name, description=sub.description, spec=spec)
        )
    return built


def subagent_tool_name(name: str, taken: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The tool name a sub-agent is offered under: its name in the characters models accept,
    at most 64 long; None when empty after that or already taken (it never shadows a tool)."""
    cleaned = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]+", "_", name)).strip("_")
    cleaned = cleaned[:MAX_TOOL_NAME]
    if not cleaned or cleaned in taken:
        return None
    return cleaned

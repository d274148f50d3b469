"""Choosing a provider from a name, explicit settings and the environment.

The environment variables are the ones the official SDKs read, so a user's existing setup
works unchanged; explicit arguments (from flags or config) win over them. A missing key is
reported here, before any request, unless a custom base URL points at a server that may not
need one (Ollama, vLLM, llama.cpp).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from tui.agent.providers.base import Provider, ProviderError
from tui.choices import ProviderName
from tui.security.own_environ import process_environ

__all__ = ["ENV_VARS", "ProviderName", "make_provider"]

ENV_VARS: dict[str, tuple[str, str]] = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "openai-responses": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}
"""Provider name to (key variable, base URL variable)."""


def _setting(explicit: str | None, variable: str, environ: Mapping[str, str]) -> str | None:
    if explicit:
        return explicit
    value = environ.get(variable, "").strip()
    return value or None


def make_provider(
    name: ProviderName,
    model: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    stream: bool = True,
    environ: Mapping[str, str] | None = None,
    api: Literal["chat", "responses"] | None = None,
    thinking_budget: int | None = None,
    reasoning_effort: str | None = None,
    idle_timeout: float | None = None,
    deadline: float | None = None,
) -> Provider:
    """A ready provider; ``environ`` defaults to the user's environment with the keys
    agent-tui took out of its own (tests pass their own). ``api="responses"`` turns
    ``openai`` into ``openai-responses``; ``thinking_budget`` is for Anthropic,
    ``reasoning_effort`` for the OpenAI APIs; ``idle_timeout`` and ``deadline`` (seconds,
    None: the defaults) bound waits and retries.

    Raises:
        ProviderError: unknown provider name, or no key for the official endpoint.
    """
    env = process_environ() if environ is None else environ
    if name == "openai" and api == "responses":
        name = "openai-responses"
    if name not in ENV_VARS:
        known = ", ".join(sorted(ENV_VARS))
        raise ProviderError(f"unknown provider {name!r}; choose one of: {known}")
    key_var, url_var = ENV_VARS[name]
    key = _setting(api_key, key_var, env)
    url = _setting(base_url, url_var, env)
    if key is None and url is None:
        raise ProviderError(
            f"{key_var} is not set. Export it, or set {url_var} to a server that needs no key."
        )
    # Imported here so that naming a provider (or --version) does not load httpx.
    from tui.agent.providers.retry import DEFAULT_DEADLINE, DEFAULT_IDLE_TIMEOUT

    idle = DEFAULT_IDLE_TIMEOUT if idle_timeout is None else idle_timeout
    until = DEFAULT_DEADLINE if deadline is None else deadline
    if name == "openai":
        from tui.agent.providers.openai import DEFAULT_BASE_URL, OpenAIProvider

        return OpenAIProvider(
            model,
            api_key=key,
            base_url=url or DEFAULT_BASE_URL,
            stream=stream,
            reasoning_effort=reasoning_effort,
            idle_timeout=idle,
            deadline=until,
        )
    if name == "openai-responses":
        from tui.agent.providers.responses import DEFAULT_BASE_URL as RESPONSES_URL
        from tui.agent.providers.responses import ResponsesProvider

        return ResponsesProvider(
            model,
            api_key=key,
            base_url=url or RESPONSES_URL,
            stream=stream,
            reasoning_effort=reasoning_effort,
            idle_timeout=idle,
            deadline=until,
        )
    from tui.agent.providers.anthropic import DEFAULT_BASE_URL as ANTHROPIC_URL
    from tui.agent.providers.anthropic import AnthropicProvider

    return AnthropicProvider(
        model,
        api_key=key,
        base_url=url or ANTHROPIC_URL,
        stream=stream,
        thinking_budget=thinking_budget,
        idle_timeout=idle,
        deadline=until,
    )

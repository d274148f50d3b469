"""Which model API to use when no setting names one: the one whose key is set.

A person coming from Claude Code has ``ANTHROPIC_API_KEY`` and nothing else; one coming from
Codex has ``OPENAI_API_KEY``. When neither a config file, an ``AGENT_TUI_*`` variable nor a flag
names the provider (or a base URL or a key of its own), the key that is set picks it, and
``agent-tui config`` says so. With both keys, or neither, OpenAI stays the default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from tui.config.load import LoadedSettings
from tui.config.sections.provider import default_model

DEFAULT = "built-in default"


def set_by(loaded: LoadedSettings, dotted: str) -> str:
    """The layer that set exactly this key (``provider.model``), or ``built-in default``.

    ``LoadedSettings.origin`` answers for a key's nearest recorded table too, which names a
    file that set another key of the same section; here only the key itself counts.
    """
    return loaded.origins.get(tuple(dotted.split(".")), DEFAULT)


def choose_provider(loaded: LoadedSettings, environ: Mapping[str, str]) -> LoadedSettings:
    """``loaded``, with the provider switched to Anthropic when only its key is set."""
    provider = loaded.settings.provider
    named = any(
        set_by(loaded, key) != DEFAULT
        for key in ("provider.name", "provider.api", "provider.base_url", "provider.api_key")
    )
    if named:
        return loaded

    def has(variable: str) -> bool:
        return bool(environ.get(variable, "").strip())

    if has("OPENAI_API_KEY") or has("OPENAI_BASE_URL") or not has("ANTHROPIC_API_KEY"):
        return loaded
    model = provider.model if set_by(loaded, "provider.model") != DEFAULT else None
    chosen = provider.model_copy(
        update={"name": "anthropic", "model": model or default_model("anthropic")}
    )
    settings = loaded.settings.model_copy(update={"provider": chosen})
    reason = "ANTHROPIC_API_KEY is set and OPENAI_API_KEY is not"
    origins = dict(loaded.origins)
    origins[("provider", "name")] = reason
    if model is None:
        origins[("provider", "model")] = f"the everyday model of anthropic ({reason})"
    return dataclasses.replace(loaded, settings=settings, origins=origins)

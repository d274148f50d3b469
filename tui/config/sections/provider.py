"""``[provider]``: which model API to talk to, and the everyday model of each one."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr, model_validator

from tui.choices import ProviderName
from tui.config.sections import SECTION, HttpUrl

DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4.1",
    "openai-responses": "gpt-5",
    "anthropic": "claude-sonnet-4-5",
}


def default_model(name: str) -> str:
    """The model used when none is configured: each provider has a sensible everyday one."""
    return DEFAULT_MODELS[name]


class ProviderSettings(BaseModel):
    """Which model API to talk to and how."""

    model_config = SECTION

    name: ProviderName = "openai"
    """The API flavour: ``openai`` (Chat Completions), ``openai-responses`` (the Responses
    API) or ``anthropic`` (Messages)."""
    api: Literal["chat", "responses"] | None = None
    """For ``openai``: ``responses`` talks to the Responses API (as ``openai-responses``)."""
    model: str | None = None
    """The model id; left unset it follows ``name`` (gpt-4.1 / claude-sonnet-4-5)."""
    base_url: HttpUrl | None = None
    """An OpenAI- or Anthropic-compatible endpoint (a proxy, a local server)."""
    api_key: SecretStr | None = None
    """Discouraged: prefer OPENAI_API_KEY / ANTHROPIC_API_KEY in the environment, which never
    lands in a file someone might commit or share."""
    stream: bool = True
    """Stream tokens as they arrive (off only for endpoints that cannot stream)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Cap on the tokens of one answer; unset uses the provider's own default."""
    request_timeout: float = Field(default=600, gt=0, allow_inf_nan=False)
    """The deadline of one model request, in seconds: past it no retry starts and no pause
    is waited (an answer still streaming is never cut by it)."""
    idle_timeout: float = Field(default=120, gt=0, allow_inf_nan=False)
    """Seconds without an event from the model before an attempt is given up and retried:
    from connecting to the end of the answer; keep-alives do not count."""
    context_window: int | None = Field(default=None, ge=1024)
    """The model's window in tokens; unset uses a table of known model families (and a
    smaller limit a server states in an error is always believed)."""
    thinking_budget: int | None = Field(default=None, ge=1024)
    """Anthropic: turn extended thinking on with this many tokens to think in."""
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    """OpenAI reasoning models: how hard to think (sent as is; unset: the model's default)."""

    @model_validator(mode="after")
    def _fill_model(self) -> ProviderSettings:
        """Resolve the model here so every consumer sees a concrete id, never None."""
        if self.model is None:
            self.model = default_model(self.name)
        return self

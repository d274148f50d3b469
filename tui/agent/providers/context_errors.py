"""Recognising "the prompt is too long" in every dialect a model server speaks it.

A full window is not a failure to report but a signal to make room and try again, so the loop
needs it as its own error type, with the limit when the server states one (the table of
windows in ``tui.agent.context_window`` is a guess; a stated limit is a fact). The shapes below
are the ones real servers send (both APIs' own, and the OpenAI-compatible local servers):

- OpenAI: 400, ``error.code == "context_length_exceeded"``, "This model's maximum context
  length is 8192 tokens. However, your messages resulted in 9000 tokens…"
- OpenAI's Responses API: the same code with ``param: "input"`` and "Your input exceeds the
  context window of this model…", no limit stated (openai/codex #20866); on a streamed request
  a ``response.failed`` event carries it (read in ``tui.agent.providers.responses``).
- Anthropic: 400 ``invalid_request_error``, "prompt is too long: 210000 tokens > 200000
  maximum", or "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000"
- vLLM: 400 ``{"object": "error", "message": "This model's maximum context length is 4096
  tokens. However, you requested 5000 tokens (…)", "type": "BadRequestError"}``
- llama.cpp server: 400 (500 in some versions) ``error.type == "exceed_context_size_error"``
  with ``n_ctx``; "request (4390 tokens) exceeds the available context size (4096 tokens)…"
- Ollama: "the input length exceeds the context length"
"""

from __future__ import annotations

import json
import re
from typing import Any

from tui.agent.providers.base import ProviderError

CONTEXT_LENGTH_CODE = "context_length_exceeded"
"""OpenAI's ``error.code`` for a full window, in both of its APIs."""

_PHRASES = (
    CONTEXT_LENGTH_CODE,
    "exceeds the context window",
    "maximum context length",
    "prompt is too long",
    "exceed context limit",
    "exceeds the available context size",
    "exceed_context_size_error",
    "exceeds the context length",
    "context size has been exceeded",
    "context window exceeds",
    "too many tokens",
)
_LIMITS = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"tokens? > (\d+) maximum"),
    re.compile(r"exceed context limit: \d+ \+ \d+ > (\d+)"),
    re.compile(r"available context size \((\d+) tokens?\)"),
    re.compile(r"context (?:length|window) (?:of|is) (\d+)"),
)


class ContextLengthExceeded(ProviderError):
    """The request did not fit the model's window; nothing was generated."""

    title = "Context window full"

    def __init__(self, msg: str, *, status: int | None = None, limit: int | None = None) -> None:
        super().__init__(msg, status=status, retryable=False)
        self.limit = limit
        """The window in tokens as the server stated it, when it did."""


def is_context_error(text: str) -> bool:
    lowered = text.lower()
    return any(phrase in lowered for phrase in _PHRASES)


def stated_limit(text: str) -> int | None:
    """The window size a server's error text states, if any."""
    lowered = " ".join(text.lower().split())
    for pattern in _LIMITS:
        match = pattern.search(lowered)
        if match:
            return int(match.group(1))
    return None


def _n_ctx(body: bytes) -> int | None:
    try:
        data: Any = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    value = error.get("n_ctx") if isinstance(error, dict) else None
    return value if isinstance(value, int) and value > 0 else None


def classify(status: int, body: bytes, message: str) -> ContextLengthExceeded | None:
    """A ``ContextLengthExceeded`` when this HTTP failure means "too long", else ``None``.

    Only 400, 413 and 500 qualify (llama.cpp has answered 500): a 429 "too many tokens per
    minute" is a rate limit, not a full window.
    """
    if status not in (400, 413, 500):
        return None
    text = body.decode("utf-8", errors="replace")
    if not (is_context_error(message) or is_context_error(text)):
        return None
    if "per minute" in text.lower() or "rate limit" in text.lower():
        return None
    limit = _n_ctx(body) or stated_limit(message) or stated_limit(text)
    return ContextLengthExceeded(message or "the prompt is too long", status=status, limit=limit)


def from_error(error: ProviderError) -> ContextLengthExceeded | None:
    """The same verdict for an error already raised (a stream error event, an older path)."""
    if isinstance(error, ContextLengthExceeded):
        return error
    if error.status not in (None, 400, 413, 500) or not is_context_error(error.msg):
        return None
    return ContextLengthExceeded(error.msg, status=error.status, limit=stated_limit(error.msg))

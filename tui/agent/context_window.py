"""How big a model's window is, and how full the next request would make it.

The window comes from, strongest first: a limit the server stated in an error (a fact about
this very deployment), ``[provider] context_window`` (the person knows their local server),
then the table below (a guess by model family). The table is small on purpose: families, not
every dated snapshot, matched by the longest prefix of the model id.

How full: the last response's usage says how many tokens the conversation had up to then;
what was added since is estimated at four characters per token, the usual rule of thumb for
English and code with BPE tokenizers. It under-counts dense text a little, which is why
compaction starts at 85% of the window and a "too long" error still gets one recovery.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tui.agent.providers.base import Message

CHARS_PER_TOKEN = 4
DEFAULT_WINDOW = 128_000
"""For a model the table does not know; a smaller real limit is learned from its first error."""

# Longest matching prefix wins; ids are compared lower-cased, after any "vendor/" prefix.
WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-mini": 200_000,
    "claude-": 200_000,
    "gemini-": 1_048_576,
    "llama3": 128_000,
    "llama-3": 128_000,
    "llama2": 4_096,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "qwen3-coder": 262_144,
    "deepseek": 128_000,
    "mistral": 32_768,
    "mistral-large": 128_000,
    "codestral": 256_000,
    "gemma3": 128_000,
    "phi4": 16_384,
}


def table_window(model: str) -> int:
    """The table's window for ``model``, or ``DEFAULT_WINDOW``."""
    name = model.lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in WINDOWS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return WINDOWS[best] if best else DEFAULT_WINDOW


def estimate_tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def message_chars(message: Message) -> int:
    """What a message weighs on the wire, roughly: text, call arguments, a fixed overhead."""
    size = len(message.content) + 16
    for call in message.tool_calls:
        size += len(call.name) + len(call.arguments) + 32
    for image in message.images:
        size += min(len(image.data), 6_000)  # an image costs ~1.5k tokens whatever its bytes
    return size


def fixed_chars(system: str, tools: list[dict[str, Any]]) -> int:
    """The part of every request that is not the conversation."""
    return len(system) + len(json.dumps(tools, separators=(",", ":")))


@dataclass
class ContextMeter:
    """The window, and the prompt size of the next request."""

    model: str
    override: int | None = None
    learned: int | None = None
    """A limit a server stated in a context-length error."""
    _usage_tokens: int | None = None
    _usage_count: int = 0
    """How many messages the conversation held when ``_usage_tokens`` was measured."""
    _known: list[Message] = field(default_factory=list)

    @property
    def window(self) -> int:
        candidates = [v for v in (self.learned, self.override) if v]
        return min(candidates) if candidates else table_window(self.model)

    def learn(self, limit: int | None) -> None:
        if limit and limit > 0:
            self.learned = min(limit, self.learned or limit)

    def measured(self, tokens: int, messages: list[Message]) -> None:
        """A response reported ``tokens`` for the conversation as it is now (its answer too)."""
        if tokens > 0:
            self._usage_tokens = tokens
            self._usage_count = len(messages)
            self._known = messages[: len(messages)]

    def forget(self) -> None:
        """The conversation was rewritten: the last measurement describes another one."""
        self._usage_tokens = None
        self._usage_count = 0
        self._known = []

    def estimate(self, system: str, tools: list[dict[str, Any]], messages: list[Message]) -> int:
        """Tokens the next request would send."""
        count = self._usage_count
        if (
            self._usage_tokens is not None
            and count <= len(messages)
            and all(a is b for a, b in zip(self._known, messages[:count], strict=False))
        ):
            extra = sum(message_chars(m) for m in messages[count:])
            return self._usage_tokens + estimate_tokens(extra)
        total = fixed_chars(system, tools) + sum(message_chars(m) for m in messages)
        return estimate_tokens(total)

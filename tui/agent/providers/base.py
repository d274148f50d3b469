"""The provider contract: a neutral conversation in, a stream of neutral events out.

The loop never sees a wire format. Each provider turns ``Message`` lists into its own request
body and its own SSE stream back into ``ProviderEvent``s, so adding a provider touches nothing
else.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from tui.errors import AgentTuiError

INVALID_TOOL_NAME = "invalid_tool_name"
_WIRE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def replay_name(name: str) -> str:
    """The name a past call is sent back under: its own when both APIs accept it (they
    require this shape of tool names), else ``INVALID_TOOL_NAME`` — no real tool can have
    such a name, and a refused name would fail this request and every resume."""
    return name if _WIRE_NAME.fullmatch(name) else INVALID_TOOL_NAME


@dataclass
class ToolCall:
    """A call the model asked for; ``arguments`` stays the raw JSON text the model sent."""

    id: str
    name: str
    arguments: str


@dataclass
class ImagePart:
    data: str
    """base64, no data: prefix."""
    mime_type: str = "image/png"


@dataclass
class ReasoningItem:
    """A reasoning block the API wants back verbatim: Anthropic ``thinking`` and
    ``redacted_thinking`` blocks (their ``signature`` proves them unaltered) and Responses API
    ``reasoning`` items (``encrypted_content`` carries them when nothing is stored server-side).

    ``data`` is the block exactly as received and is replayed exactly as received, never
    rebuilt from parts: one changed character and the API rejects the request.
    """

    api: Literal["anthropic", "responses"]
    """Which wire format produced it; only that format sends it back."""
    data: dict[str, Any]
    text: str = ""
    """The readable part (thinking text or summary), for the chat; empty when redacted."""


@dataclass
class Message:
    """One entry of the conversation, in no provider's format.

    - ``user``: ``content`` (and optional images).
    - ``assistant``: ``content`` text and the ``tool_calls`` it made.
    - ``tool``: the result for ``tool_call_id`` (already in the harness envelope), ``is_error``.
    """

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    images: list[ImagePart] = field(default_factory=list)
    reasoning: list[ReasoningItem] = field(default_factory=list)
    """``assistant`` only: the model's reasoning items, sent back before its text and calls."""


@dataclass
class TextDelta:
    text: str


@dataclass
class ToolCallDelta:
    """A piece of a tool call as it streams (for a live preview); ``index`` orders calls."""

    index: int
    id: str | None
    name: str | None
    arguments_delta: str


@dataclass
class UsageReport:
    """Tokens of one response, in one meaning for every API.

    ``input_tokens`` is the whole prompt, cached parts included (as OpenAI counts it;
    Anthropic's three counters are added up), so ``cache_read_tokens`` and
    ``cache_write_tokens`` are parts of it; this is also the shape the price library expects.
    ``reasoning_tokens`` are part of ``output_tokens``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: UsageReport) -> None:
        """Add ``other``'s counts to these (a session's running total)."""
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Completed:
    """The end of one response: everything assembled, ready for the loop."""

    text: str
    tool_calls: list[ToolCall]
    stop_reason: str
    """Normalised: ``end_turn``, ``tool_use``, ``max_tokens``, or the provider's own word."""
    usage: UsageReport = field(default_factory=UsageReport)
    reasoning: list[ReasoningItem] = field(default_factory=list)
    """Reasoning items to keep with this turn and send back with its tool results."""


@dataclass
class ReasoningDelta:
    """A piece of readable reasoning as it streams (thinking text or a summary)."""

    text: str


@dataclass
class Retrying:
    """The request failed before its answer was whole, and goes again after ``delay``.

    Nothing runs before an answer is whole (tools start after ``Completed``), so any failure
    of the request is safe to retry. When ``discard`` is set, events of the failed attempt
    already reached the consumer: it must drop what it built from them (a half-shown text is
    closed as cut off), since the next attempt starts the answer again from its beginning.
    """

    reason: str
    delay: float
    attempt: int
    """The attempt about to start (2 for the first retry)."""
    attempts: int
    discard: bool = False

    def describe(self) -> str:
        """``retrying in 2 s (the stream was cut off mid-answer), attempt 2 of 4``."""
        wait = f"{self.delay:.1f}" if self.delay < 10 else f"{self.delay:.0f}"
        return f"retrying in {wait} s ({self.reason}), attempt {self.attempt} of {self.attempts}"


ProviderEvent = TextDelta | ReasoningDelta | ToolCallDelta | UsageReport | Completed | Retrying


class ProviderError(AgentTuiError):
    """The model API failed for good (after retries), or answered something unusable."""

    title = "Model provider error"

    def __init__(self, msg: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(msg)
        self.status = status
        self.retryable = retryable


class StreamInterrupted(ProviderError):
    """The stream stopped before its end marker: what arrived is not a complete answer."""

    title = "Stream interrupted"


class Provider(ABC):
    """One model endpoint.

    Implementations hold a shared ``httpx.AsyncClient`` and must close it in ``aclose``.
    """

    name: str
    model: str

    @abstractmethod
    def stream(
        self,
        *,
        system: str,
        messages: list[Message],
        tools: list[dict[str, Any]],
        max_tokens: int | None = None,
    ) -> AsyncIterator[ProviderEvent]:
        """Send one request and yield its events; the last one is always ``Completed``.

        A failure before the answer is whole is retried (with backoff, bounded by the idle
        timeout and the deadline) and announced by a ``Retrying`` event first.

        ``tools`` are definitions in this provider's own format (from
        ``ToolRegistry.definitions``); an empty list means the request has no ``tools`` key.
        Cancelling the consuming task closes the HTTP stream at once.

        Raises:
            ProviderError: after the last retry, with a message safe to show (no API key).
            StreamInterrupted: the connection dropped mid-answer.
        """

    @property
    @abstractmethod
    def tool_format(self) -> Literal["openai", "anthropic"]:
        """Which ``ToolRegistry.definitions`` format this provider sends."""

    async def aclose(self) -> None:  # noqa: B027 - optional
        """Release the HTTP client."""

"""Keeping the next request inside the model's window: when to compact, and how far.

The loop asks ``plan`` before every request. Below ``TRIGGER`` of the window nothing happens;
above it, room is made down to ``TARGET`` (the gap is hysteresis: compacting at 85% back to
85% would compact again on the very next step). After a context-length error the same is done
with the window the server stated, and the loop retries that request once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from tui.agent.compaction import (
    KEEP_TURNS,
    Compaction,
    recent_start,
    stub_outputs,
    summarise,
    tokens_of,
)
from tui.agent.context_window import ContextMeter, fixed_chars
from tui.agent.providers.base import (
    Completed,
    Message,
    Provider,
    Retrying,
    TextDelta,
    UsageReport,
)
from tui.events import Compacted

TRIGGER = 0.85
TARGET = 0.6
SUMMARY_ANSWER_TOKENS = 2_048
UNSTATED_SHRINK = 0.8
"""After a "too long" that names no limit, the window is taken to be this much of what was
sent (again after each such error, so the guess converges)."""

Reason = Literal["auto", "overflow", "manual"]


@dataclass
class Room:
    """A finished compaction: the new conversation and the event that tells about it."""

    messages: list[Message]
    event: Compacted
    usage: UsageReport


class ContextManager:
    """The window, the meter, and the decision to compact."""

    def __init__(self, provider: Provider, *, context_window: int | None = None) -> None:
        self.provider = provider
        self.meter = ContextMeter(getattr(provider, "model", ""), override=context_window)

    def budget(self, max_tokens: int | None) -> int:
        """Prompt tokens allowed before compacting: 85% of the window, and never so many
        that the answer's own ``max_tokens`` would not fit."""
        window = self.meter.window
        limit = int(window * TRIGGER)
        return min(limit, window - max_tokens) if max_tokens else limit

    def learn_from(
        self,
        limit: int | None,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[Message],
    ) -> None:
        """A server refused the prompt as too long. Believe the limit it states; when it
        states none (Ollama), the window is below what was just sent, so shrink the guess."""
        if limit:
            self.meter.learn(limit)
            return
        sent = self.meter.estimate(system, tools, messages)
        self.meter.learn(int(min(sent, self.meter.window) * UNSTATED_SHRINK))

    def needs_room(
        self,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[Message],
        max_tokens: int | None,
    ) -> bool:
        return self.meter.estimate(system, tools, messages) > self.budget(max_tokens)

    async def make_room(
        self,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[Message],
        *,
        reason: Reason,
        focus: str = "",
    ) -> Room | None:
        """Compact, cheapest stage first; ``None`` when there was nothing to compact."""
        fixed = fixed_chars(system, tools)
        window = self.meter.window
        target = int(window * TARGET)
        before = max(self.meter.estimate(system, tools, messages), tokens_of(messages, fixed))
        usage = UsageReport()
        result: Compaction | None = None
        current = messages
        if reason != "manual":
            current, result = await self._stub(current, KEEP_TURNS, result)
            if result is not None and tokens_of(current, fixed) <= target:
                return self._room(result, reason, before, fixed, window, focus, usage)

        async def ask(system_text: str, prompt: str) -> str:
            return await self._ask(system_text, prompt, usage)

        summary = await summarise(current, window=window, summarise_fn=ask, focus=focus)
        if summary is not None:
            summary.stubbed = result.stubbed if result else 0
            result, current = summary, summary.messages
        # Still too big: the last turns themselves are (a huge recent output). Stub those too,
        # all but the newest turn, then, as a last resort, that one as well: a stub still
        # names the file that holds the whole output.
        for keep in (1, 0):
            if tokens_of(current, fixed) <= target:
                break
            current, result = await self._stub(current, keep, result)
        if result is None:
            return None
        return self._room(result, reason, before, fixed, window, focus, usage)

    @staticmethod
    async def _stub(
        messages: list[Message], keep_turns: int, result: Compaction | None
    ) -> tuple[list[Message], Compaction | None]:
        stubbed, count = await asyncio.to_thread(
            stub_outputs, messages, recent_start(messages, keep_turns)
        )
        if not count:
            return messages, result
        if result is None:
            return stubbed, Compaction(stubbed, "stubs", stubbed=count)
        result.messages = stubbed
        result.stubbed += count
        return stubbed, result

    def _room(
        self,
        result: Compaction,
        reason: Reason,
        before: int,
        fixed: int,
        window: int,
        focus: str,
        usage: UsageReport,
    ) -> Room:
        self.meter.forget()
        event = Compacted(
            stage=result.stage,  # type: ignore[arg-type]
            reason=reason,
            tokens_before=before,
            tokens_after=tokens_of(result.messages, fixed),
            window=window,
            stubbed=result.stubbed,
            summarized=result.summarized,
            kept_user=result.kept_user,
            kept_recent=result.kept_recent,
            files=result.files[:50],
            todo=result.todo,
            focus=focus,
            fallback=result.fallback,
        )
        return Room(result.messages, event, usage)

    async def _ask(self, system: str, prompt: str, usage: UsageReport) -> str:
        """One summary request: no tools, a bounded answer."""
        text: list[str] = []
        completed: Completed | None = None
        async for event in self.provider.stream(
            system=system,
            messages=[Message(role="user", content=prompt)],
            tools=[],
            max_tokens=SUMMARY_ANSWER_TOKENS,
        ):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, Retrying) and event.discard:
                text.clear()  # the answer starts over
            elif isinstance(event, UsageReport):
                usage.input_tokens += event.input_tokens
                usage.output_tokens += event.output_tokens
            elif isinstance(event, Completed):
                completed = event
        if completed is not None:
            usage.input_tokens += completed.usage.input_tokens
            usage.output_tokens += completed.usage.output_tokens
            return completed.text or "".join(text)
        return "".join(text)

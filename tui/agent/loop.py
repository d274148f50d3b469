"""The agent loop: request → stream → tool calls → results → next request.

Everything it does goes out as an event through one ``emit`` function (transcript first, then
the bus), so the UI, the headless printer and the saved session see the same story. The loop
holds the conversation; nothing outside reaches into it except through ``submit``, ``steer``
and ``cancel``.
"""

from __future__ import annotations

import asyncio
import collections
import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from tui.agent import pricing
from tui.agent.admission import admit_completed
from tui.agent.call_endings import result_message, unrun_events
from tui.agent.context_manager import ContextManager, Reason
from tui.agent.execution import ToolExecutor, ToolPlan
from tui.agent.hooks import Hooks
from tui.agent.providers.base import (
    Completed,
    ImagePart,
    Message,
    Provider,
    ProviderError,
    Retrying,
    TextDelta,
    ToolCall,
    UsageReport,
)
from tui.agent.providers.context_errors import ContextLengthExceeded, from_error
from tui.agent.tool_call import CallRunner
from tui.errors import LimitReached
from tui.events import (
    ApprovalsWaiting,
    AssistantMessage,
    AssistantTextDelta,
    ErrorEvent,
    Event,
    Notice,
    ToolCallRequested,
    TurnEnded,
    TurnStarted,
    UserMessage,
)
from tui.exec.backend import ExecutionBackend
from tui.safe_text import clean
from tui.security.policy import SecurityPolicy
from tui.security.risk.warm import warm as warm_rater
from tui.tools.registry import ENDS_TURN, ToolRegistry
from tui.tools.result import ToolResult
from tui.tools.structured_output import STRUCTURED_OUTPUT_KEY

Emit = Callable[[Event], None]
MessageSink = Callable[[Message], None]
CompactionSink = Callable[[list[Message]], None]


@dataclass
class LoopSettings:
    max_turns: int | None = None
    """Model requests per user message; ``None`` (the default) sets no cap."""
    plan: ToolPlan = field(default_factory=ToolPlan)
    max_tokens: int | None = None
    subagent_max_turns: int = 20
    require_structured_output: bool = False
    """The turn ends only through an accepted ``structured_output`` call (``--json-schema``)."""
    context_window: int | None = None
    """``[provider] context_window``: overrides the table of known windows."""


STRUCTURED_OUTPUT_REMINDERS = 2
STRUCTURED_OUTPUT_REMINDER = (
    "You answered without calling structured_output. The caller can only read an answer given "
    "through that tool: call it now with your final answer."
)


@dataclass
class TurnOutcome:
    reason: str
    """``completed``, ``max_turns``, ``cancelled`` or ``error``."""
    final_text: str
    turns: int
    error: str | None = None
    usage: UsageReport = field(default_factory=UsageReport)
    structured_output: Any = None
    """The accepted ``structured_output`` answer, when the run required one."""
    limits: list[str] = field(default_factory=list)
    """Calls a limit refused this turn (``LimitReached``): work that did not happen."""


class AgentLoop:
    def __init__(
        self,
        *,
        provider: Provider,
        registry: ToolRegistry,
        backend: ExecutionBackend,
        policy: SecurityPolicy,
        system_prompt: str,
        emit: Emit,
        settings: LoopSettings | None = None,
        hooks: Hooks | None = None,
        loop_id: str = "main",
        on_message: MessageSink | None = None,
        messages: list[Message] | None = None,
        on_compaction: CompactionSink | None = None,
    ) -> None:
        self.provider = provider
        self.registry = registry
        self.backend = backend
        self.policy = policy
        self.system_prompt = system_prompt
        self.emit_event = emit
        self.settings = settings or LoopSettings()
        self.hooks = hooks or Hooks()
        self.loop_id = loop_id
        self.on_message = on_message
        self.messages: list[Message] = list(messages or [])
        self.on_compaction = on_compaction
        self.context = ContextManager(provider, context_window=self.settings.context_window)
        self._compact_request: str | None = None
        self._busy = asyncio.Lock()
        """Held by a turn and by a compaction made between turns: never both at once."""
        self.usage = UsageReport()
        self.cost_usd: float | None = None
        """What this loop's requests cost so far; ``None`` while no response had a price."""
        self._prices: asyncio.Future[None] | None = None
        self._rater: asyncio.Future[None] | None = None
        self._steering: collections.deque[str] = collections.deque()
        self._cancel = asyncio.Event()
        self._stream_task: asyncio.Task[Any] | None = None
        self._definitions: tuple[tuple[Any, ...], list[dict[str, Any]]] | None = None
        self._structured: list[Any] = []
        self._limits: list[str] = []
        self.running = False
        self.idle = asyncio.Event()
        """Set while no turn runs (what a scheduled prompt waits for)."""
        self.idle.set()

    # -- what the outside may do -------------------------------------------------------------

    def steer(self, text: str) -> None:
        """Queue a user message; it goes to the model before the next request."""
        text = clean(text)
        self._steering.append(text)
        self.emit(UserMessage(text=text, steering=True))

    def cancel(self) -> None:
        """Stop the stream and every running tool now; the session stays usable."""
        self._cancel.set()
        if self._stream_task is not None and not self._stream_task.done():
            self._stream_task.cancel()

    @property
    def busy(self) -> bool:
        """A turn or a compaction is under way (what Esc can stop)."""
        return self.running or self._busy.locked()

    @property
    def steering_pending(self) -> bool:
        return bool(self._steering)

    async def submit(self, prompt: str, *, images: list[ImagePart] | None = None) -> TurnOutcome:
        """Run one user turn to its end (answer, max turns, cancel or error)."""
        if self.running:
            self.steer(prompt)
            return TurnOutcome("steered", "", 0)
        prompt = clean(prompt)  # argv may hold undecodable bytes as lone surrogates
        async with self._busy:
            return await self._submit(prompt, images)

    async def _submit(self, prompt: str, images: list[ImagePart] | None) -> TurnOutcome:
        self.running = True
        self.idle.clear()
        self._cancel = asyncio.Event()
        self.emit(UserMessage(text=prompt))
        self._append(Message(role="user", content=prompt, images=list(images or [])))
        self._limits = []
        try:
            outcome = await self._run()
            outcome.limits = list(self._limits)
        finally:
            self.running = False
            self.idle.set()
            self._stream_task = None
        self.emit(TurnEnded(reason=outcome.reason, final_text=outcome.final_text))  # type: ignore[arg-type]
        return outcome

    # -- internals ---------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        if event.loop_id != self.loop_id and event.loop_id == "main":
            event = event.model_copy(update={"loop_id": self.loop_id})
        self.emit_event(event)

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        if self.on_message is not None:
            self.on_message(message)

    def _inject_steering(self) -> None:
        while self._steering:
            self._append(Message(role="user", content=self._steering.popleft()))

    async def _run(self) -> TurnOutcome:
        final_text = ""
        reminders = 0
        self._structured = []
        turn = 0
        while self.settings.max_turns is None or turn < self.settings.max_turns:
            turn += 1
            if self._cancel.is_set():
                return TurnOutcome("cancelled", final_text, turn - 1)
            self._inject_steering()
            self.emit(TurnStarted(turn=turn))
            for before in self.hooks.before_update:
                await before(turn)
            try:
                completed = await self._request()
            except asyncio.CancelledError:
                if not self._cancel.is_set():
                    raise
                completed = None
            except ContextLengthExceeded as error:
                message = f"{error.msg} (still too long after compacting)"
                self.emit(ErrorEvent(message=message, title=error.title))
                return TurnOutcome("error", final_text, turn, error=message)
            except ProviderError as error:
                self.emit(ErrorEvent(message=error.msg, title=error.title))
                return TurnOutcome("error", final_text, turn, error=error.msg)
            if completed is None:  # cancelled mid-stream
                self.emit(Notice(message="cancelled by the user", level="warning"))
                return TurnOutcome("cancelled", final_text, turn)
            final_text = completed.text or final_text
            if not completed.tool_calls:
                for after in self.hooks.after_update:
                    await after(turn)
                if self._steering and not self._cancel.is_set():
                    continue  # the user said more while the model answered: keep going
                if self.settings.require_structured_output:
                    if reminders >= STRUCTURED_OUTPUT_REMINDERS:
                        reason = "the model kept answering without calling structured_output"
                        self.emit(ErrorEvent(message=reason, title="structured output"))
                        return TurnOutcome("error", completed.text, turn, error=reason)
                    reminders += 1
                    self._append(Message(role="user", content=STRUCTURED_OUTPUT_REMINDER))
                    continue
                return TurnOutcome("completed", completed.text, turn, usage=self.usage)
            stopped = await self._run_tools(completed.tool_calls)
            for after in self.hooks.after_update:
                await after(turn)
            if self._cancel.is_set():
                return TurnOutcome("cancelled", final_text, turn)
            if stopped is not None:
                self.emit(Notice(message=stopped, level="warning"))
                return TurnOutcome("error", final_text, turn, error=stopped, usage=self.usage)
            if self._structured:
                value = self._structured[-1]
                return TurnOutcome(
                    "completed",
                    json.dumps(value, ensure_ascii=False),
                    turn,
                    usage=self.usage,
                    structured_output=value,
                )
        self.emit(Notice(message=f"stopped after {turn} turns (max_turns)"))
        return TurnOutcome("max_turns", final_text, turn, usage=self.usage)

    async def _request(self) -> Completed | None:
        """One model request that fits the window: room is made before it when the estimate
        says so, and once more (then one retry) when the server still says it is too long.
        A rejected request produced nothing, so the retry runs no step twice."""
        tools = self._tool_definitions()
        focus = ""
        reason: Reason | None = None
        if self._compact_request is not None:
            focus, self._compact_request, reason = self._compact_request, None, "manual"
        elif self.context.needs_room(
            self.system_prompt, tools, self.messages, self.settings.max_tokens
        ):
            reason = "auto"
        if reason is not None:
            # A summary request can take a while: run it where ``cancel`` reaches it.
            await self._cancellable(self._compact(focus, reason=reason))
            if self._cancel.is_set():
                return None
        try:
            return await self._request_once()
        except ProviderError as error:
            too_long = from_error(error)
            if too_long is None:
                raise
        self.context.learn_from(too_long.limit, self.system_prompt, tools, self.messages)
        self.emit(Notice(message=f"the model's window is full ({too_long.msg}); compacting"))
        if not await self._cancellable(self._compact(reason="overflow")):
            if self._cancel.is_set():
                return None
            raise too_long
        return await self._request_once()

    async def _cancellable(self, work: Coroutine[Any, Any, Any]) -> bool:
        """Run ``work`` where ``cancel`` reaches it (a summary request can take a while);
        False when it was cancelled or returned False."""
        self._stream_task = asyncio.ensure_future(work)
        try:
            return await self._stream_task is not False
        except asyncio.CancelledError:
            if self._cancel.is_set():
                return False
            raise

    async def compact(self, focus: str = "") -> bool:
        """``/compact``: make the conversation sent to the model smaller; the transcript
        keeps all of it.

        While a turn runs, this waits for the turn's next model request instead, so it never
        rewrites the conversation under a running tool; a prompt sent meanwhile waits for it.
        """
        focus = clean(focus)
        if self.running:
            self._compact_request = focus
            self.emit(Notice(message="the conversation will be compacted before the next request"))
            return True
        async with self._busy:
            self._cancel = asyncio.Event()  # Esc stops the summary request, as it stops a turn
            try:
                return await self._cancellable(self._compact(focus, reason="manual"))
            finally:
                self._stream_task = None

    async def _compact(self, focus: str = "", *, reason: Reason = "auto") -> bool:
        room = await self.context.make_room(
            self.system_prompt, self._tool_definitions(), self.messages, reason=reason, focus=focus
        )
        if room is None:
            if reason == "manual":
                self.emit(Notice(message="nothing to compact yet"))
            return False
        if room.usage.input_tokens or room.usage.output_tokens:
            self._add_usage(room.usage)
        self.messages = room.messages
        if self.on_compaction is not None:
            self.on_compaction(list(room.messages))
        self.emit(room.event)
        return True

    async def _request_once(self) -> Completed | None:
        stream = asyncio.ensure_future(self._stream())
        self._stream_task = stream
        try:
            return await stream
        except asyncio.CancelledError:
            if self._cancel.is_set():
                return None
            raise

    def _tool_definitions(self) -> list[dict[str, Any]]:
        """The request's tool definitions, rebuilt only when the tool set changes: generating
        the JSON schemas costs ~5 ms per request, more than a whole ``true`` command."""
        fmt = self.provider.tool_format
        key = (fmt, *((name, self.registry.get(name)) for name in self.registry.active_names()))
        if self._definitions is None or self._definitions[0] != key:
            self._definitions = (key, self.registry.definitions(fmt))
        return self._definitions[1]

    async def _stream(self) -> Completed | None:
        tools = self._tool_definitions()
        text_parts: list[str] = []
        completed: Completed | None = None
        measured: dict[str, int] = {}
        try:
            async for event in self.provider.stream(
                system=self.system_prompt,
                messages=self.messages,
                tools=tools,
                max_tokens=self.settings.max_tokens,
            ):
                if self._prices is None:  # the request is out: load prices while it streams
                    self._prices = asyncio.ensure_future(pricing.warm())
                if self._rater is None:  # and the rater, for the commands it may hold
                    self._rater = asyncio.ensure_future(asyncio.to_thread(warm_rater))
                if isinstance(event, TextDelta):
                    piece = clean(event.text)
                    text_parts.append(piece)
                    self.emit(AssistantTextDelta(text=piece))
                elif isinstance(event, UsageReport):
                    self._add_usage(event)
                    _widen(measured, event)
                elif isinstance(event, Completed):
                    # Keep reading to the generator's end rather than returning here: closing
                    # it early would drop the HTTP connection instead of reusing it.
                    completed = event
                elif isinstance(event, Retrying):
                    self._retrying(event, "".join(text_parts))
                    text_parts = []
        except asyncio.CancelledError:
            partial = "".join(text_parts)
            if partial:
                self._append(Message(role="assistant", content=partial + "\n[interrupted]"))
                self.emit(AssistantMessage(text=partial))
            raise
        except ProviderError as error:
            partial = "".join(text_parts)
            if partial:
                self._append(Message(role="assistant", content=partial + "\n[interrupted]"))
                self.emit(AssistantMessage(text=partial))
            raise error
        if completed is None:
            raise ProviderError(f"{self.provider.name} stream ended without a final message")
        _widen(measured, completed.usage)
        if self._prices is not None:
            await self._prices
        if self._rater is not None and completed.tool_calls:
            # The first commands are judged with the rater loaded, not while it loads (a
            # failed load is the judge's to report, when it imports the rater itself).
            await asyncio.wait([self._rater])
        finished = self._finish_message(completed)
        self.context.meter.measured(_prompt_tokens(measured), self.messages)
        return finished

    def _retrying(self, event: Retrying, partial: str) -> None:
        """Say the request goes again, and close a half-shown answer it replaces (the model
        starts over, and nothing of the failed attempt joins the conversation)."""
        if event.discard and partial:
            mark = "\n[cut off: asking again]"
            self.emit(AssistantTextDelta(text=mark))  # onto the half-shown text itself
            self.emit(AssistantMessage(text=partial + mark))
        self.emit(Notice(message=event.describe(), level="warning"))

    def _add_usage(self, usage: UsageReport) -> None:
        self.usage.add(usage)
        cost = pricing.cost_usd(usage, model=self.provider.model, provider=self.provider.name)
        self.cost_usd = pricing.add_cost(self.cost_usd, cost)
        self.emit(pricing.usage_event(usage, cost))

    def _finish_message(self, completed: Completed) -> Completed:
        """Admit the response into the conversation; the loop goes on with what was admitted."""
        completed = admit_completed(completed)
        if completed.usage.input_tokens or completed.usage.output_tokens:
            self._add_usage(completed.usage)
        self._append(
            Message(
                role="assistant",
                content=completed.text,
                tool_calls=completed.tool_calls,
                reasoning=completed.reasoning,
            )
        )
        self.emit(
            AssistantMessage(
                text=completed.text,
                tool_call_ids=[call.id for call in completed.tool_calls],
                thinking="\n\n".join(item.text for item in completed.reasoning if item.text),
            )
        )
        for call in completed.tool_calls:
            self.emit(
                ToolCallRequested(
                    tool_call_id=call.id, tool_name=call.name, arguments=call.arguments
                )
            )
        return completed

    async def _run_tools(self, calls: list[ToolCall]) -> str | None:
        """Run one response's calls; what stops the turn after them, if anything does (the
        loop detector's third stage)."""
        saved: dict[int, Message] = {}
        """Results already in the transcript, by ``id(call)``: each was saved as it ended."""

        def record(call: ToolCall, result: ToolResult) -> None:
            if self.on_message is None:
                return
            message = result_message(call, result)
            saved[id(call)] = message
            self.on_message(message)

        runner = CallRunner(
            self.registry,
            self.backend,
            self.policy,
            self.hooks,
            self.emit,
            self._cancel,
            self.loop_id,
            record=record if self.on_message is not None else None,
        )
        executor = ToolExecutor(
            self.settings.plan,
            runner.run,
            needs_approval=lambda call: self.registry.needs_approval(
                call.name, call.arguments, self.policy
            ),
            exclusive=lambda call: bool(
                (tool := self.registry.get(call.name)) is not None and tool.exclusive
            ),
            steered=lambda: self.steering_pending,
            cancelled=self._cancel.is_set,
            on_waiting=lambda count: self.emit(ApprovalsWaiting(count=count)),
        )
        self.registry.loops.begin_decision()  # the calls of one answer are one decision
        finished: dict[int, ToolResult] = {}
        try:
            results = await executor.run(calls, finished)
        except BaseException:
            self.registry.loops.end_decision()
            # The task running this loop was cancelled from outside (not via ``cancel``) or
            # something broke: the calls are already in the conversation, and a request with
            # an unanswered call is rejected, so each one still gets exactly one result.
            results = [
                finished[index] if index in finished else self._interrupted(call)
                for index, call in enumerate(calls)
            ]
            self._record_results(calls, results, saved)
            raise
        self.registry.loops.end_decision()
        self._record_results(calls, results, saved)
        for call, result in zip(calls, results, strict=True):
            if result.details.get(ENDS_TURN):
                return (
                    f"the turn was stopped: the model kept repeating a loop with {call.name} "
                    "after it was warned and a call was refused. Say how to go on, or start "
                    "over with a different request."
                )
        return None

    def _interrupted(self, call: ToolCall) -> ToolResult:
        result = ToolResult.error(
            "Interrupted",
            f"{call.name} was interrupted before it finished; whether it had any effect is "
            "unknown — check before repeating it.",
        )
        self._emit_unrun(call, result)
        return result

    def _record_results(
        self, calls: list[ToolCall], results: list[ToolResult], saved: dict[int, Message]
    ) -> None:
        """The results join the conversation in call order; those not saved as they ended
        (skipped, interrupted) are saved now."""
        for call, result in zip(calls, results, strict=True):
            if not result.is_error and STRUCTURED_OUTPUT_KEY in result.details:
                self._structured.append(result.details[STRUCTURED_OUTPUT_KEY])
            if result.details.get("skipped"):
                self._emit_unrun(call, result, started=True)
            message = saved.get(id(call))
            if message is not None:
                self.messages.append(message)
            else:
                self._append(result_message(call, result))
            if result.details.get("error_type") == LimitReached.__name__:
                self._limited(call, result)

    def _limited(self, call: ToolCall, result: ToolResult) -> None:
        """A limit stopped work: the model read why in the result; the person is told as an
        error, and the turn remembers it (a headless run then does not exit 0)."""
        reason = result.text.removeprefix(f"Error ({LimitReached.__name__}): ")
        self._limits.append(f"{call.name}: {reason}")
        self.emit(ErrorEvent(title=LimitReached.title, message=f"{call.name} refused: {reason}"))

    def _emit_unrun(self, call: ToolCall, result: ToolResult, *, started: bool = False) -> None:
        """Close a call that never reached the registry (see ``unrun_events``)."""
        for event in unrun_events(call, result, self.backend.actor, started=started):
            self.emit(event)


def _widen(into: dict[str, int], usage: UsageReport) -> None:
    """Keep the largest report per field: a provider may report usage mid-stream and again
    at the end."""
    for name in ("input_tokens", "output_tokens"):
        into[name] = max(into.get(name, 0), int(getattr(usage, name, 0) or 0))


def _prompt_tokens(usage: dict[str, int]) -> int:
    """What the conversation measured at this answer: every prompt token and the answer,
    which the next request carries. ``UsageReport.input_tokens`` is the whole prompt in
    every wire format (the providers add Anthropic's cache reads and writes into it)."""
    if not usage.get("input_tokens"):
        return 0
    return usage["input_tokens"] + usage.get("output_tokens", 0)


def message_summary(messages: list[Message]) -> dict[str, Any]:
    """Counts by role, for the headless JSON output."""
    counts: dict[str, int] = {}
    for message in messages:
        counts[message.role] = counts.get(message.role, 0) + 1
    return counts

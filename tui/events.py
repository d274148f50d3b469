"""The typed events that travel on the bus.

Every panel, the transcript and the headless printer read only these, so each is a pydantic
model with a literal ``kind``: it serialises to one JSON line and parses back unchanged.
"""

from __future__ import annotations

import enum
import functools
import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator


def _now_ms() -> int:
    return int(time.time() * 1000)


MAX_ARGUMENT_DEPTH = 64
"""Nesting kept in the arguments events carry: pydantic's serialiser refuses ~255 levels and
``json`` ~1,000, and no tool argument is that deep on purpose."""
TOO_DEEP = "(nested too deeply to show)"


def bounded_depth(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> Any:
    """A copy of ``value`` with whatever lies deeper than ``limit`` levels replaced by
    ``TOO_DEEP``; iterative, so no depth can overflow the stack. Shallow values are returned
    as they are."""
    if not isinstance(value, dict | list) or _depth_within(value, limit):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    while stack:
        source, parent, slot, depth = stack.pop()
        if isinstance(source, dict | list) and depth >= limit:
            parent[slot] = TOO_DEEP
            continue
        if isinstance(source, dict):
            copy: Any = dict.fromkeys(source)
            stack.extend((item, copy, key, depth + 1) for key, item in source.items())
        elif isinstance(source, list):
            copy = [None] * len(source)
            stack.extend((item, copy, index, depth + 1) for index, item in enumerate(source))
        else:
            copy = source
        parent[slot] = copy
    return root[0]


def _depth_within(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth >= limit:
                return False
            items = node.values() if isinstance(node, dict) else node
            stack.extend((item, depth + 1) for item in items)
    return True


class Event(BaseModel):
    """Fields every event carries."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    """``defer_build``: an event's validator is built when the first one is made, so a run
    pays only for the events it publishes."""

    ts: int = Field(default_factory=_now_ms)
    """Unix milliseconds when the event was made."""
    loop_id: str = "main"
    """Which agent loop produced it: ``main`` or a sub-agent's child loop id."""


class TurnStarted(Event):
    kind: Literal["turn_started"] = "turn_started"
    turn: int
    """1-based index of the model request within the user's turn."""


class TurnEnded(Event):
    kind: Literal["turn_ended"] = "turn_ended"
    reason: Literal["completed", "max_turns", "cancelled", "error"]
    final_text: str = ""


class UserMessage(Event):
    kind: Literal["user_message"] = "user_message"
    text: str
    steering: bool = False
    """True when the user typed it while the agent was working."""


class AssistantTextDelta(Event):
    kind: Literal["assistant_delta"] = "assistant_delta"
    text: str


class AssistantMessage(Event):
    kind: Literal["assistant_message"] = "assistant_message"
    text: str
    tool_call_ids: list[str] = Field(default_factory=list)
    thinking: str = ""
    """The model's readable reasoning for this message (shown collapsed), if any."""


class ToolCallRequested(Event):
    """The model asked for a tool; arguments are the raw JSON string it sent."""

    kind: Literal["tool_requested"] = "tool_requested"
    tool_call_id: str
    tool_name: str
    arguments: str


class ToolCallStarted(Event):
    """Arguments parsed, policy passed: the tool is running now."""

    kind: Literal["tool_started"] = "tool_started"
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    command: str | None = None
    """The full shell command, when the tool runs one."""
    actor: str = "local"
    """Where it runs: ``local``, ``ssh:host``, ``container:name``, optionally ``…/tmux:%3``."""
    risk: str | None = None
    cwd: str | None = None
    """The directory it starts in and relative paths start at: a shared shell's (None: the
    workspace, as for every call on a backend without one)."""
    cwd_elsewhere: bool = False
    """``cwd`` is not the workspace: shown highlighted."""
    sandbox: str | None = None
    """Where its command runs: ``sandbox: workspace, no network``, ``OUTSIDE the sandbox``,
    ``no sandbox: the rater decides`` (None: the call runs no command)."""
    hosts: list[str] = Field(default_factory=list)
    """A fan-out's hosts that run it (``FanoutHostUpdate`` tells each one's story)."""

    @field_validator("arguments")
    @classmethod
    def _shallow(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Nesting past what the panels, the transcript and ``json`` survive is cut: a model
        can send arguments ~1,000 levels deep (``tui.safe_text.bounded_depth``)."""
        bounded: dict[str, Any] = bounded_depth(value)
        return bounded


class ToolOutputChunk(Event):
    """A piece of a running tool's output, in full: the UI sees what the model may not."""

    kind: Literal["tool_output"] = "tool_output"
    tool_call_id: str
    tool_name: str
    stream: Literal["stdout", "stderr", "info"]
    text: str


class ToolProgress(Event):
    """How far a running tool says it is (an MCP server's progress notification, say).

    Coalesced per call before it reaches the bus, so a chatty tool never floods the UI.
    """

    kind: Literal["tool_progress"] = "tool_progress"
    tool_call_id: str
    tool_name: str
    fraction: float | None = None
    """0..1 when the tool knows its total; None when it only says something."""
    message: str = ""


class ToolCallSkipped(Event):
    """A before-tool hook decided the call does not run: it never started and never ends,
    only this result exists (the model reads the same text)."""

    kind: Literal["tool_skipped"] = "tool_skipped"
    tool_call_id: str
    tool_name: str
    result: str
    """What the model reads instead of the tool's output (bounded)."""


MAX_ERROR_CHARS = 20_000
"""Of a failed call's message carried in ``ToolCallCompleted.error``."""


class ToolCallCompleted(Event):
    kind: Literal["tool_completed"] = "tool_completed"
    tool_call_id: str
    tool_name: str
    is_error: bool
    duration_ms: float
    """How long the call took, without the time it waited for approval."""
    approval_wait_ms: float = 0.0
    """How long it waited for a person's answer (shown apart from the duration)."""
    exit_code: int | None = None
    error_type: str | None = None
    summary: str = ""
    """The first line of the result, for a collapsed view."""
    error: str = ""
    """A failed call's whole message, as the model read it (at most ``MAX_ERROR_CHARS``):
    the block shows it wrapped — the part past a cut summary is usually the fix."""
    truncated_chars: int = 0
    """How much of the output the model did not get (the UI stream had all of it)."""
    full_output_path: str | None = None
    cut_notes: list[str] = Field(default_factory=list)
    """What a cap cut that the model's truncation marker does not cover (the disk cap of
    the saved output), one sentence each, for the block."""
    child_loop_id: str | None = None
    cwd: str | None = None
    """Where the shared shell stands after the command (a ``cd`` moves it)."""
    diff: str | None = None
    """The unified diff a file tool made (bounded): shown in the block and headless output,
    while the model reads only the compact result."""


class RiskSegmentView(BaseModel):
    """One segment of a compound command as the approval modal shows it."""

    text: str
    risk: Literal["low", "medium", "unknown", "high"]
    reasons: list[str] = Field(default_factory=list)


class HostChoiceView(BaseModel):
    """One host of a fan-out as the approval shows it."""

    name: str
    groups: list[str] = Field(default_factory=list)
    state: Literal["ask", "allowed", "refused"] = "ask"
    """``ask``: waits for this answer; ``allowed``: runs unasked there (its mode, a rule or a
    grant); ``refused``: never runs there (blocked, denied, unreachable)."""
    reason: str = ""
    sandbox: str | None = None
    """Where the command would run on that host (``sandbox: …`` or ``no sandbox: …``)."""


class ApprovalRequested(Event):
    """A call waits for a person. The future that answers it travels beside this, not in it."""

    kind: Literal["approval_requested"] = "approval_requested"
    request_id: str
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    command: str | None = None
    risk: Literal["low", "medium", "unknown", "high"] | None = None
    segments: list[RiskSegmentView] = Field(default_factory=list)
    claimed_risk: str | None = None
    why: str | None = None
    actor: str = "local"
    suggested_pattern: str | None = None
    reason: str = ""
    """Why the policy asks: the mode, the ``ask`` rule, the secret read (see
    ``tui.security.reasons``), so a person never approves without knowing why they are asked."""
    cwd: str | None = None
    """Where it will run: the shared shell's directory (None: the workspace)."""
    cwd_elsewhere: bool = False
    """``cwd`` is not the workspace: the modal highlights it."""
    sandbox: str | None = None
    """Where the command would run, as ``ToolCallStarted.sandbox`` says it."""
    outside: bool = False
    """It asks to run outside the sandbox: only a person answers, never an auto-approve window
    or a saved answer."""
    diff: str | None = None
    """What a file tool would change, as a unified diff of the file read when asking (a new
    file: all of it added); None when the tool has nothing to show or the file is unreadable
    (a secret place is never read for it)."""
    always_rules: list[str] = Field(default_factory=list)
    """Every rule "allow always, exactly" would add (one per segment of a compound command),
    as the policy computed them: the modal lists each one, so a grant never holds more than
    the person was shown."""
    hosts: list[HostChoiceView] = Field(default_factory=list)
    """A fan-out: every host the pattern chose, and what happens there (empty: one target)."""
    host_pattern: str | None = None
    """The fan-out's ``hosts`` pattern as the model wrote it."""

    @field_validator("arguments")
    @classmethod
    def _shallow(cls, value: dict[str, Any]) -> dict[str, Any]:
        """As ``ToolCallStarted.arguments``: nesting past what every reader survives is cut."""
        bounded: dict[str, Any] = bounded_depth(value)
        return bounded


class ApprovalsWaiting(Event):
    """How many calls will ask a person after the question on screen, as one source counts
    them: a loop's calls still to run that need approval (``loop_id`` that loop's), or calls
    the policy holds while it asks about another (``loop_id`` ``policy``; sub-agents asking
    at once). The modal adds the sources up: "N more waiting"."""

    kind: Literal["approvals_waiting"] = "approvals_waiting"
    count: int


class ApprovalResolved(Event):
    kind: Literal["approval_resolved"] = "approval_resolved"
    request_id: str
    tool_call_id: str
    decision: str
    message: str | None = None
    grant: str | None = None


class ApprovalDecision(enum.Enum):
    """The person's choice on an approval, as the modal or the headless prompt gives it."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    DENY = "deny"
    DENY_WITH_MESSAGE = "deny_with_message"


class ApprovalAnswer(BaseModel):
    """What the person chose: the answer to an ``ApprovalRequested``, given by the UI (or the
    headless prompt) and awaited by the policy. It never travels on the bus itself."""

    decision: ApprovalDecision
    message: str | None = None
    """For deny-with-message: what the model reads instead of the output."""
    pattern: str | None = None
    """For allow-always: an edited ``prefix:*`` pattern; None grants the exact command."""
    scope: Literal["session", "saved"] = "session"
    rules: list[str] | None = None
    """For allow-always, exactly: the rules of ``ApprovalRequested.always_rules`` the person
    kept ticked (None: all of them). The call itself runs either way."""
    hosts: list[str] | None = None
    """A fan-out: the asked hosts the person allows (None: all of them)."""
    grant_hosts: str | None = None
    """A fan-out's allow-always: the hosts or groups (a host pattern) the grant holds on
    (None: the hosts allowed now)."""

    @classmethod
    def allow_once(cls) -> ApprovalAnswer:
        return cls(decision=ApprovalDecision.ALLOW_ONCE)

    @classmethod
    def deny(cls, message: str | None = None) -> ApprovalAnswer:
        if message:
            return cls(decision=ApprovalDecision.DENY_WITH_MESSAGE, message=message)
        return cls(decision=ApprovalDecision.DENY)

    @property
    def allowed(self) -> bool:
        return self.decision in (ApprovalDecision.ALLOW_ONCE, ApprovalDecision.ALLOW_ALWAYS)


class Usage(Event):
    """The tokens of one model response; ``input_tokens`` is the whole prompt, of which
    ``cached_tokens`` were read from the provider's cache and ``cache_write_tokens`` written
    to it; ``reasoning_tokens`` are part of ``output_tokens``."""

    kind: Literal["usage"] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None
    """This response's price; ``None`` when the price table does not know the model."""


class ErrorEvent(Event):
    kind: Literal["error"] = "error"
    message: str
    title: str = "error"


class Notice(Event):
    kind: Literal["notice"] = "notice"
    message: str
    level: Literal["info", "warning"] = "info"


class PaneSnapshot(Event):
    """One frame of a tmux pane's screen for the mirror: what the person would see attached.

    ``lines`` keep their SGR escapes (colours, bold), one string per screen row; the cursor is
    0-based within the visible screen. Frames replace each other: a reader that falls behind
    needs only the latest per pane.
    """

    kind: Literal["pane_snapshot"] = "pane_snapshot"
    pane_id: str
    actor: str
    """Where the pane lives, e.g. ``local/tmux:%3``."""
    lines: list[str] = Field(default_factory=list)
    cursor_x: int = 0
    cursor_y: int = 0
    width: int = 0
    height: int = 0
    sandbox: str | None = None
    """Which sandbox the pane's shell runs in (``sandbox: read-only, no network``,
    ``OUTSIDE the sandbox``); None where agent-tui has no sandbox on that target."""
    gone: str | None = None
    """Why the pane is no more (its session or tmux server went away); no ``lines`` then: the
    mirror keeps the last frame it had and says so."""


class FleetHostState(Event):
    """One fleet host as the host list shows it: replaced by the next of the same host."""

    kind: Literal["fleet_host"] = "fleet_host"
    host: str
    address: str = ""
    groups: list[str] = Field(default_factory=list)
    state: Literal["idle", "connecting", "ready", "running", "unreachable", "blocked", "closed"] = (
        "idle"
    )
    last_exit: int | None = None
    running: str | None = None
    """The command running there now."""
    guard: Literal["kernel", "rater", "unknown"] = "unknown"
    """What stands behind its approval mode: ``kernel`` (bwrap there), or only the ``rater``."""
    detail: str = ""
    """Why it is unreachable, what its sandbox is, its last notice."""


class FanoutHostUpdate(Event):
    """One host's part of a fan-out call: queued, running, then how it ended."""

    kind: Literal["fanout_host"] = "fanout_host"
    tool_call_id: str
    host: str
    status: Literal[
        "queued", "running", "ok", "failed", "timeout", "dropped", "refused", "cancelled"
    ]
    exit_code: int | None = None
    duration_ms: float = 0.0
    output: str = ""
    """Its output, bounded (head and tail), once it ended; the reason when refused."""
    full_output_path: str | None = None
    sandbox: str | None = None


class AgentNotice(Event):
    """A message the agent sends the person mid-task (``send_user_message``): shown in chat,
    never a model turn of its own."""

    kind: Literal["agent_notice"] = "agent_notice"
    message: str
    tool_call_id: str = ""


class TodoItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    active_form: str = ""
    """The item worded as what is happening now ("Running the tests")."""


class TodoListUpdated(Event):
    """The agent's whole task list after a ``todo_write``: each event replaces the last."""

    kind: Literal["todo_list"] = "todo_list"
    items: list[TodoItem] = Field(default_factory=list)


class ScheduledJobFinished(Event):
    """A cron job ran: a shell command's output or an agent prompt's answer."""

    kind: Literal["scheduled_job"] = "scheduled_job"
    job_id: str
    name: str = ""
    job_kind: Literal["command", "prompt"] = "command"
    ok: bool = True
    output: str = ""
    """The result, cut to a screenful; the job's full output is in the cron database."""
    next_run: float | None = None
    """Unix seconds of the next run, or None once a one-shot has run."""


class Compacted(Event):
    """The conversation sent to the model was made smaller; the transcript still has it all."""

    kind: Literal["compacted"] = "compacted"
    stage: Literal["stubs", "summary"]
    """``stubs``: old tool outputs became one-line pointers to their saved files;
    ``summary``: older turns were summarised by the model."""
    reason: Literal["auto", "overflow", "manual"] = "auto"
    """Near the window's limit, after a context-length error, or ``/compact``."""
    tokens_before: int = 0
    tokens_after: int = 0
    window: int = 0
    stubbed: int = 0
    summarized: int = 0
    """Messages replaced by the summary."""
    kept_user: int = 0
    """The person's own messages, kept word for word."""
    kept_recent: int = 0
    """Messages of the last turns, kept word for word."""
    files: list[str] = Field(default_factory=list)
    todo: bool = False
    """Whether the latest task list was carried over."""
    focus: str = ""
    fallback: bool = False
    """The model's summary failed; a list of the calls made stands in for it."""


AnyEvent = Annotated[
    TurnStarted
    | TurnEnded
    | UserMessage
    | AssistantTextDelta
    | AssistantMessage
    | ToolCallRequested
    | ToolCallStarted
    | ToolOutputChunk
    | ToolProgress
    | ToolCallSkipped
    | ToolCallCompleted
    | ApprovalRequested
    | ApprovalResolved
    | ApprovalsWaiting
    | Usage
    | ErrorEvent
    | Notice
    | PaneSnapshot
    | FleetHostState
    | FanoutHostUpdate
    | AgentNotice
    | TodoListUpdated
    | ScheduledJobFinished
    | Compacted,
    Field(discriminator="kind"),
]


@functools.cache
def event_adapter() -> TypeAdapter[AnyEvent]:
    """Built on first use: it builds every event's validator (~20 ms), which only reading a
    saved session needs, not a run's start."""
    return TypeAdapter(AnyEvent)


def parse_event(line: str | bytes) -> AnyEvent:
    """Read back one JSON line written by ``event.model_dump_json()``."""
    return event_adapter().validate_json(line)

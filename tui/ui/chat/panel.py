"""The conversation: user messages, the assistant's streamed Markdown, notices and errors.

Streaming goes through ``Markdown.get_stream`` so a fast model becomes a few appends per
frame, not one per token. The panel follows the tail only while the user is at the bottom
(Textual's anchor is released by scrolling up and restored by scrolling back down), and it is
pruned with hysteresis: above ``PRUNE_ABOVE`` lines (or ``MAX_ENTRIES`` entries: a thousand
one-line entries cost a relayout as much as a thousand long ones) the oldest entries go until
``PRUNE_TO`` lines and ``KEEP_ENTRIES`` entries remain, at most once per frame, so a long
session never grows without bound.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.markup import escape
from textual.widget import Widget
from textual.widgets import Static

from tui.safe_text import dumps_or, loads_or, one_line
from tui.ui.tail_follow import TailFollowing

if TYPE_CHECKING:
    from textual.widgets import Markdown
    from textual.widgets._markdown import MarkdownStream

    from tui.events import (
        AgentNotice,
        AssistantMessage,
        AssistantTextDelta,
        Compacted,
        ErrorEvent,
        Event,
        Notice,
        ScheduledJobFinished,
        ToolCallRequested,
        TurnEnded,
        UserMessage,
    )

PRUNE_ABOVE = 2500
PRUNE_TO = 1500
MAX_ENTRIES = 600
KEEP_ENTRIES = 400
MAX_THINKING_CHARS = 20_000


def title_text(text: str) -> str:
    """A border title from someone else's text: Textual reads titles as markup, so brackets
    are escaped, and controls are spelled out on one line."""
    return escape(one_line(text, 200))


class UserBubble(Static):
    """What the person typed (``-steering`` when typed while the agent worked)."""


_BUBBLE: type[Markdown] | None = None


def AssistantBubble(markdown: str = "", *, classes: str = "") -> Markdown:
    """The assistant's answer, streamed: a ``Markdown`` subclass made on first use.

    Markdown (and its parser) is imported only when the first answer arrives, so the first
    frame of the app does not pay for it.
    """
    global _BUBBLE
    if _BUBBLE is None:
        from textual.widgets import Markdown

        class AssistantBubble(Markdown):
            """The assistant's answer, streamed."""

        _BUBBLE = AssistantBubble
    return _BUBBLE(markdown, classes=classes)


class NoticeLine(Static):
    """A one-line note: ``-warning`` or ``-info``."""


class ToolRef(Static):
    """One line in the conversation where the model called a tool (the block is on the right)."""


class ErrorBox(Static):
    """An error the person should read (provider failures, crashed workers)."""


class SubagentNote(Static):
    """What a sub-agent answered, tagged with its loop id."""


class AgentNote(Static):
    """A message the agent sent mid-task (``send_user_message``)."""


class InfoBox(Static):
    """Plain text a command printed (``/mcp``, ``/cron``): wrapped, never clipped."""


class Banner(Static):
    """The first thing in the chat: what this session is, or what to set when it cannot talk."""


def compaction_line(event: Compacted) -> str:
    """The chat marker where the conversation sent to the model was compacted: what happened,
    and what was kept (the saved session keeps everything either way)."""
    why = {"auto": "near the window's limit", "overflow": "after a context-length error"}.get(
        event.reason, "on request"
    )
    parts = [f"── compacted {why}: ~{event.tokens_before:,} → ~{event.tokens_after:,} tokens"]
    if event.window:
        parts[0] += f" of {event.window:,}"
    kept = []
    if event.stubbed:
        kept.append(f"{event.stubbed} old outputs now point to their saved files")
    if event.stage == "summary":
        summary = "a plain list of the calls" if event.fallback else "a summary"
        kept.append(f"{event.summarized} older messages replaced by {summary}")
        kept.append(f"kept word for word: your {event.kept_user} messages")
        kept.append(f"the last {event.kept_recent} messages")
        if event.todo:
            kept.append("the task list")
        if event.files:
            kept.append(f"{len(event.files)} files touched")
    if event.focus:
        kept.append(f"focus: {event.focus}")
    return "; ".join(parts + kept)


def scheduled_line(event: ScheduledJobFinished) -> str:
    """``↻ scheduled command backup done: 3 files copied``: the first line that says something
    (a successful command's ``exit code: 0`` does not)."""
    lines = [line.strip() for line in event.output.splitlines() if line.strip()]
    if event.ok and lines and lines[0] == "exit code: 0":
        lines = lines[1:]
    state = "done" if event.ok else "failed"
    head = f"↻ scheduled {event.job_kind} {event.name or event.job_id} {state}"
    return head + (f": {lines[0][:200]}" if lines else "")


class ChatPanel(TailFollowing):
    """The chat column. Fed by ``apply`` with one frame's events at a time."""

    can_focus = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._current: Markdown | None = None
        self._stream: MarkdownStream | None = None
        self._streamed_text = False
        self._prune_scheduled = False
        self.pruned = 0
        """Entries removed by pruning so far."""
        self._table: dict[type[Event], Callable[[Any], Awaitable[None]]] | None = None
        self._delta_type: type[AssistantTextDelta] | None = None

    # -- feeding ---------------------------------------------------------------------------

    async def apply(self, events: list[Event]) -> None:
        """Show one frame's events; consecutive text deltas become one stream write."""
        delta, handlers = self._handlers()
        pending: list[str] = []
        for event in events:
            if isinstance(event, delta) and event.loop_id == "main":
                pending.append(event.text)
                continue
            if pending:
                await self.assistant_delta("".join(pending))
                pending = []
            handler = handlers.get(type(event))
            if handler is not None:
                await handler(event)
        if pending:
            await self.assistant_delta("".join(pending))
        self.content_changed()
        self._schedule_prune()

    def _handlers(
        self,
    ) -> tuple[type[AssistantTextDelta], dict[type[Event], Callable[[Any], Awaitable[None]]]]:
        """The text delta's class (streamed, not handled one by one) and one handler per other
        event class the chat shows. Made on the first events: the UI's first frame never waits
        for the event classes (or pydantic) to be imported."""
        if self._table is None or self._delta_type is None:
            from tui.events import (
                AgentNotice,
                AssistantMessage,
                AssistantTextDelta,
                Compacted,
                ErrorEvent,
                Notice,
                ScheduledJobFinished,
                ToolCallRequested,
                TurnEnded,
                UserMessage,
            )

            self._delta_type = AssistantTextDelta
            self._table = {
                UserMessage: self._user_message,
                AssistantMessage: self._assistant_message,
                ToolCallRequested: self._tool_requested,
                ErrorEvent: self._error,
                Notice: self._notice,
                AgentNotice: self._agent_notice,
                Compacted: self._compacted,
                ScheduledJobFinished: self._scheduled_job,
                TurnEnded: self._turn_ended,
            }
        return self._delta_type, self._table

    async def _user_message(self, event: UserMessage) -> None:
        if event.loop_id == "main":
            await self.end_stream()
            self.add_user(event.text, steering=event.steering)

    async def _assistant_message(self, event: AssistantMessage) -> None:
        if event.loop_id == "main":
            await self.assistant_final(event.text)
            if event.thinking:
                self.add_thinking(event.thinking)
        elif event.text.strip():
            self.add_subagent(event.loop_id, event.text)

    async def _tool_requested(self, event: ToolCallRequested) -> None:
        if event.loop_id == "main":
            by_user = event.tool_call_id.startswith("user-")
            self.add_tool_ref(event.tool_name, event.arguments, by_user=by_user)

    async def _error(self, event: ErrorEvent) -> None:
        await self.end_stream()
        self.add_error(event.title, event.message)

    async def _notice(self, event: Notice) -> None:
        self.add_notice(event.message, level=event.level)

    async def _agent_notice(self, event: AgentNotice) -> None:
        self.add_agent_note(event.message, loop_id=event.loop_id)

    async def _compacted(self, event: Compacted) -> None:
        if event.loop_id == "main":
            await self.end_stream()
            self.add_notice(compaction_line(event), level="info")

    async def _scheduled_job(self, event: ScheduledJobFinished) -> None:
        self.add_notice(scheduled_line(event), level="info" if event.ok else "warning")

    async def _turn_ended(self, event: TurnEnded) -> None:
        if event.loop_id == "main":
            await self.end_stream()
            if event.reason == "max_turns":
                self.add_notice("the turn stopped at max_turns", level="warning")

    # -- entries ---------------------------------------------------------------------------

    def _add(self, widget: Widget) -> Widget:
        self.mount(widget)
        self.content_changed()
        return widget

    def add_banner(self, text: Text | str, *, warning: bool = False) -> Banner:
        banner = Banner(text, classes="-warning" if warning else "")
        self._add(banner)
        return banner

    def add_user(self, text: str, *, steering: bool = False) -> UserBubble:
        body = Text(text)
        bubble = UserBubble(body, classes="-steering" if steering else "")
        bubble.border_title = "you · steering" if steering else "you"
        self._add(bubble)
        return bubble

    def add_tool_ref(self, tool_name: str, arguments: str, *, by_user: bool = False) -> ToolRef:
        """``⚙ run_shell  git status``: where the call happened in the story."""
        summary = arguments
        parsed = loads_or(arguments) if arguments.strip() else {}
        if isinstance(parsed, dict):
            first = parsed.get("command") or next(iter(parsed.values()), "")
            summary = first if isinstance(first, str) else dumps_or(first)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("⚙ ", "dim")
        if by_user:
            text.append("you ran ", "dim")
        text.append(tool_name, "bold")
        text.append("  " + " ".join(summary.split())[:300])
        ref = ToolRef(text)
        self._add(ref)
        return ref

    def add_notice(self, message: str, *, level: str = "info") -> NoticeLine:
        icon = "▲" if level == "warning" else "•"
        line = NoticeLine(Text(f"{icon} {message}"), classes=f"-{level}")
        self._add(line)
        return line

    def add_agent_note(self, message: str, *, loop_id: str = "main") -> AgentNote:
        note = AgentNote(Text(message))
        note.border_title = "» agent" if loop_id == "main" else title_text(f"» sub-agent {loop_id}")
        self._add(note)
        return note

    def add_error(self, title: str, message: str) -> ErrorBox:
        box = ErrorBox(Text(message))
        box.border_title = title_text(title)
        self._add(box)
        return box

    def add_subagent(self, loop_id: str, text: str) -> SubagentNote:
        short = text.strip()
        if len(short) > 600:
            short = short[:600] + " …"
        note = SubagentNote(Text(short))
        note.border_title = title_text(f"↳ sub-agent {loop_id.rsplit('.', 1)[-1]}")
        self._add(note)
        return note

    def add_info(self, title: str, text: str) -> InfoBox:
        box = InfoBox(Text(text))
        box.border_title = title_text(title)
        self._add(box)
        return box

    def add_thinking(self, text: str) -> Widget:
        """The model's reasoning for the message above, collapsed: there if wanted, never in
        the way. Bounded like every entry."""
        from textual.widgets import Collapsible

        shown = text if len(text) <= MAX_THINKING_CHARS else text[:MAX_THINKING_CHARS] + " …"
        lines = text.count("\n") + 1
        box = Collapsible(
            Static(Text(shown, style="dim italic")),
            title=f"thinking · {lines} line{'s' if lines != 1 else ''}",
            collapsed=True,
            classes="thinking",
        )
        return self._add(box)

    def add_markdown(self, markdown: str) -> Markdown:
        bubble = AssistantBubble(markdown, classes="-system")
        self._add(bubble)
        return bubble

    # -- streaming -------------------------------------------------------------------------

    async def assistant_delta(self, text: str) -> None:
        if not text:
            return
        if self._current is None:
            self._current = AssistantBubble("")
            await self.mount(self._current)
            self.content_changed()
            self._stream = self._current.get_stream(self._current)
            self._streamed_text = False
        assert self._stream is not None
        self._streamed_text = True
        await self._stream.write(text)

    async def assistant_final(self, text: str) -> None:
        """The complete answer: closes the stream, or shows it whole when nothing streamed."""
        if self._current is not None and self._streamed_text:
            await self.end_stream()
            return
        await self.end_stream()
        if text.strip():
            self._add(AssistantBubble(text))

    async def end_stream(self) -> None:
        stream, self._stream, self._current = self._stream, None, None
        if stream is not None:
            await stream.stop()

    @property
    def streaming(self) -> bool:
        return self._stream is not None

    # -- bounds ----------------------------------------------------------------------------

    def content_resized(self) -> None:
        self._schedule_prune()

    def _schedule_prune(self) -> None:
        too_big = self.virtual_size.height > PRUNE_ABOVE or len(self.children) > MAX_ENTRIES
        if not self._prune_scheduled and too_big:
            self._prune_scheduled = True
            self.call_after_refresh(self.prune)

    def prune(self) -> int:
        """Drop the oldest entries when above ``PRUNE_ABOVE`` lines, down to ``PRUNE_TO``."""
        self._prune_scheduled = False
        total = sum(child.outer_size.height for child in self.children)
        entries = len(self.children)
        if total <= PRUNE_ABOVE and entries <= MAX_ENTRIES:
            return 0
        doomed = []
        for child in self.children:
            if (total <= PRUNE_TO and entries <= KEEP_ENTRIES) or child is self._current:
                break
            total -= child.outer_size.height
            entries -= 1
            doomed.append(child)
        if doomed:
            self.remove_children(doomed)
            self.pruned += len(doomed)
        return len(doomed)

    def clear_entries(self) -> None:
        self._current = None
        self._stream = None
        self.remove_children()
        self.reset_follow()


if __name__ == "__main__":
    from textual.app import App, ComposeResult

    from tui.locations import styles_dir

    class _Demo(App[None]):
        CSS_PATH = [str(styles_dir() / "app.tcss"), str(styles_dir() / "chat.tcss")]

        def compose(self) -> ComposeResult:
            yield ChatPanel()

        async def on_mount(self) -> None:
            chat = self.query_one(ChatPanel)
            chat.add_user("Why is the build red?")
            await chat.assistant_delta("Let me **look** at the CI log.\n\n- step one\n- step two")
            await chat.assistant_final("")
            chat.add_notice("cancelled by the user", level="warning")
            chat.add_error("Model provider error", "HTTP 500 from the server")

    _Demo().run()

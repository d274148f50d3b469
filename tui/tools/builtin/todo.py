"""``todo_write`` and ``send_user_message``: the agent talking to the person, not the world.

Neither touches anything outside the session, so both are read-only and never asked about;
what they produce is an event the UI shows (the task list, a notice in chat).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from tui.errors import InvalidArguments
from tui.events import AgentNotice, TodoItem, TodoListUpdated
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult

MAX_TODOS = 100
STATUS_MARK = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


class TodoEntry(ToolParams):
    content: str = Field(min_length=1, max_length=500, description="The task, imperative form.")
    status: Literal["pending", "in_progress", "completed"] = Field(
        default="pending", description="pending, in_progress (one at a time) or completed."
    )
    active_form: str = Field(
        default="",
        max_length=500,
        description='The task as what is happening now, e.g. "Running the tests".',
    )


class TodoWriteParams(ToolParams):
    todos: list[TodoEntry] = Field(
        max_length=MAX_TODOS,
        description="The WHOLE list, every item, in order: it replaces the previous list.",
    )

    @field_validator("todos")
    @classmethod
    def _one_in_progress(cls, todos: list[TodoEntry]) -> list[TodoEntry]:
        active = [t.content for t in todos if t.status == "in_progress"]
        if len(active) > 1:
            raise ValueError(
                f"{len(active)} items are in_progress ({', '.join(active)[:200]}); keep exactly "
                "one in progress and mark the others pending or completed"
            )
        return todos


class TodoWriteTool(Tool[TodoWriteParams]):
    name = "todo_write"
    label = "Update tasks"
    Params = TodoWriteParams
    permission = PermissionMode.READ_ONLY
    description = """Replace the task list shown to the person with this one.

Send the whole list every time, with each item's status. Keep exactly one item in_progress
while working, and mark items completed as soon as they are done, not in batches.
When to use: work with three or more distinct steps; the person gave several tasks; to show
progress on a long job.
When NOT to use: a single quick step; to talk to the person (use send_user_message).
Disambiguation: the list is for the person to follow; it does not run anything.
Examples: {"todos": [{"content": "Reproduce the failing test", "status": "completed"},
{"content": "Fix the parser", "status": "in_progress", "active_form": "Fixing the parser"},
{"content": "Run the full suite", "status": "pending"}]}"""

    def __init__(self) -> None:
        self.items: list[TodoItem] = []

    def access(self, params: TodoWriteParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY, acting=False)

    async def execute(self, params: TodoWriteParams, ctx: ToolContext) -> ToolResult:
        self.items = [
            TodoItem(content=t.content, status=t.status, active_form=t.active_form)
            for t in params.todos
        ]
        ctx.on_update(TodoListUpdated(items=self.items, loop_id=ctx.loop_id))
        done = sum(item.status == "completed" for item in self.items)
        lines = [f"{STATUS_MARK[item.status]} {item.content}" for item in self.items]
        summary = f"Task list updated: {done}/{len(self.items)} completed."
        return ToolResult("\n".join([summary, *lines]), {"todos": len(self.items)})


class SendUserMessageParams(ToolParams):
    message: str = Field(
        min_length=1, max_length=4000, description="What to tell the person, in a few lines."
    )


class SendUserMessageTool(Tool[SendUserMessageParams]):
    name = "send_user_message"
    label = "Message"
    Params = SendUserMessageParams
    permission = PermissionMode.READ_ONLY
    description = """Show the person a short message in the chat now, while you keep working.

It does not end your turn and the person does not answer it.
When to use: a status update during a long task; a finding the person should see before the
final answer; a warning about something you noticed.
When NOT to use: your final answer (just answer); asking a question you need answered (end
your turn with the question instead).
Disambiguation: todo_write maintains the task list; this sends free text once.
Examples: {"message": "The build takes about 10 minutes; I'll check the logs meanwhile."}"""

    def access(self, params: SendUserMessageParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY, acting=False)

    async def execute(self, params: SendUserMessageParams, ctx: ToolContext) -> ToolResult:
        text = params.message.strip()
        if not text:
            raise InvalidArguments("message is blank; send some text or skip the call")
        ctx.on_update(AgentNotice(message=text, tool_call_id=ctx.tool_call_id, loop_id=ctx.loop_id))
        return ToolResult("Shown to the person.", {"chars": len(text)})


def todo_tools() -> list[Tool[Any]]:
    return [TodoWriteTool(), SendUserMessageTool()]

"""The agent's task list (``todo_write``), kept in view above the prompt while it has items."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from tui.events import TodoItem

MARKS = {"pending": ("○", "dim"), "in_progress": ("◐", "bold"), "completed": ("●", "green")}


class TodoList(Static):
    """Each ``TodoListUpdated`` replaces the whole list; hidden while it is empty."""

    can_focus = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.items: list[TodoItem] = []

    def show(self, items: list[TodoItem]) -> None:
        self.items = list(items)
        done = sum(item.status == "completed" for item in self.items)
        self.border_title = f"tasks {done}/{len(self.items)}"
        text = Text(no_wrap=True, overflow="ellipsis")
        for index, item in enumerate(self.items):
            mark, style = MARKS[item.status]
            if index:
                text.append("\n")
            label = item.active_form if item.status == "in_progress" and item.active_form else ""
            text.append(f"{mark} ", style)
            text.append(label or item.content, "strike dim" if item.status == "completed" else "")
        self.update(text)
        self.set_class(bool(self.items), "-shown")

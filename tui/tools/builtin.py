"""The built-in tool set, in the order the model sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.tools.base import Tool
from tui.tools.clock import TimeTool
from tui.tools.files import file_tools
from tui.tools.memory import memory_tools
from tui.tools.search import search_tools
from tui.tools.shell import RunShellTool
from tui.tools.sleep import sleep_tools
from tui.tools.todo import todo_tools
from tui.tools.web import web_tools

if TYPE_CHECKING:
    from tui.exec.backend import ExecutionBackend


def builtin_tools(backend: ExecutionBackend | None = None) -> list[Tool[Any]]:
    """The tools for ``backend``: the tmux tools only where the backend has panes."""
    tools: list[Tool[Any]] = [
        RunShellTool(),
        *file_tools(),
        *search_tools(),
        TimeTool(),
        *memory_tools(),
        *web_tools(),
        *sleep_tools(),
        *todo_tools(),
    ]
    if backend is not None and backend.SUPPORTS_TMUX:
        from tui.tools.tmux import tmux_tools

        tools.extend(tmux_tools())
    return tools

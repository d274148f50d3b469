"""The built-in tool set, in the order the model sees it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.locations import config_dir
from tui.tools.base import Tool
from tui.tools.builtin.browser.tools import browser_tools
from tui.tools.builtin.clock import TimeTool
from tui.tools.builtin.files.tools import file_tools
from tui.tools.builtin.memory.tools import MemoryScope, memory_tools
from tui.tools.builtin.notebook import notebook_tools
from tui.tools.builtin.python_repl.tools import python_repl_tools
from tui.tools.builtin.search.glob_search import GlobSearchTool
from tui.tools.builtin.search.grep_search import GrepSearchTool
from tui.tools.builtin.shell.tools import RunShellTool
from tui.tools.builtin.skill import skill_tools
from tui.tools.builtin.sleep import sleep_tools
from tui.tools.builtin.todo import todo_tools
from tui.tools.builtin.web.tools import web_tools

if TYPE_CHECKING:
    from tui.exec.backend import ExecutionBackend


def user_skills_dir() -> Path:
    return config_dir() / "skills"


def claude_skills_dir() -> Path:
    """The person's Claude Code skills, offered too."""
    return Path.home() / ".claude" / "skills"


def builtin_tools(
    backend: ExecutionBackend | None = None,
    workspace: Path | None = None,
    memory: MemoryScope | None = None,
) -> list[Tool[Any]]:
    """The tools for ``backend``: the tmux tools only where the backend has panes; ``skill``
    reads the workspace's skills when ``workspace`` is on this machine, the user's always;
    ``memory`` says which memory notes go to (None: the global one)."""
    tools: list[Tool[Any]] = [
        RunShellTool(),
        *file_tools(),
        GlobSearchTool(),
        GrepSearchTool(),
        TimeTool(),
        *memory_tools(scope=memory),
        *web_tools(),
        *browser_tools(),
        *sleep_tools(),
        *todo_tools(),
        *notebook_tools(),
        *python_repl_tools(),
    ]
    tools.extend(skill_tools(workspace, user_skills_dir(), (claude_skills_dir(),)))
    from tui.exec.tmux_pane import tmux_pane

    if backend is not None and tmux_pane(backend) is not None:
        from tui.tools.builtin.tmux import tmux_tools

        tools.extend(tmux_tools())
    return tools

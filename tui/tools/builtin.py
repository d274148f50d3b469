"""The built-in tool set, in the order the model sees it."""

from __future__ import annotations

from typing import Any

from tui.tools.base import Tool
from tui.tools.clock import TimeTool
from tui.tools.files import file_tools
from tui.tools.search import search_tools
from tui.tools.shell import RunShellTool


def builtin_tools() -> list[Tool[Any]]:
    return [RunShellTool(), *file_tools(), *search_tools(), TimeTool()]

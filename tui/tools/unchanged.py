"""Buddy's answer to polling a pane that has not moved: say so instead of sending it again.

A model waiting on a command often captures the same pane with the same options again and
again; each unchanged screen costs context and teaches it nothing. As Buddy does, the last
successful capture is remembered (its options, less ``why`` and ``delay``, and its text): a
capture with the same options returning the same text gets a short notice instead. Any call
that may change a pane (a command, keys, a pane made or killed) forgets it, so a notice never
stands for a screen from before something happened. The person still sees the whole capture;
only the model's copy is replaced.
"""

from __future__ import annotations

from typing import Any

from tui.tools.base import Tool, ToolParams
from tui.tools.result import ToolResult

UNCHANGED = (
    "tmux pane snapshot unchanged from the previous successful capture for the same pane/range. "
    "You are repeating the same tmux_capture_pane operation and nothing has changed. Do not "
    "poll again immediately with identical arguments; wait, change the selector/range, or take "
    "a different action first."
)
"""Buddy's words, so a model or a prompt written for Buddy recognises them."""


class UnchangedCaptures:
    """The last successful look of one registry (one loop), and what followed it."""

    def __init__(self) -> None:
        self._last: tuple[str, str, str] | None = None
        """``(tool name, key, result text)`` of the last successful capture."""

    def after(self, tool: Tool[Any], params: ToolParams, result: ToolResult) -> ToolResult:
        """The result the model should read for this call (the same one, or the notice)."""
        key = tool.unchanged_key(params)
        if key is None:
            if tool.changes_panes:
                self._last = None
            return result
        if result.is_error or not isinstance(result.content, str):
            self._last = None
            return result
        seen = (tool.name, key, result.content)
        repeated = self._last == seen
        self._last = seen
        if not repeated:
            return result
        return ToolResult(UNCHANGED, dict(result.details, unchanged=True), False)

"""The Textual messages of the app.

There is exactly one message that carries the agent's story into the UI, ``BusBatch``: every
bus event of one frame, in order. Panels never poll and never subscribe on their own; the
others here carry the user's intent from a widget up to the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from tui.events import Event


@dataclass
class BusBatch(Message):
    """Every bus event that arrived during one frame (about 1/60 s), oldest first."""

    events: list[Event]
    """The events, in publish order."""
    dropped: int = 0
    """How many output chunks the bus has dropped for this subscriber so far (it fell behind)."""
    replay: bool = False
    """True for events read back from a saved session: shown, never acted on (no approvals)."""


@dataclass
class PromptSubmitted(Message):
    """The user pressed Enter in the prompt."""

    text: str
    """What they typed, stripped of surrounding blank lines."""


@dataclass
class ToolBlockAction(Message):
    """A tool block asks the app to open its full output or copy part of it."""

    tool_call_id: str
    """Which call."""
    action: str = "pager"
    """``pager``, ``copy_command`` or ``copy_output``."""

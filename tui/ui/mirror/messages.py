"""The messages the pane mirror sends up to the app while the person holds the pane.

Kept beside the mirror (not in ``tui/ui/messages.py``) because they carry the mirror's own
key vocabulary (``Typed``): the app's message module then needs nothing from the mirror.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from tui.ui.mirror.keys import Typed


@dataclass
class PaneKeys(Message):
    """Keys the user typed while holding the mirrored pane's keyboard, in tmux's vocabulary."""

    keys: list[Typed] = field(default_factory=list)
    """Text, tmux key names (``Enter``, ``C-c``) and pastes, in the order they were typed."""


@dataclass
class PaneRelease(Message):
    """The user gave the pane's keyboard back to the agent."""

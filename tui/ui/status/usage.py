"""What the status bar counts: tokens and cost of the session, and whether a turn is on.

Fed by the event router (``Usage``, the main loop's turn boundaries) and shown once a frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.events import Usage
    from tui.session_api import SessionAPI
    from tui.ui.status.bar import StatusBar


class UsageMeter:
    """Tokens in, out and cached, the last main request's prompt, the cost, the turn."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_tokens = 0
        self.context_tokens = 0
        """The last main request's prompt: how full the model's window is."""
        self.cost: float | None = None
        """Dollars so far; None while no request had a known price."""
        self.turn_active = False
        """The main loop's turn started (or a prompt was sent) and has not ended."""

    def add(self, event: Usage) -> None:
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens
        self.cached_tokens += event.cached_tokens
        if event.loop_id == "main":
            self.context_tokens = event.input_tokens
        if event.cost_usd is not None:
            self.cost = (self.cost or 0.0) + event.cost_usd

    def reset(self) -> None:
        """A new session: its own counts."""
        self.input_tokens = self.output_tokens = self.cached_tokens = self.context_tokens = 0
        self.cost = None

    def show(self, status: StatusBar, session: SessionAPI, running_tools: int) -> None:
        status.set(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            context_tokens=self.context_tokens,
            context_window=session.context_window,
            cost_usd=self.cost,
            running_tools=running_tools,
            working=self.turn_active or session.loop_running,
        )

"""What the app says to the terminal itself, beside drawing: clipboard writes and notices.

One object so the app only forwards to it: the OSC 52 writer, the clock that tells a long turn
from a short one (and remembers the last answer for ``Ctrl+Y``), and the notifier that rings
while the terminal is away. The app hands it a way to write to the terminal, a toast and
"is the terminal focused?"; nothing here draws or imports the app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

from tui.ui.clipboard import Clipboard, block_command, block_output, inside_tmux
from tui.ui.notify import Notifier, TurnClock

if TYPE_CHECKING:
    from tui.session_api import NotifyChoice
    from tui.ui.tools.block import ToolBlock


class Attention:
    """Copy and notify for one app.

    Args:
        write: Raw bytes to the terminal (the app's driver).
        toast: ``(message, severity)`` shown to the person.
        focused: Whether the terminal has focus now (Textual's ``app_focus``).
        monotonic: Seconds, to time turns.
    """

    def __init__(
        self,
        write: Callable[[str], None],
        toast: Callable[[str, str], None],
        focused: Callable[[], bool],
        monotonic: Callable[[], float],
    ) -> None:
        self.write = write
        self.focused = focused
        self.copier = Clipboard(write, toast, tmux=inside_tmux())
        self.turn_clock = TurnClock(monotonic)
        self.notifier: Notifier | None = None
        """Set from ``[notify]`` once a session is attached; None rings nothing."""

    def configure(self, notify: NotifyChoice) -> None:
        """``[notify]`` settings for the session now attached."""
        self.notifier = Notifier(self.write, self.focused, **asdict(notify))

    def copy(self, text: str, what: str = "") -> bool:
        return self.copier.copy(text, what=what)

    def copy_answer(self) -> bool:
        return self.copier.copy(self.turn_clock.last_answer, what="the last answer")

    async def copy_block(self, block: ToolBlock, action: str) -> bool:
        """``copy_command`` or ``copy_output`` of one tool block."""
        if action == "copy_command":
            return self.copier.copy(block_command(block), what="the command")
        return self.copier.copy(await block_output(block), what="the output")

    def approval_waiting(self, tool_name: str) -> None:
        if self.notifier is not None:
            self.notifier.approval_waiting(tool_name)

    # -- the main loop's turns, as the event router sees them (live events only) -----------

    def turn_began(self) -> None:
        self.turn_clock.begin()

    def answered(self, text: str) -> None:
        """The last answer, for ``Ctrl+Y``."""
        self.turn_clock.answered(text)

    def turn_ended(self, final_text: str, reason: str) -> None:
        """A notice when a long turn ends while the terminal is away."""
        length = self.turn_clock.end(final_text)
        if length is not None and self.notifier is not None:
            self.notifier.turn_ended(length, reason)


__all__ = ["Attention"]

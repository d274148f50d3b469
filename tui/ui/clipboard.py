"""Copying to the system clipboard through the terminal (OSC 52), so it works over SSH too.

The app captures the mouse, so the terminal's own selection needs Shift-drag; instead the app
selects text itself (Textual's selection in the chat, tool blocks and pager) and hands the text
to the terminal with OSC 52 — the one way that reaches the clipboard of the machine the person
sits at, whether the app runs locally, over SSH or in a container.

Inside tmux (``$TMUX`` set) the plain sequence only reaches the outer terminal when tmux has
``set-clipboard on``; its default (``external``) drops it. The DCS passthrough wrapper
(``\\ePtmux;…\\e\\\\``) reaches it when ``allow-passthrough on`` is set instead. We write both,
so either setting works; with both set the clipboard gets the same text twice, which is harmless.

The text travels base64-encoded, so nothing in it (a hostile repo's file, a remote host's
output) can end the sequence early or smuggle an escape of its own into the terminal.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.ui.tools.block import ToolBlock

MAX_COPY_CHARS = 1_000_000
"""Above this, copying is refused: terminals cap OSC 52 payloads (often ~100 KB to a few MB)
and would silently truncate or drop it; the pager and the saved output file hold the rest."""


def osc52(text: str, *, tmux: bool) -> str:
    """The escape sequence(s) that put ``text`` on the clipboard.

    Args:
        text: What to copy.
        tmux: Also write the tmux passthrough form (see the module docstring).
    """
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    plain = f"\x1b]52;c;{payload}\a"
    if not tmux:
        return plain
    # Inside the passthrough, every ESC of the wrapped sequence is doubled.
    return plain + "\x1bPtmux;" + plain.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def inside_tmux(environ: Mapping[str, str] | None = None) -> bool:
    return bool((os.environ if environ is None else environ).get("TMUX"))


@dataclass
class Clipboard:
    """Writes OSC 52 through ``write`` and says what happened through ``notice``."""

    write: Callable[[str], None]
    """The terminal's output (the app's driver); never a file a person cannot see."""
    notice: Callable[[str, str], None]
    """``(message, severity)``: a toast for the person."""
    tmux: bool = False

    def copy(self, text: str, *, what: str = "") -> bool:
        """Copy ``text``; False (and a warning) when it is empty or too large to send."""
        label = f" of {what}" if what else ""
        if not text:
            self.notice(f"nothing to copy{label}", "warning")
            return False
        if len(text) > MAX_COPY_CHARS:
            self.notice(
                f"not copied: {len(text):,} characters{label} is more than a terminal "
                f"clipboard takes ({MAX_COPY_CHARS:,}); the pager (o) shows where it is saved",
                "warning",
            )
            return False
        self.write(osc52(text, tmux=self.tmux))
        plural = "" if len(text) == 1 else "s"
        self.notice(f"copied {len(text):,} character{plural}{label}", "information")
        return True


def block_command(block: ToolBlock) -> str:
    """The call's command as it ran (a shell line), else its arguments in full."""
    from tui.ui.tools.block import describe_arguments

    state = block.state
    if state.command is not None:
        return state.command
    return describe_arguments(state.arguments, full=True)


def _read_bounded(path: Path) -> str:
    with path.open("rb") as handle:
        # A UTF-8 character is at most 4 bytes: one more than that many means "too large".
        data = handle.read(MAX_COPY_CHARS * 4 + 1)
    return data.decode("utf-8", errors="replace")


async def block_output(block: ToolBlock) -> str:
    """The call's whole output: from memory, or the saved file read in a thread, bounded."""
    text, path, _ = block.output_source()
    if path is None:
        return text
    try:
        return await asyncio.to_thread(_read_bounded, path)
    except OSError:
        return block.state.output_text()  # the saved file went away: the kept tail


__all__ = [
    "MAX_COPY_CHARS",
    "Clipboard",
    "block_command",
    "block_output",
    "inside_tmux",
    "osc52",
]

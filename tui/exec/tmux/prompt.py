"""Where a pane's shell stands, so a command is typed only into an empty prompt.

A pane is shared with a person: during a take-over they may leave text unsent at the prompt,
start a program, or press Enter in the middle of a ``for`` loop. Typing the agent's command
then would glue it onto their input and run something nobody approved. So every marker the
pane emits (``markers``) is watched, not only those of our own commands: the last one says
whether the shell is at its prompt (an end marker), running a command (a start marker), or
reading the rest of a half-typed command (a continuation marker). End markers also carry the
shell's working directory, which the approval and the path policy need.

Before typing, ``refusal`` names what holds the pane (None when the shell is free). Text left
on the prompt line is seen as echo after the prompt's own last marker (``in``, at the end of
PS1) and dropped with Ctrl-C (``discard_input``), which works in any line-editor mode; the
keys in ``clear_input`` also go before every command, for a prompt whose PS1 lost its marker.
tmux delivers them before the pasted command, in order, through the same control client.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from tui.exec.backend import BackendError
from tui.exec.tmux.markers import MAX_MARKER_BYTES, Marker, find_markers

ShellState = Literal["prompt", "running", "continuation"]
_DRAWING = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~]?)|[\x00-\x1f\x7f]"
)
"""Escape sequences and control bytes: what a line editor prints around its prompt."""


class PromptHeld(BackendError):
    """The pane's prompt is not free for a command (see the message for why and what to do)."""


@dataclass
class PromptWatch:
    """Follows one pane's markers as its output arrives (fed from ``%output``)."""

    nonce: str
    state: ShellState = "prompt"
    cwd: str | None = None
    """The shell's directory at its last prompt (None: never reported)."""
    last_id: int = 0
    at_input: bool = False
    """The prompt's last marker (``in``, the end of PS1) was drawn: input starts after it."""
    typed: bool = False
    """Something visible was echoed after the prompt: text someone typed (and maybe left)."""
    _carry: bytes = b""
    _fresh: asyncio.Event = field(default_factory=asyncio.Event)

    def feed(self, chunk: bytes) -> None:
        window = self._carry + chunk
        seen = len(self._carry)
        self._carry = window[-MAX_MARKER_BYTES:]
        after = seen
        if b"__ATUI_" in window:
            for marker in find_markers(window, self.nonce):
                if marker.end > seen:  # a marker wholly in the carry was taken last time
                    self.take(marker)
                    after = marker.end
        if self.at_input and not self.typed and _DRAWING.sub(b"", window[after:]):
            self.typed = True

    def take(self, marker: Marker) -> None:
        self.at_input = self.typed = False
        if marker.kind == "ps2":
            self.state = "continuation"
        elif marker.kind == "go":
            self.state = "running"
        elif marker.kind == "in":
            self.state = "prompt"
            self.at_input = True
            self._fresh.set()
        else:
            self.state = "prompt"
            self.last_id = marker.id
            if marker.cwd is not None:
                self.cwd = marker.cwd

    def fresh_prompt(self) -> asyncio.Event:
        """Set when the next prompt has been drawn in full (its ``in`` marker)."""
        self._fresh = asyncio.Event()
        return self._fresh


def refusal(pane_id: str, watch: PromptWatch) -> str | None:
    """Why no command may be typed into ``pane_id`` now, and what to do; None when free."""
    if watch.state == "continuation":
        return (
            f"pane {pane_id} holds a half-typed command (its shell is waiting for the rest "
            "of a multi-line input a person started); the command was not typed. Finish or "
            f"drop it with tmux_send_keys target={pane_id} keys=['C-c'] (that discards their "
            "input: ask the user first), wait, or use another pane (tmux_create_pane)"
        )
    if watch.state == "running":
        return (
            f"pane {pane_id} is busy: its shell is running a command typed there (not by "
            "you); the command was not typed. Wait for it (tmux_capture_pane shows it), "
            f"stop it with tmux_send_keys target={pane_id} keys=['C-c'] if the user agrees, "
            "or use another pane (tmux_create_pane)"
        )
    return None


def moved(pane_id: str, watch: PromptWatch, expected: str | None) -> str | None:
    """Why a command approved to run in ``expected`` must not be typed: the shell moved
    since (a person's ``cd`` during the approval). None when it is still there."""
    if expected is None or watch.cwd is None or watch.cwd == expected:
        return None
    return (
        f"the shell in pane {pane_id} moved from {expected!r} to {watch.cwd!r} after the "
        "command was approved; it was not typed, since it would run somewhere else. Call "
        "again to have it judged where the shell is now, or pass cwd"
    )


async def discard_input(
    pane_id: str, watch: PromptWatch, send: Callable[[str], Awaitable[object]], timeout: float
) -> None:
    """Drop text someone left at the prompt with Ctrl-C, and wait for the fresh prompt.

    Ctrl-C discards the line whatever the line editor's mode (vi command mode ignores the
    emacs keys of ``clear_input``); the person sees their line end in ``^C``, as if they had
    pressed it. Raises ``PromptHeld`` when no fresh prompt comes.
    """
    fresh = watch.fresh_prompt()
    await send(f"send-keys -t {pane_id} C-c")
    try:
        await asyncio.wait_for(fresh.wait(), timeout)
    except TimeoutError:
        raise PromptHeld(
            f"text was left at the prompt of pane {pane_id} and Ctrl-C brought no fresh "
            "prompt; the command was not typed. Look with tmux_capture_pane, or use another "
            "pane (tmux_create_pane)"
        ) from None


def clear_input(pane_id: str) -> str:
    """A tmux command that empties the prompt line (emacs keys: end of line, kill to start).

    bash's readline and zsh's line editor both bind these by default; on an empty line they
    do nothing.
    """
    return f"send-keys -t {pane_id} C-e C-u"

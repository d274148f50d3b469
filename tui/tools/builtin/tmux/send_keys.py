"""``tmux_send_keys``: type text or press keys in one of the agent's panes, then show it.

Keys go only where they were aimed: a target that names none of the agent's panes is an
error, never a fallback. Text a shell would run (typed with Enter, or with a key that submits
it) is judged like a ``run_shell`` command and passes the shared-shell guard.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from tui.exec.backend import BackendError
from tui.exec.tmux.guard import check_shared_shell
from tui.exec.tmux.markers import shell_or_wrapper
from tui.exec.tmux_pane import TmuxPane
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess
from tui.tools.builtin.tmux.common import (
    ActionMeta,
    Selectors,
    delay_field,
    failure,
    pane_backend,
    parse_delay,
    select_target,
)
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule

SCREEN_AFTER_KEYS = 2000
"""Characters of the screen shown after sending keys (the tail: where the cursor is)."""
SUBMIT_KEYS = frozenset({"Enter", "C-m", "C-j", "KPEnter"})
"""Keys that make a shell run what is typed: text before them is judged as a command."""


class SendKeysParams(Selectors, ActionMeta):
    keys: list[str] = Field(
        default_factory=list,
        description="tmux key names pressed after the text, in order: C-c, C-d, Enter, Escape, "
        "Tab, Up, Down, PPage, NPage, M-x, F5, q …",
    )
    literal_text: str | None = Field(
        default=None, description="Text typed as is, first (no key names inside)."
    )
    enter: bool = Field(default=False, description="Press Enter last.")
    delay: float = delay_field(0.0, "How long to wait before sending")
    screen_after: float = delay_field(0.3, "How long to wait before showing the screen")

    @field_validator("delay", "screen_after", mode="before")
    @classmethod
    def _durations(cls, value: object) -> float:
        return parse_delay(value)

    @model_validator(mode="after")
    def _something_to_send(self) -> SendKeysParams:
        if not self.keys and not self.literal_text and not self.enter:
            raise ValueError("send at least one of keys, literal_text or enter")
        return self

    def typed(self) -> str:
        """What the call types: the text, then the characters its keys spell (``q``, Space)."""
        spelled = "".join(
            " " if key.lower() == "space" else key
            for key in self.keys
            if len(key) == 1 or key.lower() == "space"
        )
        return (self.literal_text or "") + spelled


class TmuxSendKeysTool(Tool[SendKeysParams]):
    name = "tmux_send_keys"
    label = "Send keys"
    Params = SendKeysParams
    permission = PermissionMode.READ_ONLY
    """The floor: typed text is judged as a command, like run_shell."""
    truncation = TruncationRule.tail(8000)
    aliases: ClassVar[dict[str, str]] = {"pane_id": "target", "text": "literal_text"}
    description = """Type text or press keys in a tmux pane, then show its screen.

When to use: interrupting a running command (keys ["C-c"]); answering a prompt (y/n, a
password the user gave you); driving an interactive program (a REPL, vim, less, top).
When NOT to use: running a shell command and reading its output (run_shell does it and
returns the exit code); just looking at a pane (tmux_capture_pane).
Disambiguation: order is literal_text, then keys, then Enter (after waiting `delay`). Without
target/session/pane the keys go to the shared agent pane; a missing pane is an error, keys are
never sent elsewhere. Typed text is judged (and may need approval) exactly like a run_shell
command; `exit`, `set -e` and `exec` are refused in agent panes.
Every call says risk, mutation, privesc and why (required).
Examples: {"keys": ["C-c"], "risk": "low", "mutation": false, "privesc": false, "why": "Stop
hung process"}; {"literal_text": "q", "enter": true, "risk": "low", "mutation": false,
"privesc": false, "why": "Exit pager"}; {"session": "build", "pane": "repl", "literal_text":
":wq", "keys": ["Enter"], "delay": "500ms", "risk": "low", "mutation": true, "privesc": false,
"why": "save the file"}"""

    def access(self, params: SendKeysParams) -> ToolAccess:
        typed = params.typed()
        permission = PermissionMode.READ_ONLY
        if params.mutation:
            permission = PermissionMode.WORKSPACE_WRITE
        if params.privesc:
            permission = PermissionMode.DANGER_FULL_ACCESS
        return ToolAccess(
            permission=permission,
            # Rated whether or not this call presses Enter: a later bare Enter would run it.
            command=typed if typed.strip() else None,
            subject=params.target or params.pane or params.session,
            claimed_risk=params.risk,
            why=params.why,
            acting=True,
        )

    async def execute(self, params: SendKeysParams, ctx: ToolContext) -> ToolResult:
        backend = pane_backend(ctx)
        sent: list[str] = []
        try:
            pane_id = await select_target(
                backend, target=params.target, session=params.session, pane=params.pane
            ) or await backend.resolve_target(backend.default_pane or backend.default_session)
            typed = params.typed()
            if typed.strip() and (params.enter or SUBMIT_KEYS & set(params.keys)):
                await _guard_shell(backend, pane_id, typed)
            if params.delay:
                await asyncio.sleep(params.delay)
            if params.literal_text:
                await backend.send_keys(
                    pane_id, params.literal_text, literal=True, confinement=ctx.confinement
                )
                sent.append(f"text {params.literal_text!r}")
            if params.keys:
                await backend.send_keys(pane_id, params.keys, confinement=ctx.confinement)
                sent.append("keys " + " ".join(params.keys))
            if params.enter:
                await backend.send_keys(pane_id, (), enter=True, confinement=ctx.confinement)
                sent.append("Enter")
            if params.screen_after:
                await asyncio.sleep(params.screen_after)
            capture = await backend.capture(pane_id)
        except BackendError as error:
            raise failure(error) from None
        screen = capture.text[-SCREEN_AFTER_KEYS:] if capture.text else "(empty)"
        text = (
            f"sent to pane {pane_id}: {'; '.join(sent)}\nscreen after {params.screen_after:g} s:\n"
        )
        return ToolResult(text + screen, {"pane_id": pane_id, "truncated_chars": 0})


async def _guard_shell(backend: TmuxPane, pane_id: str, typed: str) -> None:
    """The shared-shell guard for text a shell will run (``exit``, ``set -e``, ``exec``)."""
    for info in await backend.list_panes():
        if info.pane_id == pane_id and shell_or_wrapper(info.command):
            check_shared_shell(typed)

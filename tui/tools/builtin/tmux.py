"""The tmux tools: look at panes, type into them, and manage the agent's own sessions and panes.

Only registered when the backend ``SUPPORTS_TMUX`` (see ``builtin_tools``). Each tool talks
to ``ctx.backend`` (a ``TmuxBackend``), so targets are always panes of agent-tui's own tagged
sessions; a person's or another program's sessions on the same socket are invisible here.
A capture with a wrong explicit target falls back to the shared pane with a note (looking is
harmless), while keys to a wrong target are an error: they are never sent somewhere else.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from tui.errors import PermissionDenied
from tui.exec.backend import BackendError
from tui.exec.tmux.guard import check_shared_shell
from tui.exec.tmux.markers import shell_or_wrapper
from tui.exec.tmux.selectors import select_target
from tui.exec.tmux.usertmux import capture_user_pane
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess
from tui.tools.builtin.tmux_common import (
    ActionMeta,
    Selectors,
    delay_field,
    failure,
    notes,
    parse_delay,
    tmux_backend,
)
from tui.tools.builtin.tmux_manage import management_tools
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule, truncate

CAPTURE_RULE = TruncationRule.tail(8000)
SCREEN_AFTER_KEYS = 2000
"""Characters of the screen shown after sending keys (the tail: where the cursor is)."""
SUBMIT_KEYS = frozenset({"Enter", "C-m", "C-j", "KPEnter"})
"""Keys that make a shell run what is typed: text before them is judged as a command."""


# -- tmux_capture_pane ------------------------------------------------------------------------


def _line(value: object) -> object:
    """``-`` (history start or screen end), a line number, or a numeric string."""
    if isinstance(value, str):
        text = value.strip()
        if text == "-":
            return text
        try:
            return int(text)
        except ValueError:
            raise ValueError(f'a line must be "-" or a whole number, not {value!r}') from None
    return value


class CapturePaneParams(Selectors):
    start: int | str | None = Field(
        default=None,
        description='First line: "-" is the start of the history, 0 the top of the visible '
        "screen, negative numbers reach back into history (-500 = 500 lines above it). "
        "Default: the visible screen.",
    )
    end: int | str | None = Field(
        default=None,
        description='Last line (same numbering; "-" is the end of the visible screen); '
        "default: the last.",
    )
    join_wrapped_lines: bool = Field(
        default=True,
        description="Join lines the terminal wrapped, so long lines stay whole (tmux -J). "
        "Default true.",
    )
    preserve_trailing_spaces: bool = Field(
        default=False, description="Keep the spaces at the end of each line (tmux -N)."
    )
    include_escape_sequences: bool = Field(
        default=False,
        description="Keep colour/attribute escape sequences, to see highlighting (tmux -e).",
    )
    escape_non_printable: bool = Field(
        default=False, description="Show non-printable characters as octal \\ooo (tmux -C)."
    )
    include_alternate_screen: bool = Field(
        default=False,
        description="Capture the alternate screen (tmux -a: the one a full-screen program is "
        "not on); when there is none, the main screen is captured and a notice says so.",
    )
    user_pane: bool = Field(
        default=False,
        description="Capture the user's own tmux pane (where agent-tui runs) instead; only when "
        "they allowed it ([tmux] allow_user_pane_capture).",
    )
    delay: float = delay_field(0.0, "How long to wait before capturing")
    why: str | None = Field(
        default=None, description="Optional: one line on why you look at the pane now."
    )

    _start_line = field_validator("start", "end", mode="before")(_line)

    @field_validator("delay", mode="before")
    @classmethod
    def _delay(cls, value: object) -> float:
        return parse_delay(value)


class TmuxCapturePaneTool(Tool[CapturePaneParams]):
    name = "tmux_capture_pane"
    label = "Capture pane"
    Params = CapturePaneParams
    permission = PermissionMode.READ_ONLY
    truncation = CAPTURE_RULE
    aliases: ClassVar[dict[str, str]] = {
        "pane_id": "target",
        "start_line": "start",
        # The names this tool had before it took Buddy's: still understood.
        "join_wrapped": "join_wrapped_lines",
        "escape_sequences": "include_escape_sequences",
        "alternate_screen": "include_alternate_screen",
    }
    description = """Show the text of a tmux pane: its visible screen, or history lines.

When to use: checking on a command started with run_shell wait=false or one that timed out;
reading a full-screen program (top, vim, a REPL, a pager); seeing what the user did in a pane.
When NOT to use: running a command and reading its output (run_shell returns it); reading
files (read_file).
Disambiguation: the last 8000 characters are kept (the latest screen matters most). Without a
target it shows the shared pane; a target, session or pane that is not (or no longer) one of
yours falls back to the shared pane with a notice. Use start=-N to look back N lines,
start="-" for all the history. Polling a pane that has not changed since your last identical
capture returns a short "unchanged" notice instead of the same screen again.
user_pane=true reads the user's own pane, only if they allowed it in their config.
Examples: {"delay": "2s", "why": "Poll the shared pane for output from a background
command."}; {"session": "build", "pane": "worker", "start": "-200", "end": "-", "why":
"Inspect the build worker pane before deciding the next action."}; {"delay": "2s", "start":
"-", "end": "-", "join_wrapped_lines": true}; {"target": "%3", "include_escape_sequences":
true}"""

    def access(self, params: CapturePaneParams) -> ToolAccess:
        # The user's own pane is theirs, not the agent's: reading it is a distinct subject.
        subject = "user-pane" if params.user_pane else params.target
        return ToolAccess(permission=PermissionMode.READ_ONLY, subject=subject, why=params.why)

    def unchanged_key(self, params: CapturePaneParams) -> str | None:
        """Buddy's key for "the same capture": every option but ``why`` and ``delay``."""
        return params.model_dump_json(exclude={"why", "delay"})

    async def execute(self, params: CapturePaneParams, ctx: ToolContext) -> ToolResult:
        backend = tmux_backend(ctx)
        if params.delay:
            await asyncio.sleep(params.delay)
        options: dict[str, Any] = {
            "start": params.start,
            "end": params.end,
            "join_wrapped": params.join_wrapped_lines,
            "escape_sequences": params.include_escape_sequences,
            "preserve_trailing_spaces": params.preserve_trailing_spaces,
            "escape_non_printable": params.escape_non_printable,
        }
        if params.user_pane:
            return await self._user_pane(backend, options, ctx)
        target, fallback = await _managed_target(backend, params)
        try:
            capture = await backend.capture(
                target, alternate=params.include_alternate_screen, **options
            )
        except BackendError as error:
            raise failure(error) from None
        cut = truncate(capture.text, CAPTURE_RULE, spill_name=f"{ctx.tool_call_id}-capture")
        where = "" if params.start is None else f", lines {params.start}..{params.end or 'end'}"
        parts = notes(ctx, fallback)
        parts.append(f"pane {capture.pane_id} ({backend.pane_actor(capture.pane_id)}){where}:")
        parts.extend(notes(ctx, capture.notices))
        parts.append(cut.text if capture.text else "(empty)")
        details: dict[str, Any] = {"pane_id": capture.pane_id, "truncated_chars": cut.cut_chars}
        if cut.full_output_path:
            details["full_output_path"] = cut.full_output_path
        return ToolResult("\n".join(parts), details)

    async def _user_pane(
        self, backend: Any, options: dict[str, Any], ctx: ToolContext
    ) -> ToolResult:
        if not getattr(backend, "allow_user_pane_capture", False):
            raise PermissionDenied(
                "the user's own tmux pane is theirs: capturing it needs "
                "[tmux] allow_user_pane_capture = true in their config"
            )
        try:
            pane_id, text = await capture_user_pane(**options)
        except BackendError as error:
            raise failure(error) from None
        cut = truncate(text, CAPTURE_RULE, spill_name=f"{ctx.tool_call_id}-capture")
        body = cut.text if text else "(empty)"
        return ToolResult(
            f"the user's pane {pane_id}:\n{body}",
            {"pane_id": pane_id, "user_pane": True, "truncated_chars": cut.cut_chars},
        )


async def _managed_target(backend: Any, params: CapturePaneParams) -> tuple[str | None, list[str]]:
    """The pane a ``session``/``pane`` selector names, or — as Buddy does for a capture, which
    only looks — the shared pane and a notice when it names none of the agent's panes (killed,
    closed, mistyped). A raw ``target`` is resolved (and falls back) inside ``capture``."""
    if params.target is not None or (params.session is None and params.pane is None):
        return params.target, []
    try:
        return await select_target(
            backend, target=None, session=params.session, pane=params.pane
        ), []
    except BackendError:
        asked = ", ".join(
            f"{name}={value}"
            for name, value in (("session", params.session), ("pane", params.pane))
            if value is not None
        )
        return None, [
            f"Requested managed tmux target ({asked}) was not found (it was likely killed or "
            "closed). Using the default shared pane instead."
        ]


# -- tmux_send_keys ---------------------------------------------------------------------------


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
        backend = tmux_backend(ctx)
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


async def _guard_shell(backend: Any, pane_id: str, typed: str) -> None:
    """The shared-shell guard for text a shell will run (``exit``, ``set -e``, ``exec``)."""
    for info in await backend.list_panes():
        if info.pane_id == pane_id and shell_or_wrapper(info.command):
            check_shared_shell(typed)


def tmux_tools() -> list[Tool[Any]]:
    return [TmuxCapturePaneTool(), TmuxSendKeysTool(), *management_tools()]

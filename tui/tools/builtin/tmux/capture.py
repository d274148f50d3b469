"""``tmux_capture_pane``: the text of one of the agent's panes, or of the person's own.

Targets are always panes of agent-tui's own tagged sessions; a person's or another program's
sessions on the same socket are invisible here. A capture with a wrong explicit target, or a
selector that names a lost pane, falls back to the shared pane with a note: looking is
harmless.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from pydantic import Field, field_validator

from tui.errors import PermissionDenied
from tui.exec.backend import BackendError
from tui.exec.tmux.sessions import capture_user_pane
from tui.exec.tmux_pane import CaptureOptions, TmuxPane
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess
from tui.tools.builtin.tmux.common import (
    Selectors,
    delay_field,
    failure,
    notes,
    pane_backend,
    parse_delay,
    select_target,
)
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule, truncate

CAPTURE_RULE = TruncationRule.tail(8000)


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
        backend = pane_backend(ctx)
        if params.delay:
            await asyncio.sleep(params.delay)
        options = CaptureOptions(
            start=params.start,
            end=params.end,
            join_wrapped=params.join_wrapped_lines,
            escape_sequences=params.include_escape_sequences,
            preserve_trailing_spaces=params.preserve_trailing_spaces,
            escape_non_printable=params.escape_non_printable,
        )
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
        self, backend: TmuxPane, options: CaptureOptions, ctx: ToolContext
    ) -> ToolResult:
        if not backend.allow_user_pane_capture:
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


async def _managed_target(
    backend: TmuxPane, params: CapturePaneParams
) -> tuple[str | None, list[str]]:
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

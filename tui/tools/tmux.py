"""The tmux tools: look at panes, type into them, and manage the agent's own sessions and panes.

Only registered when the backend ``SUPPORTS_TMUX`` (see ``builtin_tools``). Each tool talks
to ``ctx.backend`` (a ``TmuxBackend``), so targets are always panes of agent-tui's own tagged
sessions; a person's or another program's sessions on the same socket are invisible here.
A capture with a wrong explicit target falls back to the shared pane with a note (looking is
harmless), while keys to a wrong target are an error: they are never sent somewhere else.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from tui.exec.backend import BackendError
from tui.exec.tmux.guard import ShellGuardError
from tui.exec.tmux.sessions import NotOurs
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.context import ToolContext
from tui.tools.errors import ExecutionFailed, NotFound, PermissionDenied
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule, truncate

CAPTURE_RULE = TruncationRule.tail(8000)
MAX_DELAY = 30.0
SCREEN_AFTER_KEYS = 2000
"""Characters of the screen shown after sending keys (the tail: where the cursor is)."""


def _tmux(ctx: ToolContext) -> Any:
    backend = ctx.backend
    if not getattr(backend, "SUPPORTS_TMUX", False):
        raise ExecutionFailed(f"{backend.actor} is not a tmux backend; start agent-tui with tmux")
    return backend


def _failure(error: BackendError) -> Exception:
    if isinstance(error, NotOurs):
        return NotFound(error.msg)
    if isinstance(error, ShellGuardError):
        return PermissionDenied(error.msg)
    return ExecutionFailed(error.msg)


def _notes(ctx: ToolContext, notices: list[str]) -> list[str]:
    for notice in notices:
        ctx.notice(notice)
    return [f"note: {notice}" for notice in notices]


# -- tmux_capture_pane ------------------------------------------------------------------------


class CapturePaneParams(ToolParams):
    target: str | None = Field(
        default=None,
        description="Pane id (%3), session name (build) or session:window.pane; "
        "default: the shared pane.",
    )
    session: str | None = Field(
        default=None, description="A session of yours (its active pane unless `pane` is given)."
    )
    pane: int | None = Field(
        default=None, ge=0, description="Pane index in the session's current window."
    )
    start: int | None = Field(
        default=None,
        description="First line: 0 is the top of the visible screen, negative numbers reach "
        "back into history (-500 = 500 lines above it). Default: the visible screen.",
    )
    end: int | None = Field(
        default=None, description="Last line (same numbering); default: the last."
    )
    join_wrapped: bool = Field(
        default=True, description="Join lines the terminal wrapped, so long lines stay whole."
    )
    escape_sequences: bool = Field(
        default=False, description="Keep colour/attribute escape sequences (to see highlighting)."
    )
    alternate_screen: bool = Field(
        default=False,
        description="Capture the alternate screen (the one a full-screen program is not on).",
    )
    delay: float = Field(
        default=0.0, ge=0, le=MAX_DELAY, description="Seconds to wait before capturing."
    )


class TmuxCapturePaneTool(Tool[CapturePaneParams]):
    name = "tmux_capture_pane"
    label = "Capture pane"
    Params = CapturePaneParams
    permission = PermissionMode.READ_ONLY
    truncation = CAPTURE_RULE
    aliases: ClassVar[dict[str, str]] = {"pane_id": "target", "start_line": "start"}
    description = """Show the text of a tmux pane: its visible screen, or history lines.

When to use: checking on a command started with run_shell wait=false or one that timed out;
reading a full-screen program (top, vim, a REPL, a pager); seeing what the user did in a pane.
When NOT to use: running a command and reading its output (run_shell returns it); reading
files (read_file).
Disambiguation: the last 8000 characters are kept (the latest screen matters most). Without a
target it shows the shared pane; a target that is not one of your panes falls back to the
shared pane with a note. Use start=-N to look back N lines into the history.
Examples: {}; {"target": "%3"}; {"target": "%3", "start": -300}; {"session": "build",
"delay": 5}; {"target": "%3", "escape_sequences": true}"""

    async def execute(self, params: CapturePaneParams, ctx: ToolContext) -> ToolResult:
        backend = _tmux(ctx)
        target = params.target
        if target is None and params.session is not None:
            target = params.session if params.pane is None else f"{params.session}:.{params.pane}"
        elif target is None and params.pane is not None:
            target = f"{backend.default_session}:.{params.pane}"
        if params.delay:
            await asyncio.sleep(params.delay)
        try:
            capture = await backend.capture(
                target,
                start=params.start,
                end=params.end,
                join_wrapped=params.join_wrapped,
                escape_sequences=params.escape_sequences,
                alternate=params.alternate_screen,
            )
        except BackendError as error:
            raise _failure(error) from None
        cut = truncate(capture.text, CAPTURE_RULE, spill_name=f"{ctx.tool_call_id}-capture")
        where = "" if params.start is None else f", lines {params.start}..{params.end or 'end'}"
        parts = [f"pane {capture.pane_id} ({backend.pane_actor(capture.pane_id)}){where}:"]
        parts.extend(_notes(ctx, capture.notices))
        parts.append(cut.text if capture.text else "(empty)")
        details: dict[str, Any] = {"pane_id": capture.pane_id, "truncated_chars": cut.cut_chars}
        if cut.full_output_path:
            details["full_output_path"] = cut.full_output_path
        return ToolResult("\n".join(parts), details)


# -- tmux_send_keys ---------------------------------------------------------------------------


class SendKeysParams(ToolParams):
    target: str = Field(description="Pane id (%3), session name or session:window.pane.")
    keys: list[str] = Field(
        default_factory=list,
        description="tmux key names pressed first, in order: C-c, C-d, Enter, Escape, Tab, Up, "
        "Down, PPage, NPage, M-x, F5, q …",
    )
    literal_text: str | None = Field(
        default=None, description="Text typed as is after the keys (no key names inside)."
    )
    enter: bool = Field(default=False, description="Press Enter after the text.")
    delay: float = Field(
        default=0.3,
        ge=0,
        le=MAX_DELAY,
        description="Seconds to wait before the screen shown in the result is captured.",
    )
    why: str | None = Field(default=None, description="One sentence: why these keys, now.")
    risk: Literal["low", "medium", "high"] | None = Field(
        default=None, description="Your own risk estimate; it never lowers the computed risk."
    )
    mutation: bool | None = Field(
        default=None, description="True if the keys change files, state or services."
    )
    privesc: bool | None = Field(
        default=None, description="True if they need elevated privileges (sudo, root)."
    )

    @model_validator(mode="after")
    def _something_to_send(self) -> SendKeysParams:
        if not self.keys and not self.literal_text and not self.enter:
            raise ValueError("send at least one of keys, literal_text or enter")
        return self


class TmuxSendKeysTool(Tool[SendKeysParams]):
    name = "tmux_send_keys"
    label = "Send keys"
    Params = SendKeysParams
    permission = PermissionMode.READ_ONLY
    """The floor: typed text plus Enter is judged as a command, like run_shell."""
    truncation = TruncationRule.tail(8000)
    aliases: ClassVar[dict[str, str]] = {"pane_id": "target", "text": "literal_text"}
    description = """Press keys or type text in a tmux pane, then show its screen.

When to use: interrupting a running command (keys ["C-c"]); answering a prompt (y/n, a
password the user gave you); driving an interactive program (a REPL, vim, less, top).
When NOT to use: running a shell command and reading its output (run_shell does it and
returns the exit code); just looking at a pane (tmux_capture_pane).
Disambiguation: order is keys, then literal_text, then Enter. The target must exist: a
missing pane is an error, keys are never sent elsewhere. Text typed with enter=true into a
shell is judged (and may need approval) exactly like a run_shell command; `exit`, `set -e` and
`exec` are refused in agent panes.
Examples: {"target": "%3", "keys": ["C-c"]}; {"target": "%3", "literal_text": "y", "enter":
true}; {"target": "%4", "keys": ["Escape"], "literal_text": ":wq", "enter": true, "why":
"save the file"}"""

    def access(self, params: SendKeysParams) -> ToolAccess:
        typed_command = params.literal_text if params.enter and params.literal_text else None
        permission = PermissionMode.READ_ONLY
        if (params.literal_text and not params.enter) or params.mutation:
            permission = PermissionMode.WORKSPACE_WRITE
        if params.privesc:
            permission = PermissionMode.DANGER_FULL_ACCESS
        return ToolAccess(
            permission=permission,
            command=typed_command,
            subject=params.target,
            claimed_risk=params.risk,
            why=params.why,
            acting=True,
        )

    async def execute(self, params: SendKeysParams, ctx: ToolContext) -> ToolResult:
        backend = _tmux(ctx)
        sent: list[str] = []
        try:
            pane_id = params.target
            if params.keys:
                pane_id = await backend.send_keys(params.target, params.keys)
                sent.append("keys " + " ".join(params.keys))
            if params.literal_text or params.enter:
                pane_id = await backend.send_keys(
                    pane_id, params.literal_text or "", literal=True, enter=params.enter
                )
                if params.literal_text:
                    sent.append(f"text {params.literal_text!r}")
                if params.enter:
                    sent.append("Enter")
            if params.delay:
                await asyncio.sleep(params.delay)
            capture = await backend.capture(pane_id)
        except BackendError as error:
            raise _failure(error) from None
        screen = capture.text[-SCREEN_AFTER_KEYS:] if capture.text else "(empty)"
        text = f"sent to pane {pane_id}: {'; '.join(sent)}\nscreen after {params.delay:g} s:\n"
        return ToolResult(text + screen, {"pane_id": pane_id, "truncated_chars": 0})


# -- sessions and panes -----------------------------------------------------------------------


class CreateSessionParams(ToolParams):
    name: str = Field(description="Session name; it is prefixed with atui- (build → atui-build).")
    cwd: str | None = Field(default=None, description="Directory its first pane starts in.")


class TmuxCreateSessionTool(Tool[CreateSessionParams]):
    name = "tmux_create_session"
    label = "New tmux session"
    Params = CreateSessionParams
    permission = PermissionMode.WORKSPACE_WRITE
    description = """Create a tmux session of your own, with one shell pane ready for commands.

When to use: a long-running process that should keep its own screen (a dev server, a watcher,
a database shell) while you keep working in the shared pane.
When NOT to use: one more command (run_shell); a second shell beside the shared one in the
same view (tmux_create_pane).
Disambiguation: names get the atui- prefix and a tag, and there is a limit on sessions; run
commands there with run_shell target=<session or pane id>, look with tmux_capture_pane.
Examples: {"name": "devserver"}; {"name": "db", "cwd": "services/db"}"""

    def access(self, params: CreateSessionParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.WORKSPACE_WRITE,
            read_paths=[params.cwd] if params.cwd else [],
            subject=params.name,
        )

    async def execute(self, params: CreateSessionParams, ctx: ToolContext) -> ToolResult:
        backend = _tmux(ctx)
        cwd = str(ctx.resolve_path(params.cwd)) if params.cwd else str(ctx.workspace)
        try:
            session, pane_id = await backend.create_session(params.name, cwd=cwd)
        except BackendError as error:
            raise _failure(error) from None
        return ToolResult(
            f"created session {session} with pane {pane_id} (shell ready in {cwd}). Run "
            f'commands there with run_shell target="{pane_id}"',
            {"session": session, "pane_id": pane_id},
        )


class KillSessionParams(ToolParams):
    name: str = Field(description="A session you created (with or without the atui- prefix).")


class TmuxKillSessionTool(Tool[KillSessionParams]):
    name = "tmux_kill_session"
    label = "Kill tmux session"
    Params = KillSessionParams
    permission = PermissionMode.WORKSPACE_WRITE
    description = """Kill one of your tmux sessions and everything running in it.

When to use: a session you created is no longer needed (its server stopped, the job is done).
When NOT to use: stopping one program (tmux_send_keys C-c); closing one pane (tmux_kill_pane).
Disambiguation: only sessions agent-tui created can be killed; the shared session cannot.
Examples: {"name": "devserver"}; {"name": "atui-db"}"""

    def access(self, params: KillSessionParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.WORKSPACE_WRITE, subject=params.name)

    async def execute(self, params: KillSessionParams, ctx: ToolContext) -> ToolResult:
        backend = _tmux(ctx)
        try:
            session = await backend.kill_session(params.name)
        except BackendError as error:
            raise _failure(error) from None
        return ToolResult(f"killed session {session}", {"session": session})


class CreatePaneParams(ToolParams):
    session: str | None = Field(
        default=None, description="Session to add the pane to; default: the shared one."
    )
    target: str | None = Field(default=None, description="Pane to split (instead of `session`).")
    direction: Literal["below", "right", "window"] = Field(
        default="below", description="Split below or to the right, or open a new window."
    )
    cwd: str | None = Field(default=None, description="Directory the new shell starts in.")


class TmuxCreatePaneTool(Tool[CreatePaneParams]):
    name = "tmux_create_pane"
    label = "New tmux pane"
    Params = CreatePaneParams
    permission = PermissionMode.WORKSPACE_WRITE
    description = """Open a new shell pane (a split or a window) in one of your tmux sessions.

When to use: running something long (a server, `tail -f`) while still using the shared pane,
with both visible to the user.
When NOT to use: a single command (run_shell); a separate group of panes (tmux_create_session).
Disambiguation: the new pane is set up for run_shell target=<pane id>; panes are limited in
number; close it with tmux_kill_pane.
Examples: {}; {"direction": "right", "cwd": "frontend"}; {"session": "devserver", "direction":
"window"}"""

    def access(self, params: CreatePaneParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.WORKSPACE_WRITE,
            read_paths=[params.cwd] if params.cwd else [],
            subject=params.target or params.session,
        )

    async def execute(self, params: CreatePaneParams, ctx: ToolContext) -> ToolResult:
        backend = _tmux(ctx)
        cwd = str(ctx.resolve_path(params.cwd)) if params.cwd else str(ctx.workspace)
        try:
            pane_id = await backend.create_pane(
                session=params.session, target=params.target, direction=params.direction, cwd=cwd
            )
        except BackendError as error:
            raise _failure(error) from None
        return ToolResult(
            f'opened pane {pane_id} (shell ready in {cwd}); run_shell target="{pane_id}" runs '
            "commands there",
            {"pane_id": pane_id},
        )


class KillPaneParams(ToolParams):
    target: str = Field(description="Pane id (%3) or session:window.pane of a pane you opened.")


class TmuxKillPaneTool(Tool[KillPaneParams]):
    name = "tmux_kill_pane"
    label = "Kill tmux pane"
    Params = KillPaneParams
    permission = PermissionMode.WORKSPACE_WRITE
    aliases: ClassVar[dict[str, str]] = {"pane_id": "target"}
    description = """Close one of your tmux panes and whatever runs in it.

When to use: a pane you opened is no longer needed.
When NOT to use: stopping a program but keeping the shell (tmux_send_keys C-c); a whole
session (tmux_kill_session).
Disambiguation: only panes of agent-tui's sessions; the shared pane cannot be killed.
Examples: {"target": "%5"}; {"target": "devserver:0.1"}"""

    def access(self, params: KillPaneParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.WORKSPACE_WRITE, subject=params.target)

    async def execute(self, params: KillPaneParams, ctx: ToolContext) -> ToolResult:
        backend = _tmux(ctx)
        try:
            pane_id = await backend.kill_pane(params.target)
        except BackendError as error:
            raise _failure(error) from None
        return ToolResult(f"killed pane {pane_id}", {"pane_id": pane_id})


def tmux_tools() -> list[Tool[Any]]:
    return [
        TmuxCapturePaneTool(),
        TmuxSendKeysTool(),
        TmuxCreateSessionTool(),
        TmuxKillSessionTool(),
        TmuxCreatePaneTool(),
        TmuxKillPaneTool(),
    ]

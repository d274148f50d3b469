"""The agent's own tmux sessions and panes: create, name, kill — within configured limits.

Buddy's ``tmux_create_session``/``tmux_create_pane`` contract: names are canonicalised
(sessions get the ``atui-`` prefix, panes a lower-case name tagged on the pane and shown as its
title), each call carries the risk/mutation/privesc/why metadata, and the number of sessions
and panes is capped by ``[tmux] max_sessions`` / ``max_panes``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from tui.exec.backend import BackendError
from tui.exec.tmux_pane import canonical_pane_name
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess
from tui.tools.builtin.tmux.common import ActionMeta, failure, pane_backend, select_target
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult

LIMITS = (
    "Limits: [tmux] max_sessions (default 8, the shared session included; Buddy's is 1) and "
    "max_panes (default 16 across your sessions; Buddy's is 5 per session)."
)


def _pane_name(value: object) -> object:
    """Canonical at the boundary, so the name the model reads back is the one that matches."""
    if isinstance(value, str):
        return canonical_pane_name(value)
    return value


def _access(params: ActionMeta, subject: str | None, read: str | None = None) -> ToolAccess:
    permission = PermissionMode.WORKSPACE_WRITE
    if params.privesc:
        permission = PermissionMode.DANGER_FULL_ACCESS
    return ToolAccess(
        permission=permission,
        read_paths=[read] if read else [],
        subject=subject,
        claimed_risk=params.risk,
        why=params.why,
    )


class CreateSessionParams(ActionMeta):
    name: str = Field(description="Session name; it is prefixed with atui- (build → atui-build).")
    pane: str | None = Field(
        default=None, description="A name for its first pane (lower-case letters, digits, -, _)."
    )
    cwd: str | None = Field(default=None, description="Directory its first pane starts in.")

    _pane = field_validator("pane", mode="before")(_pane_name)


class TmuxCreateSessionTool(Tool[CreateSessionParams]):
    name = "tmux_create_session"
    label = "New tmux session"
    Params = CreateSessionParams
    permission = PermissionMode.WORKSPACE_WRITE
    aliases: ClassVar[dict[str, str]] = {"session": "name"}
    description = f"""Create a tmux session of your own, with one shell pane ready for commands.

When to use: a long-running process that should keep its own screen (a dev server, a watcher,
a database shell) while you keep working in the shared pane.
When NOT to use: one more command (run_shell); a second shell beside the shared one in the
same view (tmux_create_pane).
Disambiguation: names get the atui- prefix and an owner tag; run commands there with
run_shell session=<name> (pane=<pane name>), look with tmux_capture_pane. {LIMITS}
Every call says risk, mutation, privesc and why (required).
Examples: {{"name": "investigation", "risk": "medium", "mutation": true, "privesc": false,
"why": "Need isolated workspace for parallel long task"}}; {{"name": "db", "pane": "psql",
"cwd": "services/db", "risk": "low", "mutation": true, "privesc": false, "why": "a database
shell beside the work"}}"""

    def access(self, params: CreateSessionParams) -> ToolAccess:
        return _access(params, params.name, params.cwd)

    async def execute(self, params: CreateSessionParams, ctx: ToolContext) -> ToolResult:
        backend = pane_backend(ctx)
        cwd = str(ctx.resolve_path(params.cwd)) if params.cwd else str(ctx.workspace)
        try:
            session, pane_id = await backend.create_session(
                params.name, cwd=cwd, pane_name=params.pane
            )
        except BackendError as error:
            raise failure(error) from None
        named = f" named {params.pane}" if params.pane else ""
        return ToolResult(
            f"created session {session} with pane {pane_id}{named} (shell ready in {cwd}). Run "
            f'commands there with run_shell session="{session}"',
            {"session": session, "pane_id": pane_id, "pane": params.pane},
        )


class KillSessionParams(ActionMeta):
    name: str = Field(description="A session you created (with or without the atui- prefix).")


class TmuxKillSessionTool(Tool[KillSessionParams]):
    name = "tmux_kill_session"
    label = "Kill tmux session"
    Params = KillSessionParams
    permission = PermissionMode.WORKSPACE_WRITE
    aliases: ClassVar[dict[str, str]] = {"session": "name"}
    description = """Kill one of your tmux sessions and everything running in it.

When to use: a session you created is no longer needed (its server stopped, the job is done).
When NOT to use: stopping one program (tmux_send_keys C-c); closing one pane (tmux_kill_pane).
Disambiguation: only sessions agent-tui created can be killed; the shared session cannot.
Every call says risk, mutation, privesc and why (required).
Examples: {"name": "devserver", "risk": "low", "mutation": true, "privesc": false, "why": "the
server is no longer needed"}; {"name": "atui-db", "risk": "low", "mutation": true, "privesc":
false, "why": "done with the database shell"}"""

    def access(self, params: KillSessionParams) -> ToolAccess:
        return _access(params, params.name)

    async def execute(self, params: KillSessionParams, ctx: ToolContext) -> ToolResult:
        backend = pane_backend(ctx)
        try:
            session = await backend.kill_session(params.name)
        except BackendError as error:
            raise failure(error) from None
        return ToolResult(f"killed session {session}", {"session": session})


class CreatePaneParams(ActionMeta):
    name: str | None = Field(
        default=None,
        description="A name for the pane (lower-case letters, digits, -, _), unique in its "
        "session; run_shell/tmux tools then find it with pane=<name>.",
    )
    session: str | None = Field(
        default=None, description="Session to add the pane to; default: the shared one."
    )
    target: str | None = Field(default=None, description="Pane to split (instead of `session`).")
    direction: Literal["below", "right", "window"] = Field(
        default="below", description="Split below or to the right, or open a new window."
    )
    cwd: str | None = Field(default=None, description="Directory the new shell starts in.")

    _name = field_validator("name", mode="before")(_pane_name)


class TmuxCreatePaneTool(Tool[CreatePaneParams]):
    name = "tmux_create_pane"
    label = "New tmux pane"
    Params = CreatePaneParams
    permission = PermissionMode.WORKSPACE_WRITE
    aliases: ClassVar[dict[str, str]] = {"pane": "name"}
    description = f"""Open a new shell pane (a split or a window) in one of your tmux sessions.

When to use: running something long (a server, `tail -f`) while still using the shared pane,
with both visible to the user.
When NOT to use: a single command (run_shell); a separate group of panes (tmux_create_session).
Disambiguation: give it a name and reach it with pane=<name> (run_shell, tmux_send_keys,
tmux_capture_pane); close it with tmux_kill_pane. {LIMITS}
Every call says risk, mutation, privesc and why (required).
Examples: {{"name": "server", "risk": "low", "mutation": true, "privesc": false, "why": "run
the dev server beside the shell"}}; {{"direction": "right", "cwd": "frontend", "risk": "low",
"mutation": true, "privesc": false, "why": "a shell in the frontend"}}; {{"session":
"devserver", "direction": "window", "risk": "low", "mutation": true, "privesc": false, "why":
"a second window"}}"""

    def access(self, params: CreatePaneParams) -> ToolAccess:
        return _access(params, params.target or params.session, params.cwd)

    async def execute(self, params: CreatePaneParams, ctx: ToolContext) -> ToolResult:
        backend = pane_backend(ctx)
        cwd = str(ctx.resolve_path(params.cwd)) if params.cwd else str(ctx.workspace)
        try:
            pane_id = await backend.create_pane(
                session=params.session,
                target=params.target,
                direction=params.direction,
                cwd=cwd,
                name=params.name,
            )
        except BackendError as error:
            raise failure(error) from None
        named = f" named {params.name}" if params.name else ""
        reach = f'pane="{params.name}"' if params.name else f'target="{pane_id}"'
        return ToolResult(
            f"opened pane {pane_id}{named} (shell ready in {cwd}); run_shell {reach} runs "
            "commands there",
            {"pane_id": pane_id, "name": params.name},
        )


class KillPaneParams(ActionMeta):
    target: str | None = Field(
        default=None, description="Pane id (%3) or session:window.pane of a pane you opened."
    )
    session: str | None = Field(default=None, description="The session of the named `pane`.")
    pane: str | None = Field(default=None, description="The pane's name, index or id.")


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
Every call says risk, mutation, privesc and why (required).
Examples: {"pane": "server", "risk": "low", "mutation": true, "privesc": false, "why": "the
server is no longer needed"}; {"target": "%5", "risk": "low", "mutation": true, "privesc":
false, "why": "done with that pane"}"""

    def access(self, params: KillPaneParams) -> ToolAccess:
        return _access(params, params.target or params.pane)

    async def execute(self, params: KillPaneParams, ctx: ToolContext) -> ToolResult:
        backend = pane_backend(ctx)
        try:
            target = await select_target(
                backend, target=params.target, session=params.session, pane=params.pane
            )
            if target is None:
                raise BackendError("name the pane to kill: target, or pane (and session)")
            pane_id = await backend.kill_pane(target)
        except BackendError as error:
            raise failure(error) from None
        return ToolResult(f"killed pane {pane_id}", {"pane_id": pane_id})

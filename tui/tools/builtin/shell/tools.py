"""``run_shell``: one shell command on the session's execution backend.

On a tmux backend the command is typed into a pane the person watches: it may be left running
(``wait=false``, or a ``wait`` duration that ran out) and picked up later with the tmux tools,
and its stdout and stderr arrive merged, as a terminal shows them.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from tui.errors import Cancelled, ExecutionFailed, NotFound, PermissionDenied
from tui.exec.backend import BackendError, ExecResult
from tui.exec.tmux_pane import NotOurs, ShellGuardError, TmuxPane, tmux_pane
from tui.security.permissions import PermissionMode
from tui.spill import DEFAULT_DISK_CAP, SPILL
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.durations import FORMS, parse_duration
from tui.tools.builtin.shell.full_output import StreamSpool, spooled_view
from tui.tools.builtin.tmux.common import Why, select_target
from tui.tools.context import ToolContext
from tui.tools.duration_words import format_duration
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule, truncate

STREAM_RULE = TruncationRule.head(4000, keep_tail=1000)
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 4 * 3600.0
SPILL_IN_THREAD_CHARS = 64 * 1024
"""Above this, saving the full output to a file moves off the event loop."""

MAX_WAIT = 86400.0
"""The longest ``wait`` duration ("1d"): past it, use wait=false and look later."""


def parse_wait(value: object) -> bool | float:
    """``true``/``false`` stay; ``30``, ``"500ms"``, ``"30s"``, ``"10m"``, ``"1d"`` → seconds."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, str | int | float):
        return parse_duration(value, what="wait", maximum=MAX_WAIT, allow_zero=False)
    raise ValueError(f"wait must be true, false, or a duration ({FORMS})")


class RunShellParams(ToolParams):
    command: str = Field(description="The shell command line to run (bash syntax).")
    risk: Literal["low", "medium", "high"] = Field(
        description="Estimated risk level for this command. Shown to the user; it never lowers "
        "the computed risk."
    )
    mutation: bool = Field(
        description="True when the command mutates system state (writes files, changes "
        "configuration, etc). Writing only under /tmp can be treated as non-mutation."
    )
    privesc: bool = Field(
        description="True when the command uses privilege escalation (for example sudo/su)."
    )
    why: Why = Field(
        description="Short reason for running the command, including risk justification and "
        "what is being mutated when mutation=true."
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description="Seconds the command may run. Without tmux it is then killed (default "
        f"{DEFAULT_TIMEOUT:g}); on tmux it is left running in its pane, and with wait=true and "
        "no timeout the call waits for the command to exit, however long it takes.",
    )
    cwd: str | None = Field(
        default=None,
        description=(
            "Working directory; relative paths start at the workspace (on a tmux backend: "
            "where its shell stands)."
        ),
    )
    wait: bool | float | str = Field(
        default=True,
        description="Waiting mode: true (default) waits to completion (no limit unless "
        "`timeout` is given); false dispatches and returns at once (tmux only; check on it with "
        f"tmux_capture_pane); or a duration ({FORMS}, up to 1d) to wait with a timeout: a "
        "command still running then is an error result (on tmux it is left running in its "
        "pane, not killed).",
    )
    target: str | None = Field(
        default=None,
        description="tmux only: the pane (%3) or session to type into; default: the shared pane. "
        "Prefer session/pane.",
    )
    session: str | None = Field(
        default=None,
        description="tmux only: one of your sessions (from tmux_create_session); its active pane "
        "unless `pane` is given. Default: the shared session.",
    )
    pane: str | None = Field(
        default=None,
        description="tmux only: one of your panes: its name (tmux_create_pane name=…), its index "
        "in the session's window, or its id (%3). Default: the session's active pane.",
    )
    outside_sandbox: bool = Field(
        default=False,
        description="Run outside the sandbox (it can then write anywhere and reach any host). "
        "Only when a result said the sandbox refused something the task truly needs; say why "
        "in `why`. The user is always asked, in every mode; without a user it is refused.",
    )

    @field_validator("wait", mode="before")
    @classmethod
    def _parse_wait(cls, value: object) -> bool | float:
        return parse_wait(value)


class ShellCommandParams(RunShellParams):
    """A call in ZeroClaw's form: by its names (``shell``, ``bash``, ``sh``) or as a bare
    command string. ZeroClaw's shell takes a command and nothing else, so Buddy's metadata is
    optional here (it never decides anything: the computed risk does). ZeroClaw's ``approved``
    is accepted and ignored: only the person approves."""

    risk: Literal["low", "medium", "high"] | None = None  # type: ignore[assignment]
    mutation: bool | None = None  # type: ignore[assignment]
    privesc: bool | None = None  # type: ignore[assignment]
    why: Why | None = None  # type: ignore[assignment]
    approved: bool = False


class RunShellTool(Tool[RunShellParams]):
    name = "run_shell"
    label = "Shell"
    Params = RunShellParams
    permission = PermissionMode.READ_ONLY
    """The floor: the policy raises it per call from the command's computed risk."""
    truncation = STREAM_RULE
    aliases: ClassVar[dict[str, str]] = {
        "cmd": "command",
        "script": "command",
        "shell_command": "command",
    }
    name_aliases = ("shell", "bash", "sh")
    raw_argument = "command"
    BareParams = ShellCommandParams
    streams_output = True
    honours_cancel = True
    description = """Run a shell command and return stdout/stderr/exit_code.

When to use: building, testing, running programs, inspecting the system, git, package
managers — anything that needs a real shell.
When NOT to use: reading, writing or editing a file (use read_file, write_file, edit_file);
finding files or text (use glob_search, grep_search); tmux lifecycle (use
tmux_create_session/tmux_create_pane/tmux_kill_*); interactive key control (tmux_send_keys);
polling a pane without running anything (tmux_capture_pane).
Disambiguation: every call says risk, mutation, privesc and why (required); your risk never
lowers the computed one, and commands that change things may need the user's approval. A
finished command returns {"exit_code", "stdout", "stderr"}; a stream above 4000 characters is
cut to its head and tail, and the whole output is saved to a file whose path the result names
(page it with read_file). Without tmux each call runs in a fresh shell: `cd` does not persist,
so pass cwd instead.
On a tmux backend the command is typed into a shared shell pane the user watches: cd and
variables persist between calls, stdout and stderr arrive merged, `exit`, `set -e`/`setopt
errexit`, `exec` and raw `tmux new-window`/`split-window` are refused (use bash -lc '…' and the
tmux tools). wait=true (the default) waits until the command exits, with no limit unless you
give `timeout`; wait=false starts a long command (a server, a watcher) and returns at once; a
wait duration ("500ms", "2s", "10m", "1h") waits that long and is then an error result, the
command left running in its pane. session/pane pick one of your own sessions and panes (by
name, index or id); others' panes are never reachable.
Examples: {"command": "ls -la", "risk": "low", "mutation": false, "privesc": false, "why":
"List working directory"}; {"command": "npm run build", "wait": false, "risk": "low",
"mutation": false, "privesc": false, "why": "Start long build and poll with
tmux_capture_pane"}; {"command": "make test", "wait": "5m", "cwd": "services/api", "risk":
"low", "mutation": false, "privesc": false, "why": "run the tests"}; {"command": "npm test",
"session": "build", "pane": "worker", "risk": "low", "mutation": false, "privesc": false,
"why": "test in the build pane"}"""

    def __init__(self, *, disk_cap: int = DEFAULT_DISK_CAP) -> None:
        self.disk_cap = disk_cap
        """Bytes of each stream saved to the full-output file (``[agent] output_disk_cap``)."""
        self.fleet: Any = None
        """The session's fleet, for ``hosts`` (which a session on a fleet adds to the schema)."""

    def spools(self, ctx: ToolContext) -> dict[str, StreamSpool]:
        """One spool per stream, fed from the live sink: the saved file gets everything."""
        start_after = STREAM_RULE.limit + STREAM_RULE.keep_tail
        return {
            stream: StreamSpool(
                f"{ctx.tool_call_id}-{stream}", start_after, STREAM_RULE.keep_tail, self.disk_cap
            )
            for stream in ("stdout", "stderr")
        }

    def access(self, params: RunShellParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.READ_ONLY,
            command=params.command,
            read_paths=[params.cwd] if params.cwd else [],
            claimed_risk=params.risk,
            why=params.why,
            acting=True,
            outside=params.outside_sandbox,
        )

    async def execute(self, params: RunShellParams, ctx: ToolContext) -> ToolResult:
        if ctx.fanout is not None and self.fleet is not None:
            from tui.tools.builtin.shell.fanout import run_fanout

            if params.wait is False or params.target or params.session or params.pane:
                raise ExecutionFailed("a fan-out (hosts) waits for every host: drop wait/pane")
            timeout = _wait_seconds(params.wait) or params.timeout or DEFAULT_TIMEOUT
            return await run_fanout(
                params.command, ctx, self.fleet, timeout=timeout, cwd=params.cwd
            )
        pane = tmux_pane(ctx.backend)
        selectors = [n for n in ("target", "session", "pane") if getattr(params, n) is not None]
        if pane is None and (params.wait is False or selectors):
            what = "wait=false" if params.wait is False else selectors[0]
            raise ExecutionFailed(
                f"{what} needs a tmux backend (this one is {ctx.backend.actor}); run the command "
                "with a timeout instead, or in the background with output to a file"
            )
        if pane is not None:
            return await self._execute_in_pane(pane, params, ctx)
        cwd = str(ctx.resolve_path(params.cwd)) if params.cwd else str(ctx.workspace)
        waited = _wait_seconds(params.wait)
        timeout = waited or params.timeout or DEFAULT_TIMEOUT
        spools = self.spools(ctx)
        try:
            result = await ctx.backend.run(
                params.command,
                cwd=cwd,
                env=ctx.policy.command_env(),
                timeout=timeout,
                on_chunk=_teed(ctx, spools),
                cancel=ctx.cancel,
                confinement=ctx.confinement,
            )
        except BackendError as error:
            raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
        finally:
            await _close(spools)
        waited_out = waited is not None
        if len(result.stdout) + len(result.stderr) > SPILL_IN_THREAD_CHARS:
            return await asyncio.to_thread(
                format_result, result, ctx.tool_call_id, timeout, spools=spools, waited=waited_out
            )
        return format_result(result, ctx.tool_call_id, timeout, spools=spools, waited=waited_out)

    async def _execute_in_pane(
        self, backend: TmuxPane, params: RunShellParams, ctx: ToolContext
    ) -> ToolResult:
        """The tmux path: the pane keeps its own cwd unless one is asked for explicitly."""
        cwd = str(ctx.resolve_path(params.cwd)) if params.cwd else None
        spools = self.spools(ctx)
        # Where the person approved it: a shell moved since (a take-over's cd) is refused.
        expect = ctx.cwd if cwd is None else None
        try:
            target = await select_target(
                backend, target=params.target, session=params.session, pane=params.pane
            )
            if params.wait is False:
                pane_id, notices = await backend.dispatch(
                    params.command,
                    target=target,
                    cwd=cwd,
                    expect_cwd=expect,
                    confinement=ctx.confinement,
                )
                notes = [f"note: {n}" for n in _publish(ctx, notices)]
                text = (
                    f"running in pane {pane_id} (not waited for). See its output with "
                    f'tmux_capture_pane target="{pane_id}"; stop it with tmux_send_keys '
                    f'target="{pane_id}" keys=["C-c"].'
                )
                return ToolResult("\n".join([text, *notes]), {"pane_id": pane_id})
            waited = _wait_seconds(params.wait)
            # wait=true means until it exits: only an explicit timeout bounds it (cancel
            # always can, and the command stays in a pane the person sees).
            timeout = waited or params.timeout
            try:
                result = await backend.run(
                    params.command,
                    cwd=cwd,
                    env=ctx.policy.command_env(),
                    timeout=timeout,
                    on_chunk=_teed(ctx, spools),
                    cancel=ctx.cancel,
                    confinement=ctx.confinement,
                    target=target,
                    expect_cwd=expect,
                )
            finally:
                await _close(spools)
        except ShellGuardError as error:
            raise PermissionDenied(error.msg) from None
        except BackendError as error:
            if isinstance(error, NotOurs):
                raise NotFound(f"{backend.actor}: {error.msg}") from None
            raise ExecutionFailed(f"{backend.actor}: {error.msg}") from None
        _publish(ctx, [n for n in result.notices if not n.startswith("still running")])
        if result.timed_out and waited is not None:
            # Buddy: a wait duration that runs out is an error, not an answer; the command
            # stays in its pane, where the person sees it.
            return format_result(
                result, ctx.tool_call_id, waited, left_running=True, spools=spools, waited=True
            )
        return format_result(result, ctx.tool_call_id, timeout, left_running=True, spools=spools)


def _teed(ctx: ToolContext, spools: dict[str, StreamSpool]) -> Any:
    """The live sink, also feeding each stream's spool (info lines are the UI's only)."""

    def sink(stream: Any, text: str) -> None:
        spool = spools.get(stream)
        if spool is not None:
            spool.feed(text)
        ctx.emit(stream, text)

    return sink


async def _close(spools: dict[str, StreamSpool]) -> None:
    """End the saved files and wait until they are on disk: the model may read one next."""
    for spool in spools.values():
        spool.close()
    if any(spool.started for spool in spools.values()):
        await asyncio.to_thread(SPILL.flush, 30.0)


def _wait_seconds(wait: bool | float | str) -> float | None:
    if isinstance(wait, bool | str):
        return None
    return float(wait)


def _publish(ctx: ToolContext, notices: list[str]) -> list[str]:
    """Tell the person too (a recreated pane changes what they are looking at)."""
    for notice in notices:
        ctx.notice(notice)
    return notices


def format_result(
    result: ExecResult,
    call_id: str,
    timeout: float | None,
    *,
    left_running: bool = False,
    spools: dict[str, StreamSpool] | None = None,
    waited: bool = False,
) -> ToolResult:
    """The model's view: exit code, then each stream bounded with a marker saying what was cut.

    ``left_running``: a timed-out command was not killed (a tmux pane keeps it).
    ``spools``: the streams as saved while they ran; a stream whose spool started is cut
    from its saved file (true tail, true count, what the disk cap left out), not from the
    backend's kept head.
    ``waited``: ``timeout`` was the model's own ``wait`` duration (Buddy's words then).

    A finished command reads to the model in Buddy's shape, ``{"exit_code", "stdout",
    "stderr"}`` (``notices`` when there are any); the text form is the person's.
    """
    details: dict[str, Any] = {
        "exit_code": result.exit_code,
        "duration_ms": round(result.duration_ms, 1),
        "truncated_chars": 0,
    }
    if result.cwd is not None:
        details["cwd"] = result.cwd
    parts: list[str] = []
    streams = (
        [("stdout", result.stdout)]
        if result.merged_output
        else [("stdout", result.stdout), ("stderr", result.stderr)]
    )
    cut_notes: list[str] = []
    value: dict[str, Any] = {"exit_code": result.exit_code, "stdout": "", "stderr": ""}
    for stream, text in streams:
        spool = (spools or {}).get(stream)
        if spool is not None and spool.file is not None:
            cut = spooled_view(text, spool, STREAM_RULE)
            if spool.file.incomplete:  # the disk cap, or a disk that refused a write
                cut_notes.append(spool.file.cut_note(f"the saved {stream}"))
        else:
            cut = truncate(text, STREAM_RULE, spill_name=f"{call_id}-{stream}")
        details["truncated_chars"] += cut.cut_chars
        if cut.full_output_path:
            details[f"full_{stream}_path"] = cut.full_output_path
            details.setdefault("full_output_path", cut.full_output_path)
        value[stream] = cut.text
        if text:
            label = "output (stdout and stderr merged)" if result.merged_output else stream
            parts.append(f"{label}:\n{cut.text.rstrip(chr(10))}")
    parts.extend(f"note: {notice}" for notice in result.notices)
    if cut_notes:
        details["cut_notes"] = cut_notes
    notices = [*result.notices, *cut_notes]
    if result.merged_output and parts:
        notices.append("in a tmux pane stdout and stderr arrive merged: stdout holds both")
    if notices:
        value["notices"] = notices
    body = "\n".join(parts) if parts else "(no output)"
    if result.cancelled:
        raise Cancelled(f"the command was cancelled and its process group killed.\n{body}")
    if result.timed_out and waited and left_running:
        raise ExecutionFailed(
            f"timed out waiting for command completion after {format_duration(timeout or 0)}; "
            "it is still running in its pane (not killed): the notes say where. Look with "
            "tmux_capture_pane, stop it with tmux_send_keys C-c, or wait longer next time "
            f"(wait=true, or wait=false and look later).\n{body}"
        )
    if result.timed_out and left_running:
        raise ExecutionFailed(
            f"the command timed out after {timeout or 0:g} s and is still running (not killed); "
            f"the notes say where and how to stop it. Give long commands a larger timeout or "
            f"wait=false.\n{body}"
        )
    if result.timed_out and waited:
        raise ExecutionFailed(
            f"timed out waiting for command completion after {format_duration(timeout or 0)}; "
            f"its process group was killed. Wait longer, or run it in the background.\n{body}"
        )
    if result.timed_out:
        raise ExecutionFailed(
            f"the command timed out after {timeout or 0:g} s and its process group was killed. "
            f"Run it with a larger timeout, or in the background.\n{body}"
        )
    return ToolResult(f"exit code: {result.exit_code}\n{body}", details, value=value)

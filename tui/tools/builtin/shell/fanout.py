"""``run_shell`` with ``hosts``: one command on many hosts of the fleet, and one result.

Why it is built this way:

* **Each host on its own.** Every host runs the command on its own kept connection (or its
  tmux pane, in the app), within the walls the policy approved for that host, under the
  fleet's ``forks`` bound. A host that fails, runs past the timeout or loses its connection
  is reported as such; the others finish.
* **A result the model can read.** Each host's exit code, duration and output (head and
  tail) come back; hosts that answered exactly the same are one group, so twenty identical
  ``uptime`` answers cost one. Every host's full output is saved to a file of its own,
  named in the result.
* **Live, per host.** The person sees every host's lines as they come (prefixed with the
  host's name) and one row per host (``FanoutHostUpdate``) that expands to its output.
"""

from __future__ import annotations

import asyncio
import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tui.errors import AgentTuiError, Cancelled
from tui.events import FanoutHostUpdate
from tui.exec.backend import BackendError, ExecResult
from tui.exec.fleet.fleet import Fleet
from tui.security.fleet_policy import FanoutPlan, HostPlan
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule, save_full_output, truncate

HOST_RULE = TruncationRule.head(1500, keep_tail=700)
"""Each host's output in the result: its head and tail (the whole is in its saved file)."""
TIGHT_RULE = TruncationRule.head(300, keep_tail=200)
"""When many hosts answered differently: less of each, so the result stays readable."""
TIGHT_ABOVE = 8
"""Distinct answers above which each one is cut with ``TIGHT_RULE``."""
ROW_CHARS = 4000
"""Of a host's output carried in its row's event (the UI's expanded row)."""

Status = Literal["ok", "failed", "timeout", "dropped", "refused", "cancelled"]


@dataclass
class HostOutcome:
    """How one host's part ended."""

    name: str
    status: Status
    exit_code: int | None = None
    duration_ms: float = 0.0
    output: str = ""
    reason: str = ""
    notices: list[str] = field(default_factory=list)
    saved: str | None = None

    @property
    def key(self) -> tuple[object, ...]:
        return (self.status, self.exit_code, self.output, self.reason)


class _LinePrefixer:
    """The live stream of one host: whole lines, each led by the host's name."""

    def __init__(self, ctx: ToolContext, name: str, width: int) -> None:
        self.ctx = ctx
        self.prefix = f"{name:<{width}} | "
        self.partial: dict[str, str] = {}
        self.whole: list[str] = []

    def __call__(self, stream: Any, text: str) -> None:
        if stream == "info":
            self.ctx.emit("info", f"{self.prefix}{text}")
            return
        self.whole.append(text)
        buffered = self.partial.get(stream, "") + text
        *lines, rest = buffered.split("\n")
        self.partial[stream] = rest
        if lines:
            self.ctx.emit(stream, "".join(f"{self.prefix}{line}\n" for line in lines))

    def flush(self) -> None:
        for stream, rest in self.partial.items():
            if rest:
                self.ctx.emit(stream, f"{self.prefix}{rest}\n")  # type: ignore[arg-type]
        self.partial.clear()


async def run_fanout(
    command: str,
    ctx: ToolContext,
    fleet: Fleet,
    *,
    timeout: float,
    cwd: str | None,
) -> ToolResult:
    """Run ``command`` on every host of ``ctx.fanout``; one result for all of them."""
    plan = ctx.fanout
    assert plan is not None
    width = max(len(name) for name in [*plan.run, *plan.refused])
    update = _updater(ctx)
    for name in plan.order or [*plan.run, *plan.refused]:
        if name in plan.run:
            update(name, "queued", sandbox=plan.run[name].sandbox)
        elif name in plan.refused:
            update(name, "refused", output=plan.refused[name])
    started = time.perf_counter()
    outcomes = await asyncio.gather(
        *(
            _one_host(command, ctx, fleet, host, timeout, cwd, _LinePrefixer(ctx, name, width))
            for name, host in plan.run.items()
        )
    )
    outcomes = [
        *outcomes,
        *(HostOutcome(name, "refused", reason=reason) for name, reason in plan.refused.items()),
    ]
    await asyncio.to_thread(_save_outputs, outcomes, ctx.tool_call_id)
    for outcome in outcomes:
        if outcome.status != "refused":
            update(
                outcome.name,
                outcome.status,
                exit_code=outcome.exit_code,
                duration_ms=outcome.duration_ms,
                output=truncate(outcome.output or outcome.reason, HOST_RULE).text[:ROW_CHARS],
                saved=outcome.saved,
            )
    if ctx.cancel.is_set():
        raise Cancelled(
            "the fan-out was cancelled; each host's command was stopped.\n"
            + format_outcomes(plan, outcomes, command, (time.perf_counter() - started) * 1000)
        )
    text = format_outcomes(plan, outcomes, command, (time.perf_counter() - started) * 1000)
    ran = [o for o in outcomes if o.status != "refused"]
    codes = {o.exit_code for o in ran}
    details: dict[str, Any] = {
        "exit_code": codes.pop() if len(codes) == 1 else None,
        "truncated_chars": 0,
        "hosts": {
            o.name: {
                "status": o.status,
                "exit_code": o.exit_code,
                "duration_ms": round(o.duration_ms, 1),
                "full_output_path": o.saved,
            }
            for o in outcomes
        },
    }
    failed_everywhere = all(o.status != "ok" for o in ran)
    return ToolResult(text, details, is_error=failed_everywhere)


def _updater(ctx: ToolContext) -> Callable[..., None]:
    def update(name: str, status: Any, **fields: Any) -> None:
        saved = fields.pop("saved", None)
        ctx.on_update(
            FanoutHostUpdate(
                tool_call_id=ctx.tool_call_id,
                host=name,
                status=status,
                full_output_path=saved,
                loop_id=ctx.loop_id,
                **fields,
            )
        )

    return update


async def _one_host(
    command: str,
    ctx: ToolContext,
    fleet: Fleet,
    host: HostPlan,
    timeout: float,
    cwd: str | None,
    sink: _LinePrefixer,
) -> HostOutcome:
    name = host.name
    try:
        opened = await fleet.ensure(name)
    except AgentTuiError as error:
        return HostOutcome(name, "dropped", reason=error.msg)
    backend = opened.backend
    if cwd is not None and not posixpath.isabs(cwd) and not cwd.startswith("~"):
        cwd = posixpath.join(str(opened.workspace), cwd)  # as relative paths mean there
    async with fleet.slots:
        if ctx.cancel.is_set():
            return HostOutcome(name, "cancelled", reason="cancelled before it started")
        _updater(ctx)(name, "running", sandbox=host.sandbox)
        clock = time.perf_counter()
        fleet.started(name, command)
        try:
            result = await backend.run(
                command,
                cwd=cwd,
                env=ctx.policy.command_env(),
                timeout=timeout,
                on_chunk=sink,
                cancel=ctx.cancel,
                confinement=host.confinement,
            )
        except BackendError as error:
            sink.flush()
            spent = (time.perf_counter() - clock) * 1000
            dropped = "connection" in error.msg or "did not answer" in error.msg
            fleet.finished(name, None, failure=error.msg)
            status: Status = "dropped" if dropped else "failed"
            return HostOutcome(name, status, None, spent, "".join(sink.whole), error.msg)
        sink.flush()
    fleet.finished(name, result.exit_code)
    return _outcome(name, result, timeout)


def _outcome(name: str, result: ExecResult, timeout: float) -> HostOutcome:
    output = result.stdout
    if result.stderr:
        output += ("" if not output or output.endswith("\n") else "\n") + result.stderr
    if result.cancelled:
        status: Status = "cancelled"
        reason = "cancelled: its process group was killed"
    elif result.timed_out:
        status = "timeout"
        reason = f"still running after {timeout:g} s: " + (
            "left running in its pane" if result.merged_output else "its process group was killed"
        )
    else:
        status = "ok" if result.exit_code == 0 else "failed"
        reason = ""
    return HostOutcome(
        name,
        status,
        result.exit_code,
        result.duration_ms,
        output,
        reason,
        list(result.notices),
    )


def _save_outputs(outcomes: list[HostOutcome], call_id: str) -> None:
    """Every host's whole output in a file of its own (the model pages it with read_file)."""
    for outcome in outcomes:
        if outcome.status != "refused":
            outcome.saved = save_full_output(f"{call_id}-{outcome.name}", outcome.output)


def format_outcomes(
    plan: FanoutPlan, outcomes: list[HostOutcome], command: str, wall_ms: float
) -> str:
    """The model's view: a summary line, then one section per distinct answer."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    summary = ", ".join(f"{count} {status}" for status, count in counts.items())
    lines = [
        f"ran on {len(plan.run)} of {len(outcomes)} hosts matching {plan.pattern!r} in "
        f"{wall_ms / 1000:.2f} s: {summary}"
    ]
    groups: dict[tuple[object, ...], list[HostOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.key, []).append(outcome)
    rule = HOST_RULE if len(groups) <= TIGHT_ABOVE else TIGHT_RULE
    for members in groups.values():
        first = members[0]
        names = ", ".join(m.name for m in members)
        many = f" ({len(members)} hosts)" if len(members) > 1 else ""
        lines.append(f"== {names}{many}: {_how(first, members)} ==")
        if first.reason and first.status != "ok":
            lines.append(first.reason)
        if first.output:
            lines.append(truncate(first.output, rule).text.rstrip("\n"))
        elif first.status in ("ok", "failed"):
            lines.append("(no output)")
        for member in members:
            lines.extend(f"note ({member.name}): {notice}" for notice in member.notices)
    saved = [o.saved for o in outcomes if o.saved]
    if saved:
        folder = saved[0].rsplit("/", 1)[0]
        lines.append(
            f"each host's full output: {folder}/<call>-<host>.txt (e.g. {saved[0]}); "
            "page one with read_file"
        )
    return "\n".join(lines)


def _how(first: HostOutcome, members: list[HostOutcome]) -> str:
    if first.status in ("ok", "failed"):
        times = [m.duration_ms for m in members]
        took = (
            f"{min(times):.0f}-{max(times):.0f} ms"
            if len(times) > 1 and max(times) - min(times) >= 1
            else f"{times[0]:.0f} ms"
        )
        return f"exit {first.exit_code}, {took}"
    return {
        "timeout": "TIMED OUT",
        "dropped": "CONNECTION FAILED",
        "refused": "not run",
        "cancelled": "cancelled",
    }.get(first.status, first.status)


__all__ = ["HostOutcome", "format_outcomes", "run_fanout"]

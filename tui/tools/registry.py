"""The tool registry: the single dispatch path from a model's raw call to a result.

``execute`` never raises for anything the model sends: unknown tools, broken JSON, wrong
types, policy refusals and tool crashes all come back as ``is_error`` results the model can
act on. Validators live here, on the real path, so no check can exist and go uncalled.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import functools
import json
import time
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import ValidationError

from tui.diffs import bounded_diff
from tui.errors import Cancelled, InvalidArguments, NotFound, ToolError
from tui.events import MAX_ERROR_CHARS, Notice, ToolCallCompleted, ToolCallStarted
from tui.safe_text import clean, clean_json_text, clean_value, excerpt, loads_strict
from tui.security.policy import CallInfo, SecurityPolicy
from tui.security.verdicts import Verdict
from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext
from tui.tools.failures import FailureMemory
from tui.tools.fleet_calls import on_its_host, started_where, with_fleet_arguments
from tui.tools.loops import LoopDetected, LoopMemory, LoopWarning, with_note
from tui.tools.result import ToolResult
from tui.tools.timeouts import ToolTimeouts, run_limited
from tui.tools.truncation import truncate
from tui.tools.unchanged import UnchangedCaptures

MAX_ARGUMENT_BYTES = 4 * 1024 * 1024
"""Raw argument JSON above this is refused before parsing (a runaway model, not a real call)."""

MAX_MESSAGE_CHARS = 2000
"""An error message for the model is cut here: it must never echo megabytes back."""

DefinitionFormat = Literal["openai", "anthropic"]

ENDS_TURN = "ends_turn"
"""In a result's details: the loop detector's third stage stopped this call, and the turn
must end after this response's calls (the loop reads it)."""


class ToolRegistry:
    def __init__(
        self,
        tools: Iterable[Tool[Any]] = (),
        *,
        loops: LoopMemory | None = None,
        timeouts: ToolTimeouts | None = None,
    ) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._aliases: dict[str, str] = {}
        """Other names of registered tools (``bash`` → ``run_shell``), see ``name_aliases``."""
        self.timeouts = timeouts or ToolTimeouts()
        """phi-core's per-tool time limits (``[agent] tool_timeout(s)``)."""
        self.unchanged = UnchangedCaptures()
        self._deferred: set[str] = set()
        """Registered but not sent to the model until ``tool_search`` activates them."""
        self.failures = FailureMemory()
        self.loops = loops or LoopMemory()
        """Ping-pong and no-progress detection (``[agent] loop_*`` thresholds)."""
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any], *, deferred: bool = False) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        for alias in tool.name_aliases:
            self._aliases.setdefault(alias, tool.name)
        if deferred:
            self._deferred.add(tool.name)

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)
        self._deferred.discard(name)

    def active_names(self) -> list[str]:
        """The tools whose definitions go to the model."""
        return [name for name in self._tools if name not in self._deferred]

    def deferred_tools(self) -> list[Tool[Any]]:
        return [tool for name, tool in self._tools.items() if name in self._deferred]

    def activate(self, names: Iterable[str]) -> list[str]:
        """Send these deferred tools from the next request on; returns those newly active.

        Only ever called between requests (``tool_search`` is exclusive, and the loop builds
        each request's definitions after all calls have finished), so no running call sees
        its tool set change under it.
        """
        newly = [name for name in names if name in self._deferred]
        self._deferred.difference_update(newly)
        return newly

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def subset(
        self, names: Iterable[str] | None = None, *, exclude: Iterable[str] = ()
    ) -> ToolRegistry:
        """A registry sharing these tool objects (a sub-agent's), with its own failure and
        loop memory (the same loop thresholds)."""
        wanted = set(self._tools) if names is None else set(names)
        skip = set(exclude)
        subset = ToolRegistry(loops=self.loops.copy_settings(), timeouts=self.timeouts)
        for name, tool in self._tools.items():
            if name in wanted and name not in skip:
                subset.register(tool, deferred=name in self._deferred and names is None)
        return subset

    def needs_approval(
        self, name: str, raw_arguments: str | dict[str, Any] | None, policy: SecurityPolicy
    ) -> bool:
        """Whether this call would stop to ask a person (so the loop runs it alone).

        A call that would fail validation or be refused outright does not ask: it fails fast.
        """
        try:
            tool = self.lookup(clean(name))
            params = self.parse_arguments(tool, raw_arguments, called=clean(name))
            access = with_fleet_arguments(tool.access(params), params, policy)
            needed, risk, _ = policy.precheck(tool.name, access)
        except ToolError:
            return False
        except Exception:  # unknown trouble: run it alone, execute reports it
            return True
        verdict, _ = policy.verdict(tool.name, access, needed, risk)
        return verdict is Verdict.ASK

    def definitions(self, fmt: DefinitionFormat = "openai") -> list[dict[str, Any]]:
        """Tool definitions for a provider request; empty means: omit ``tools`` entirely."""
        active = [tool for name, tool in self._tools.items() if name not in self._deferred]
        if fmt == "anthropic":
            return [tool.anthropic_definition() for tool in active]
        return [tool.openai_definition() for tool in active]

    # -- parsing -----------------------------------------------------------------------------

    def lookup(self, name: str) -> Tool[Any]:
        """The tool called ``name``, or the one that answers to it (``bash`` → ``run_shell``).

        Raises:
            NotFound: with the closest names and the whole tool set.
        """
        tool = self._tools.get(name) or self._tools.get(self._aliases.get(name, ""))
        if tool is not None:
            return tool
        # difflib is quadratic: a megabyte-long name gets no suggestions, not a stalled loop.
        close = (
            difflib.get_close_matches(name, self._tools, n=3, cutoff=0.5)[:3]
            if (len(name) <= 200)
            else []
        )
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        available = ", ".join(sorted(self._tools)) or "none"
        shown = repr(excerpt(name, 80)) if name else "'' (the name is empty)"
        raise NotFound(f"no tool named {shown}.{hint} Available tools: {available}")

    def parse_arguments(
        self, tool: Tool[Any], raw: str | dict[str, Any] | None, *, called: str | None = None
    ) -> ToolParams:
        """Raw JSON text from the model to validated params, with every problem in one error.

        Strict JSON: ``NaN``, ``Infinity``, numbers that overflow and nesting Python cannot
        parse are refused here, with a short message, before any tool code sees them; lone
        surrogates become U+FFFD. A dict (a hook's rewrite) goes through the same text path.
        A call by another of the tool's names (``called``), or a bare string for a tool with a
        ``raw_argument``, is read as ZeroClaw reads one, under ``tool.BareParams``.
        """
        if isinstance(raw, dict):
            try:
                raw = json.dumps(raw)
            except (ValueError, TypeError, RecursionError) as error:
                raise InvalidArguments(
                    f"arguments for {tool.name} cannot be written as JSON: {excerpt(str(error))}"
                ) from None
        text = (raw or "").strip()
        if len(text) > MAX_ARGUMENT_BYTES or len(text.encode("utf-8", "surrogatepass")) > (
            MAX_ARGUMENT_BYTES
        ):
            raise InvalidArguments(
                f"arguments are {len(text)} characters, above the "
                f"{MAX_ARGUMENT_BYTES // (1024 * 1024)} MiB limit; send less at once"
            )
        bare = called is not None and called != tool.name
        try:
            data: Any = loads_strict(clean_json_text(text)) if text else {}
        except ValueError as error:
            if tool.raw_argument is None or text[:1] in ("{", "["):
                raise InvalidArguments(
                    f"arguments for {tool.name} are not valid JSON ({excerpt(str(error), 200)}); "
                    "send one JSON object matching the tool's schema"
                ) from None
            data = text  # a bare command, as ZeroClaw's parser reads `bash>ls -la`
        if isinstance(data, str) and tool.raw_argument is not None:
            data, bare = {tool.raw_argument: data}, True
        if not isinstance(data, dict):
            raise InvalidArguments(
                f"arguments for {tool.name} must be a JSON object, got {type(data).__name__}"
            )
        data = self._apply_aliases(tool, data)
        try:
            if bare and tool.BareParams is not None:
                return tool.BareParams.model_validate(data)
            return tool.parse_params(data)
        except ValidationError as error:
            raise InvalidArguments(describe_validation_error(tool.name, error)) from None
        except ToolError as error:
            raise type(error)(excerpt(error.msg, MAX_MESSAGE_CHARS)) from None
        except Exception as error:  # a validator's own bug is the call's error
            raise InvalidArguments(
                f"arguments for {tool.name} could not be read: "
                f"{type(error).__name__}: {excerpt(str(error), 200)}"
            ) from None

    @staticmethod
    def _apply_aliases(tool: Tool[Any], data: dict[str, Any]) -> dict[str, Any]:
        if not tool.aliases:
            return data
        data = dict(data)
        for alias, real in tool.aliases.items():
            if alias in data and real not in data:
                data[real] = data.pop(alias)
        return data

    # -- execution ---------------------------------------------------------------------------

    async def execute(
        self, name: str, raw_arguments: str | dict[str, Any] | None, ctx: ToolContext
    ) -> ToolResult:
        """Parse, check, authorize, run, bound. Always returns a result, never raises
        (except ``asyncio.CancelledError`` when the calling task itself is cancelled)."""
        started = time.perf_counter()
        waited: list[float] = []
        name = clean(name)
        if isinstance(raw_arguments, str):
            raw_arguments = clean_json_text(raw_arguments)
        elif raw_arguments is not None:
            raw_arguments = clean_value(raw_arguments)
        key = (name, raw_arguments if isinstance(raw_arguments, str) else "")
        result: ToolResult
        tool: Tool[Any] | None = None
        blocked: LoopDetected | None = None
        twin = False
        try:
            tool = self.lookup(name)
            params = self.parse_arguments(tool, raw_arguments, called=name)
            key = (name, params.model_dump_json())
            twin = self.loops.twin(key)  # sent in the same answer: one decision, judged once
            if not twin:
                self.failures.check(key)
                self.loops.check(key)
                self.loops.claim(key)
            result = await self._authorized_run(tool, params, ctx, waited)
            result = self.unchanged.after(tool, params, result)
        except LoopDetected as error:
            blocked = error
            result = ToolResult.error(error.kind, error.msg, loop=error.loop)
            if error.ends_turn:
                result.details[ENDS_TURN] = True
        except ToolError as error:
            result = ToolResult.error(error.kind, error.msg)
        except Exception as error:  # a tool bug must not end the loop
            result = ToolResult.error(
                "ExecutionFailed",
                f"{excerpt(name, 80)} crashed: {type(error).__name__}: {excerpt(str(error), 500)}",
            )
        result = _cleaned(result)
        warning: LoopWarning | None = None
        if blocked is not None:  # not run: neither a failure nor a repeat of the call
            what = "ping-pong" if blocked.loop == "ping_pong" else "no-progress"
            ended = (
                "; it went on after being refused once, so the turn stops here"
                if blocked.ends_turn
                else ""
            )
            ctx.on_update(
                _loop_notice(
                    ctx,
                    f"loop detected: {excerpt(name, 80)} was not run; it would continue a "
                    f"{what} loop the model was already told of{ended}",
                )
            )
        elif not twin:
            if result.is_error:
                self.failures.record_failure(key, result.text)
            else:
                self.failures.record_success(name)
            warning = self.loops.record(key, result)
        if tool is not None:
            try:
                result = await self._bounded(tool, result, ctx)
            except Exception as error:  # e.g. the spill folder is unwritable
                result = ToolResult.error(
                    "ExecutionFailed", f"its output could not be bounded: {excerpt(str(error))}"
                )
        if warning is not None:  # after bounding, so a kept head cannot cut the note off
            noted = with_note(result, warning.note)
            if result.value is not None:  # the model reads the value: the note goes there too
                noted = result.noted(noted.text, warning.note)
            result = noted
            result.details = dict(result.details, loop=warning.loop)
            ctx.on_update(_loop_notice(ctx, warning.notice))
        # The time a person took to answer is not the call's: it is reported apart.
        approval_wait_ms = sum(waited) * 1000
        duration_ms = (time.perf_counter() - started) * 1000 - approval_wait_ms
        ctx.on_update(
            ToolCallCompleted(
                tool_call_id=ctx.tool_call_id,
                tool_name=excerpt(tool.name if tool is not None else name, 200),
                is_error=result.is_error,
                duration_ms=max(0.0, duration_ms),
                approval_wait_ms=approval_wait_ms,
                exit_code=result.details.get("exit_code"),
                error_type=result.details.get("error_type"),
                summary=result.text.strip().split("\n", 1)[0][:200],
                error=result.text.strip()[:MAX_ERROR_CHARS] if result.is_error else "",
                truncated_chars=int(result.details.get("truncated_chars", 0)),
                full_output_path=result.details.get("full_output_path"),
                cut_notes=list(result.details.get("cut_notes", [])),
                child_loop_id=result.child_loop_id,
                loop_id=ctx.loop_id,
                cwd=result.details.get("cwd"),
                diff=_diff_of(result),
            )
        )
        return result

    async def _authorized_run(
        self, tool: Tool[Any], params: ToolParams, ctx: ToolContext, waited: list[float]
    ) -> ToolResult:
        """Authorize, then run; ``waited`` gets the seconds spent asking a person."""
        access = with_fleet_arguments(tool.access(params), params, ctx.policy)
        arguments = params.model_dump(mode="json", exclude_none=True)
        here, where = _starts_in(ctx, arguments)
        call = CallInfo(
            tool_name=tool.name,
            tool_call_id=ctx.tool_call_id,
            arguments=arguments,
            actor=ctx.backend.actor,
            loop_id=ctx.loop_id,
            cancel=ctx.cancel,
            cwd=where,
            hook_permission=ctx.hook_permission,
            hook_reason=ctx.hook_permission_reason,
            preview=functools.partial(
                tool.preview, params, dataclasses.replace(ctx, cwd=here) if here else ctx
            ),
        )
        try:
            authorization = await ctx.policy.authorize(access, call)
        finally:
            waited.append(call.approval_wait)
        actor, hosts, walls = started_where(authorization, ctx)
        ctx.on_update(
            ToolCallStarted(
                tool_call_id=ctx.tool_call_id,
                tool_name=tool.name,
                arguments=arguments,
                command=access.command,
                actor=actor,
                risk=authorization.risk_level,
                cwd=where,
                cwd_elsewhere=ctx.policy.elsewhere(where),
                sandbox=walls if access.command is not None else None,
                hosts=hosts,
                loop_id=ctx.loop_id,
            )
        )
        if ctx.cancel.is_set():
            raise Cancelled(f"{tool.name} was cancelled before it started")
        if authorization.secrets:
            ctx = dataclasses.replace(ctx, secret_allowance=authorization.secrets)
        if authorization.confinement is not None:
            ctx = dataclasses.replace(ctx, confinement=authorization.confinement)
        if call.approved_diff is not None:
            ctx = dataclasses.replace(ctx, approved_diff=call.approved_diff)
        if here is not None:
            ctx = dataclasses.replace(ctx, cwd=here)
        ctx = on_its_host(ctx, authorization)
        result = _cleaned(await self._run_cancellable(tool, params, ctx))
        if not tool.streams_output and result.text and not result.is_error:
            ctx.emit("stdout", result.text)
        return result

    async def _run_cancellable(
        self, tool: Tool[Any], params: ToolParams, ctx: ToolContext
    ) -> ToolResult:
        """Race the tool against the cancel event, so even a tool that never checks it stops;
        with a time limit for the tool, the limit sets the call's own cancel event too."""
        limit = self.timeouts.for_tool(tool.name)
        if limit is None:
            return await self._run_racing(tool, params, ctx)
        return await run_limited(
            tool.name,
            limit,
            self.timeouts.setting(tool.name),
            ctx,
            lambda own: self._run_racing(tool, params, own),
        )

    async def _run_racing(
        self, tool: Tool[Any], params: ToolParams, ctx: ToolContext
    ) -> ToolResult:
        if tool.honours_cancel:
            return await tool.execute(params, ctx)
        task = asyncio.ensure_future(tool.execute(params, ctx))
        waiter = asyncio.ensure_future(ctx.cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            waiter.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        if task.done():
            waiter.cancel()
            return task.result()
        # Cancel set: give the tool a moment to stop on its own (it kills its processes and
        # may return a partial result), then cancel it outright.
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout=2.0)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise Cancelled(f"{tool.name} was cancelled") from None

    async def _bounded(self, tool: Tool[Any], result: ToolResult, ctx: ToolContext) -> ToolResult:
        """Apply the tool's truncation rule unless the tool already bounded its own output."""
        if "truncated_chars" in result.details or not isinstance(result.content, str):
            return result
        text = result.content
        if len(text) <= tool.truncation.limit + tool.truncation.keep_tail:
            return result
        cut = await asyncio.to_thread(
            truncate, text, tool.truncation, spill_name=f"{ctx.tool_call_id}-{tool.name}"
        )
        if cut.cut_chars == 0:
            return result
        details = dict(result.details, truncated_chars=cut.cut_chars)
        if cut.full_output_path:
            details["full_output_path"] = cut.full_output_path
        return ToolResult(cut.text, details, result.is_error, result.child_loop_id, result.value)


def _loop_notice(ctx: ToolContext, message: str) -> Notice:
    """What the person sees when a loop detector speaks to the model."""
    return Notice(message=message, level="warning", loop_id=ctx.loop_id)


def _diff_of(result: ToolResult) -> str | None:
    """The change a file tool made, bounded and clean, for the block and headless output."""
    diff = result.details.get("diff")
    if result.is_error or not isinstance(diff, str) or not diff:
        return None
    return bounded_diff(clean(diff))


def _cleaned(result: ToolResult) -> ToolResult:
    """The result with lone surrogates replaced, so no writer downstream meets one."""
    if isinstance(result.content, str):
        content: Any = clean(result.content)
    else:
        content = [clean(part) if isinstance(part, str) else part for part in result.content]
    value = clean_value(result.value) if result.value is not None else None
    if content == result.content and value == result.value:
        return result
    return ToolResult(content, result.details, result.is_error, result.child_loop_id, value)


def describe_validation_error(tool_name: str, error: ValidationError) -> str:
    """All schema problems in one message, each with where and what was expected; bounded,
    because keys and values come from the model and may be megabytes long."""
    problems = []
    for item in error.errors(include_url=False)[:10]:
        where = ".".join(excerpt(str(part), 60) for part in item["loc"]) or "(arguments)"
        if item["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown argument")
        elif item["type"] == "missing":
            problems.append(f"{where}: required argument missing")
        else:
            got = _short_repr(item.get("input"))
            problems.append(f"{where}: {excerpt(str(item['msg']), 200)} (got {got})")
    message = f"invalid arguments for {tool_name}: " + "; ".join(problems)
    return excerpt(message, MAX_MESSAGE_CHARS)


def _short_repr(value: Any) -> str:
    """``repr`` of at most 60 characters, without building a huge one first (a 10 MB
    string, a 1,000-deep list, an integer past Python's digit limit)."""
    if isinstance(value, str):
        shown = repr(value[:60])
    elif isinstance(value, dict | list):
        shown = f"a {type(value).__name__} of {len(value)} items"
    else:
        try:
            shown = repr(value)
        except ValueError:  # int beyond the str-conversion limit
            shown = f"an {type(value).__name__} too large to show"
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _starts_in(ctx: ToolContext, arguments: dict[str, Any]) -> tuple[str | None, str | None]:
    """On a backend with a shared shell: ``(its directory, where the call runs)`` — the
    second differs when a command asks for a ``cwd`` (resolved from the first). None: the
    workspace, as on every backend without one."""
    target = arguments.get("target")
    here = ctx.backend.shell_cwd(target if isinstance(target, str) else None)
    asked = arguments.get("cwd")
    if here is None or not isinstance(asked, str) or not asked:
        return here, here
    try:
        return here, str(ctx.policy.paths.check(asked, base=here).path)
    except ToolError:
        return here, here

"""The tool registry: the single dispatch path from a model's raw call to a result.

``execute`` never raises for anything the model sends: unknown tools, broken JSON, wrong
types, policy refusals and tool crashes all come back as ``is_error`` results the model can
act on. Validators live here, on the real path, so no check can exist and go uncalled.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import json
import time
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import ValidationError

from tui.events import ToolCallCompleted, ToolCallStarted
from tui.security.policy import CallInfo, SecurityPolicy, Verdict
from tui.tools.base import Tool, ToolParams
from tui.tools.context import ToolContext
from tui.tools.errors import Cancelled, InvalidArguments, NotFound, ToolError
from tui.tools.failures import FailureMemory
from tui.tools.result import ToolResult
from tui.tools.truncation import truncate

MAX_ARGUMENT_BYTES = 4 * 1024 * 1024
"""Raw argument JSON above this is refused before parsing (a runaway model, not a real call)."""

DefinitionFormat = Literal["openai", "anthropic"]


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._deferred: set[str] = set()
        """Registered but not sent to the model until ``tool_search`` activates them."""
        self.failures = FailureMemory()
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any], *, deferred: bool = False) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
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
        """A registry sharing these tool objects (a sub-agent's), with its own failure memory."""
        wanted = set(self._tools) if names is None else set(names)
        skip = set(exclude)
        subset = ToolRegistry()
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
            tool = self.lookup(name)
            params = self.parse_arguments(tool, raw_arguments)
            access = tool.access(params)
            needed, risk, _ = policy.precheck(tool.name, access)
        except ToolError:
            return False
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
        tool = self._tools.get(name)
        if tool is not None:
            return tool
        close = difflib.get_close_matches(name, self._tools, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        available = ", ".join(sorted(self._tools)) or "none"
        raise NotFound(f"no tool named {name!r}.{hint} Available tools: {available}")

    def parse_arguments(self, tool: Tool[Any], raw: str | dict[str, Any] | None) -> ToolParams:
        """Raw JSON text from the model to validated params, with every problem in one error."""
        if isinstance(raw, dict):
            data: Any = raw
        else:
            text = (raw or "").strip()
            if len(text.encode("utf-8", "surrogatepass")) > MAX_ARGUMENT_BYTES:
                raise InvalidArguments(
                    f"arguments are {len(text)} characters, above the "
                    f"{MAX_ARGUMENT_BYTES // (1024 * 1024)} MiB limit; send less at once"
                )
            try:
                data = json.loads(text) if text else {}
            except (json.JSONDecodeError, RecursionError, UnicodeError) as error:
                raise InvalidArguments(
                    f"arguments for {tool.name} are not valid JSON ({error}); send one JSON "
                    "object matching the tool's schema"
                ) from None
        if not isinstance(data, dict):
            raise InvalidArguments(
                f"arguments for {tool.name} must be a JSON object, got {type(data).__name__}"
            )
        data = self._apply_aliases(tool, data)
        try:
            return tool.parse_params(data)
        except ValidationError as error:
            raise InvalidArguments(describe_validation_error(tool.name, error)) from None
        except (RecursionError, ValueError, TypeError) as error:
            raise InvalidArguments(
                f"arguments for {tool.name} could not be read: {error}"
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
        raw_text = raw_arguments if isinstance(raw_arguments, str) else json.dumps(raw_arguments)
        key = (name, raw_text or "")
        result: ToolResult
        tool: Tool[Any] | None = None
        try:
            tool = self.lookup(name)
            params = self.parse_arguments(tool, raw_arguments)
            key = (name, params.model_dump_json())
            self.failures.check(key)
            result = await self._authorized_run(tool, params, ctx)
        except ToolError as error:
            result = ToolResult.error(error.kind, error.msg)
        except Exception as error:  # a tool bug must not end the loop
            result = ToolResult.error(
                "ExecutionFailed", f"{name} crashed: {type(error).__name__}: {error}"
            )
        if result.is_error:
            self.failures.record_failure(key, result.text)
        else:
            self.failures.record_success(name)
        if tool is not None:
            result = await self._bounded(tool, result, ctx)
        duration_ms = (time.perf_counter() - started) * 1000
        ctx.on_update(
            ToolCallCompleted(
                tool_call_id=ctx.tool_call_id,
                tool_name=name,
                is_error=result.is_error,
                duration_ms=duration_ms,
                exit_code=result.details.get("exit_code"),
                error_type=result.details.get("error_type"),
                summary=result.text.strip().split("\n", 1)[0][:200],
                truncated_chars=int(result.details.get("truncated_chars", 0)),
                full_output_path=result.details.get("full_output_path"),
                child_loop_id=result.child_loop_id,
                loop_id=ctx.loop_id,
            )
        )
        return result

    async def _authorized_run(
        self, tool: Tool[Any], params: ToolParams, ctx: ToolContext
    ) -> ToolResult:
        access = tool.access(params)
        arguments = params.model_dump(mode="json", exclude_none=True)
        call = CallInfo(
            tool_name=tool.name,
            tool_call_id=ctx.tool_call_id,
            arguments=arguments,
            actor=ctx.backend.actor,
            loop_id=ctx.loop_id,
            cancel=ctx.cancel,
        )
        authorization = await ctx.policy.authorize(access, call)
        ctx.on_update(
            ToolCallStarted(
                tool_call_id=ctx.tool_call_id,
                tool_name=tool.name,
                arguments=arguments,
                command=access.command,
                actor=ctx.backend.actor,
                risk=authorization.risk_level,
                loop_id=ctx.loop_id,
            )
        )
        if ctx.cancel.is_set():
            raise Cancelled(f"{tool.name} was cancelled before it started")
        if authorization.secrets:
            ctx = dataclasses.replace(ctx, secret_allowance=authorization.secrets)
        result = await self._run_cancellable(tool, params, ctx)
        if not tool.streams_output and result.text and not result.is_error:
            ctx.emit("stdout", result.text)
        return result

    async def _run_cancellable(
        self, tool: Tool[Any], params: ToolParams, ctx: ToolContext
    ) -> ToolResult:
        """Race the tool against the cancel event, so even a tool that never checks it stops."""
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
        return ToolResult(cut.text, details, result.is_error, result.child_loop_id)


def describe_validation_error(tool_name: str, error: ValidationError) -> str:
    """All schema problems in one message, each with where and what was expected."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        if item["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown argument")
        elif item["type"] == "missing":
            problems.append(f"{where}: required argument missing")
        else:
            got = repr(item.get("input"))
            got = got if len(got) <= 60 else got[:57] + "..."
            problems.append(f"{where}: {item['msg']} (got {got})")
    return f"invalid arguments for {tool_name}: " + "; ".join(problems)

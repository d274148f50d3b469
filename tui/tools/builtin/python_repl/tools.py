"""``python_repl``: a persistent Python interpreter on the session's target.

Why it is built this way:

* The interpreter is started through the execution backend's ``spawn``, so it runs where the
  agent's commands run (this machine, a container, an SSH host), lazily on the first call,
  and lives as long as the tool object: one interpreter per session.
* A small driver program (``driver.py``, stdlib only, run with
  ``python3 -u -c``) speaks a framed protocol over a *private* copy of its stdout. File
  descriptors 1 and 2 become pipes the driver reads in two threads and forwards as framed
  chunks, so anything the user's code (or a subprocess it starts, or a C extension) writes is
  data inside a frame and can never be taken for the protocol. Each frame carries a
  per-interpreter nonce and its exact length.
* The end of a call is a sync point: after the code ran, the driver writes a fresh random
  sentinel into both pipes and replies only once both reader threads have passed it, so all
  output printed by the call arrives before its reply, in one piece.
* The driver reads requests in a thread of its own. When the host closes its stdin (session
  end, timeout, cancel) that thread kills the driver's whole process group at once, even while
  user code is busy; the backend's TERM/KILL escalation covers code that holds the GIL.
* What is kept of a call's output is bounded (a head and a tail) however much is printed; the
  UI sees every chunk live through ``ctx.emit``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any, ClassVar

from pydantic import Field

from tui.errors import ExecutionFailed, InvalidArguments
from tui.exec.backend import BackendError, ExecutionBackend
from tui.security.confinement import Confinement
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.python_repl.interpreter import (
    CallOutput,
    FrameReader,
    Interpreter,
    InterpreterGone,
    close_quietly,
    driver_program,
    spawn_host,
)
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule, truncate

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 600.0
START_TIMEOUT = 30.0
"""Seconds for a new interpreter to say it is ready (an SSH host may be slow to start one)."""
PING_TIMEOUT = 10.0
"""Seconds an idle interpreter gets to answer the liveness check at the start of a call."""

OUTPUT_RULE = TruncationRule.head(4000, keep_tail=1000)
VALUE_RULE = TruncationRule.head(3000, keep_tail=500)
TRACEBACK_RULE = TruncationRule.head(1500, keep_tail=2500)


class PythonReplParams(ToolParams):
    code: str = Field(
        default="",
        description="Python code to run. If the last statement is an expression its value is "
        "shown, as in the interactive interpreter. May be empty only with restart=true.",
    )
    timeout: float = Field(
        default=DEFAULT_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Seconds before the interpreter is killed (default {DEFAULT_TIMEOUT:g}, "
        f"at most {MAX_TIMEOUT:g}). Killing it loses all its state.",
    )
    restart: bool = Field(
        default=False,
        description="Start a fresh interpreter (all variables and imports forgotten) before "
        "running the code.",
    )


class PythonReplTool(Tool[PythonReplParams]):
    name = "python_repl"
    label = "Python"
    Params = PythonReplParams
    permission = PermissionMode.DANGER_FULL_ACCESS
    truncation = TruncationRule.head(9000)
    aliases: ClassVar[dict[str, str]] = {"source": "code", "script": "code", "python": "code"}
    honours_cancel = True
    streams_output = True
    description = """Run Python code in a persistent interpreter; variables, imports and
functions survive between calls, like a notebook or the interactive prompt.

When to use: data exploration and calculations done step by step (load once, inspect many
times); trying out an API or a snippet; anything easier in Python than in shell one-liners.
When NOT to use: running the project's programs, tests or scripts (use run_shell); reading or
editing files (use read_file, edit_file); long-running servers (use run_shell, or a tmux pane).
Disambiguation: runs where the agent's commands run, started in the workspace, with the
python3 found there. If the last statement is an expression its repr is shown as Out[n].
stdout and stderr are returned together, bounded to their head and tail. An exception returns
its traceback and keeps the state. A timeout or cancel kills the interpreter and all state is
lost (the result says so); exit() ends it too. input() is not available (stdin is empty).
restart=true starts fresh on purpose.
Examples: {"code": "import pandas as pd\\ndf = pd.read_csv('data.csv')\\ndf.shape"};
{"code": "df.describe()"}; {"code": "sum(range(10))", "timeout": 5};
{"code": "", "restart": true}"""

    def __init__(self, python: str = "python3") -> None:
        self.python = python
        self._interpreter: Interpreter | None = None
        self._walls: Confinement | None = None
        """The sandbox walls the interpreter was started in (None: the mode's own)."""
        self._lock = asyncio.Lock()
        self._lost_note: str | None = None
        """Said at the start of the next call: why the state of the last interpreter is gone."""
        self._closing: set[asyncio.Future[None]] = set()

    def access(self, params: PythonReplParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.DANGER_FULL_ACCESS, subject=params.code, acting=True
        )

    @property
    def pid(self) -> int | None:
        """The running interpreter's process id on its target, if one runs."""
        return self._interpreter.pid if self._interpreter is not None else None

    @property
    def nonce(self) -> str | None:
        return self._interpreter.nonce if self._interpreter is not None else None

    async def execute(self, params: PythonReplParams, ctx: ToolContext) -> ToolResult:
        if not params.code.strip() and not params.restart:
            raise InvalidArguments("code is empty; give Python code to run (or restart=true)")
        async with self._lock:
            return await self._execute(params, ctx)

    async def _execute(self, params: PythonReplParams, ctx: ToolContext) -> ToolResult:
        started = time.monotonic()
        notes: list[str] = []
        output = CallOutput()
        if params.restart and self._interpreter is not None:
            await self._stop()
            notes.append("restarted: a fresh interpreter, all earlier state cleared")
        self._lost_note, lost = None, self._lost_note
        interpreter = await self._ready_interpreter(ctx, output, notes, lost)
        details: dict[str, Any] = {
            "pid": interpreter.pid,
            "python": interpreter.python,
            "executable": interpreter.executable,
        }
        if not params.code.strip():
            text = "\n".join([*(f"note: {n}" for n in notes), "Interpreter ready (no code run)."])
            return ToolResult(text, dict(details, truncated_chars=0))
        interpreter.calls += 1
        number = interpreter.calls
        details["execution_count"] = number
        try:
            await interpreter.send({"op": "exec", "id": number, "code": params.code})
            reply, stopped = await self._await_reply(interpreter, ctx, output, params.timeout)
        except InterpreterGone:
            reply, stopped = None, "died"
        except asyncio.CancelledError:
            # The caller itself was cancelled: the code may still be running, so the
            # interpreter is killed rather than left busy for the next call.
            self._abandon("a fresh interpreter: the last one was killed when its call was aborted")
            raise
        details["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
        if stopped is not None:
            return await self._stopped_result(stopped, interpreter, ctx, output, notes, params)
        assert reply is not None
        if reply.get("status") == "exit":
            await self._stop()
            self._lost_note = "a fresh interpreter: the code of the previous call called exit()"
        return self._reply_result(reply, number, ctx, output, notes, details)

    async def _ready_interpreter(
        self, ctx: ToolContext, output: CallOutput, notes: list[str], lost: str | None
    ) -> Interpreter:
        """A live interpreter for this call: the current one if it answers, else a new one."""
        host = spawn_host(ctx.backend)
        current = self._interpreter
        if current is not None and current.backend is not host:
            await self._stop()
            notes.append("the target changed: started a new interpreter there, state lost")
            current = None
        if current is not None and ctx.confinement != self._walls:
            await self._stop()
            was = self._walls.label if self._walls else "the mode's sandbox"
            now = ctx.confinement.label if ctx.confinement else "the mode's sandbox"
            notes.append(
                f"this call was approved for {now}, the interpreter ran in {was}: started a new "
                "one inside the new walls, and all earlier state is lost"
            )
            current = None
        if current is not None and not await self._answers(current, ctx, output):
            await self._stop()
            notes.append(
                "the interpreter had died since the last call (killed from outside or crashed): "
                "restarted it, and all earlier state (variables, imports) is lost"
            )
            current = None
        if current is None:
            if lost:
                notes.append(lost)
            current = await self._start(host, ctx)
            self._interpreter = current
        return current

    async def _answers(
        self, interpreter: Interpreter, ctx: ToolContext, output: CallOutput
    ) -> bool:
        """True when the idle interpreter answers a ping; output it printed since is kept."""
        if interpreter.process.returncode is not None:
            return False
        try:
            await interpreter.send({"op": "ping"})
            async with asyncio.timeout(PING_TIMEOUT):
                while True:
                    frame = await interpreter.reader.next()
                    if frame.get("t") == "pong":
                        return True
                    if frame.get("t") == "out":
                        output.add(ctx, str(frame.get("s")), str(frame.get("d", "")))
        except (InterpreterGone, TimeoutError, ValueError):
            return False

    async def _start(self, host: ExecutionBackend, ctx: ToolContext) -> Interpreter:
        nonce = secrets.token_hex(8)
        env = ctx.policy.command_env({"PYTHONIOENCODING": "utf-8"})
        argv = [self.python, "-u", "-c", driver_program(), nonce, str(ctx.workspace)]
        try:
            process = await host.spawn(argv, env=env, confinement=ctx.confinement)
            self._walls = ctx.confinement
        except BackendError as error:
            raise ExecutionFailed(
                f"cannot start {self.python} on {host.actor}: {error.msg}"
            ) from None
        interpreter = Interpreter(process, FrameReader(process, nonce), nonce, host)
        try:
            async with asyncio.timeout(START_TIMEOUT):
                frame = await interpreter.reader.next()
        except (InterpreterGone, TimeoutError, ValueError):
            said = interpreter.reader.stray_text()
            await close_quietly(process)
            raise ExecutionFailed(
                f"{self.python} on {host.actor} did not start as a Python interpreter"
                + (f": {said[-2000:]}" if said else " (no answer)")
                + "; check that Python 3 is installed there"
            ) from None
        if frame.get("t") != "ready":
            await close_quietly(process)
            raise ExecutionFailed(f"{self.python} on {host.actor} spoke an unknown protocol")
        interpreter.pid = frame.get("pid")
        interpreter.python = str(frame.get("python", ""))
        interpreter.executable = str(frame.get("executable", ""))
        return interpreter

    async def _await_reply(
        self, interpreter: Interpreter, ctx: ToolContext, output: CallOutput, timeout: float
    ) -> tuple[dict[str, Any] | None, str | None]:
        """The ``done`` frame, or why none came: ``timeout``, ``cancelled`` or ``died``."""

        async def collect() -> dict[str, Any]:
            while True:
                frame = await interpreter.reader.next()
                kind = frame.get("t")
                if kind == "out":
                    output.add(ctx, str(frame.get("s")), str(frame.get("d", "")))
                elif kind == "done":
                    return frame

        reading = asyncio.ensure_future(collect())
        cancelled = asyncio.ensure_future(ctx.cancel.wait())
        try:
            done, _ = await asyncio.wait(
                {reading, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            cancelled.cancel()
            if not reading.done():
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)
        if reading in done:
            try:
                return reading.result(), None
            except (InterpreterGone, ValueError):
                return None, "died"
        return None, "cancelled" if ctx.cancel.is_set() else "timeout"

    async def _stopped_result(
        self,
        why: str,
        interpreter: Interpreter,
        ctx: ToolContext,
        output: CallOutput,
        notes: list[str],
        params: PythonReplParams,
    ) -> ToolResult:
        """The interpreter is (or is being) gone mid-call: kill what is left and say so."""
        await self._stop()
        status = interpreter.process.returncode  # known once closing has reaped it
        stray = interpreter.reader.stray_text()
        if stray:
            output.kept.add("\n" + stray)
        lost = "all its state (variables, imports, definitions) is lost"
        if why == "timeout":
            kind = "ExecutionFailed"
            head = (
                f"the code ran past its {params.timeout:g} s timeout, so the interpreter was "
                f"killed and {lost}; the next call starts a fresh interpreter. Give long work "
                "a larger timeout."
            )
            self._lost_note = "a fresh interpreter: the last one was killed at a timeout"
        elif why == "cancelled":
            kind = "Cancelled"
            head = (
                f"cancelled: the interpreter was killed and {lost}; the next call starts a "
                "fresh interpreter."
            )
            self._lost_note = "a fresh interpreter: the last one was killed by a cancel"
        else:
            kind = "ExecutionFailed"
            how = f" (exit status {status})" if status is not None else ""
            head = (
                f"the interpreter died while running the code{how} (os._exit, a crash, running "
                f"out of memory or a kill from outside), so {lost}; the next call starts a fresh "
                "interpreter."
            )
            self._lost_note = "a fresh interpreter: the last one died during the previous call"
        body, details = self._bounded(ctx, output, None, None)
        text = "\n".join([head, *(f"note: {n}" for n in notes), *body])
        return ToolResult.error(kind, text, **details, stopped=why)

    def _reply_result(
        self,
        reply: dict[str, Any],
        number: int,
        ctx: ToolContext,
        output: CallOutput,
        notes: list[str],
        details: dict[str, Any],
    ) -> ToolResult:
        status = reply.get("status")
        value = reply.get("value") if status == "ok" else None
        error = str(reply.get("error", "")) if status == "error" else None
        if value is not None:
            ctx.emit("stdout", f"Out[{number}]: {value}\n")
        if error:
            ctx.emit("stderr", error)
        body, bounded = self._bounded(ctx, output, value, error, number)
        details.update(bounded, status=status)
        lines = [*(f"note: {n}" for n in notes)]
        if status == "exit":
            code = reply.get("code")
            details["system_exit_code"] = code
            lines.append(
                f"the code called exit() (SystemExit, code {code!r}): the interpreter ended and "
                "all its state is lost; the next call starts a fresh interpreter."
            )
        lines.extend(body)
        if not body and status != "exit":
            lines.append("(no output)")
        text = "\n".join(lines)
        if status == "error":
            return ToolResult.error(
                "ExecutionFailed",
                "the code raised an exception (the interpreter and its state are kept)\n" + text,
                **details,
            )
        return ToolResult(text, details)

    def _bounded(
        self,
        ctx: ToolContext,
        output: CallOutput,
        value: Any,
        error: str | None,
        number: int | None = None,
    ) -> tuple[list[str], dict[str, Any]]:
        """Each part cut to its own rule, so a flood of output never hides the traceback."""
        parts: list[str] = []
        details: dict[str, Any] = {
            "truncated_chars": 0,
            "output_chars": output.kept.total,
            "stderr_chars": output.stderr_chars,
        }
        text = output.kept.text
        details["truncated_chars"] += output.kept.omitted
        pieces = [("output", text, OUTPUT_RULE), ("value", value, VALUE_RULE)]
        pieces.append(("traceback", error, TRACEBACK_RULE))
        for label, piece, rule in pieces:
            if not piece:
                continue
            cut = truncate(piece, rule, spill_name=f"{ctx.tool_call_id}-{label}")
            details["truncated_chars"] += cut.cut_chars
            if cut.full_output_path:
                details[f"full_{label}_path"] = cut.full_output_path
                details.setdefault("full_output_path", cut.full_output_path)
            shown = cut.text.rstrip("\n")
            parts.append(f"Out[{number}]: {shown}" if label == "value" else shown)
        return parts, details

    def _abandon(self, note: str) -> None:
        """Kill the interpreter without waiting (from a cancelled task, which cannot await)."""
        interpreter, self._interpreter = self._interpreter, None
        self._lost_note = note
        if interpreter is not None:
            task = asyncio.ensure_future(close_quietly(interpreter.process))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def _stop(self) -> None:
        interpreter, self._interpreter = self._interpreter, None
        if interpreter is not None:
            await close_quietly(interpreter.process)

    async def aclose(self) -> None:
        """Stop the interpreter (and everything it started); the session calls this at its end."""
        await self._stop()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    close = aclose


def python_repl_tools(python: str = "python3") -> list[Tool[Any]]:
    """The persistent interpreter tool; ``python`` is the interpreter to start on the target."""
    return [PythonReplTool(python)]

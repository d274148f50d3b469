"""Running ripgrep for the search tools, and the limits both engines share.

ripgrep runs through ``ctx.backend.run`` with every argument quoted, so the same code searches
a remote target that has ``rg`` installed. Its failures become errors the model can act on,
its non-fatal complaints one note; the Python engine stops on the same time limit through
``Deadline``.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tui.errors import Cancelled, ExecutionFailed, InvalidArguments
from tui.exec.backend import BackendError
from tui.tools.builtin.files.access import (
    SKIP_DIRS,
    is_local,
)
from tui.tools.context import ToolContext

SearchEngine = Literal["auto", "rg", "python"]

SEARCH_TIMEOUT = 120.0
_EXIT_MARK = "__agent_tui_rg_exit="
_RG_TYPE = "agentglob"


@dataclass
class RgOutput:
    stdout: str
    stderr: str
    exit_code: int | None
    notices: list[str] = field(default_factory=list)
    """From the backend, e.g. output kept only up to its limit: the answer is incomplete."""


async def ripgrep_binary(ctx: ToolContext, engine: SearchEngine) -> str | None:
    """The ``rg`` to run, or None for the pure-Python engine."""
    if engine == "python":
        if not is_local(ctx.backend):
            raise ExecutionFailed(
                f"the Python search engine only reads local files, and the target is "
                f"{ctx.backend.actor}"
            )
        return None
    if not is_local(ctx.backend):
        return "rg"
    found = await asyncio.to_thread(shutil.which, "rg")
    if found is None and engine == "rg":
        raise ExecutionFailed("ripgrep (rg) is not installed on this machine")
    return found


def type_filter(glob: str, *, exclude: bool = False) -> list[str]:
    """A file-name filter that, unlike ``-g``, leaves ``.gitignore`` in charge."""
    return ["--type-add", f"{_RG_TYPE}:{glob}", "-T" if exclude else "-t", _RG_TYPE]


def skip_globs() -> list[str]:
    """Given last, so they override a broad user glob such as ``**/*``."""
    args: list[str] = []
    for name in sorted(SKIP_DIRS):
        args += ["-g", f"!{name}"]
    return args


async def run_ripgrep(
    ctx: ToolContext, rg: str, args: list[str], cwd: Path, *, head: int | None = None
) -> RgOutput:
    """Run ``rg`` on the target; ``head`` stops it after that many output lines.

    Through ``head`` the pipeline's exit status would be head's, so rg's own status comes
    back as a marker line on stderr.
    """
    command = " ".join(shlex.quote(part) for part in [rg, *args])
    if head is not None:
        command = f'{{ {command}; echo "{_EXIT_MARK}$?" >&2; }} | head -n {head}'
    try:
        result = await ctx.backend.run(
            command,
            cwd=str(cwd),
            env=ctx.policy.command_env(),
            timeout=SEARCH_TIMEOUT,
            cancel=ctx.cancel,
        )
    except BackendError as error:
        raise ExecutionFailed(f"{ctx.backend.actor}: {error.msg}") from None
    if result.cancelled:
        raise Cancelled("the search was cancelled")
    if result.timed_out:
        raise ExecutionFailed(
            f"the search timed out after {SEARCH_TIMEOUT:g} s; narrow the path or the glob"
        )
    exit_code = result.exit_code
    stderr_lines = []
    for line in result.stderr.splitlines():
        if line.startswith(_EXIT_MARK):
            value = line[len(_EXIT_MARK) :]
            exit_code = int(value) if value.isdigit() else exit_code
        else:
            stderr_lines.append(line)
    stderr = "\n".join(stderr_lines).strip()
    if exit_code == 127 or (exit_code and "rg: command not found" in stderr):
        raise ExecutionFailed(
            f"ripgrep (rg) is not installed on {ctx.backend.actor}; install it, or use "
            "run_shell with grep -rn / find"
        )
    if exit_code == 2 and ("regex parse error" in stderr or "error parsing glob" in stderr):
        raise InvalidArguments(f"ripgrep refused the pattern: {stderr}")
    if exit_code not in (0, 1, 141) and not result.stdout:
        raise ExecutionFailed(f"ripgrep failed (exit {exit_code}): {stderr[:1000]}")
    return RgOutput(result.stdout, stderr, exit_code, list(result.notices))


class Deadline:
    """The Python engine's stop signal: cancelled, or out of time (ripgrep has the backend's
    timeout; a thread cannot be killed, so the walk checks this between files)."""

    def __init__(self, ctx: ToolContext, seconds: float = SEARCH_TIMEOUT) -> None:
        self._cancel = ctx.cancel
        self._end = time.monotonic() + seconds
        self.expired = False

    def __call__(self) -> bool:
        if self._cancel.is_set():
            return True
        if time.monotonic() > self._end:
            self.expired = True
        return self.expired

    def note(self) -> str:
        if self.expired:
            return (
                f"note: the search stopped after {SEARCH_TIMEOUT:g} s and is incomplete; "
                "narrow the path or the glob\n"
            )
        return ""


def first_error(stderr: str) -> str | None:
    """rg's non-fatal complaints (an unreadable file) become one note, not a failure."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if not lines:
        return None
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return f"note: some paths could not be searched: {lines[0][:300]}{more}"

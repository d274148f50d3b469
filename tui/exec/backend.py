"""The execution backend contract: where commands run and files are read and written.

Tools only ever talk to an ``ExecutionBackend``, so each tool works on every target (local,
tmux, container, SSH). Backends that can only run commands inherit ``CommandBackend`` and
get file I/O over ``cat`` for free, instead of writing it once per backend.
"""

from __future__ import annotations

import asyncio
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from tui.errors import AgentTuiError
from tui.security.confinement import OUTSIDE, Confinement

StreamName = Literal["stdout", "stderr", "info"]
ChunkSink = Callable[[StreamName, str], None]
"""Receives decoded output while a command runs (``info`` for backend notices)."""


class BackendError(AgentTuiError):
    """The target itself failed: a dead host, a stopped container, a killed tmux server."""

    title = "Backend error"


class CommandTimeout(BackendError):
    """A command ran past its timeout; its process group was killed."""

    title = "Command timed out"


@dataclass
class ExecResult:
    """How a command ended. ``exit_code`` is None when it was killed (timeout or cancel)."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    duration_ms: float = 0.0
    timed_out: bool = False
    cancelled: bool = False
    merged_output: bool = False
    """stdout and stderr arrive as one stream (a tmux pane): stderr is then empty."""
    notices: list[str] = field(default_factory=list)
    """Things the person and the model should know (a pane recreated, a drain cut short)."""
    cwd: str | None = None
    """Where a shared shell stands after the command (its next command starts there);
    None for a fresh process per command or when the shell did not say."""


def cancelled_early(
    cancel: asyncio.Event | None, *, merged_output: bool = False
) -> ExecResult | None:
    """The result of a command whose cancel came before it started; None when it did not.

    Every backend's ``run`` asks this first, so a call cancelled while it waited (for its
    approval, for its turn) never starts, on any target.
    """
    if cancel is None or not cancel.is_set():
        return None
    return ExecResult(exit_code=None, cancelled=True, merged_output=merged_output)


class InteractiveProcess(ABC):
    """A long-lived process on the target with byte pipes (a tmux control client, say).

    Backends that can start one set ``SUPPORTS_SPAWN`` and implement ``spawn``; tmux control
    mode rides on it identically locally, in a container and over SSH.
    """

    @abstractmethod
    async def write(self, data: bytes) -> None:
        """Send bytes to the process's stdin. Raises BackendError when it is gone."""

    @abstractmethod
    async def read(self, size: int = 65536) -> bytes:
        """The next bytes of stdout as they come; ``b""`` at end of stream."""

    @abstractmethod
    async def close(self) -> None:
        """Close stdin, then stop the process if it does not exit on its own."""

    @property
    @abstractmethod
    def returncode(self) -> int | None:
        """The exit status once it ended, else None."""


class ExecutionBackend(ABC):
    """Runs commands and moves files on one target.

    Optional abilities are a method plus a flag (``SUPPORTS_SPAWN`` and ``spawn``). A backend
    with tmux panes a person can watch answers a protocol of its own instead, beside this one:
    ``tui.exec.tmux_pane.TmuxPane``, asked through ``tmux_pane(backend)``.
    """

    SUPPORTS_SPAWN: bool = False

    @property
    @abstractmethod
    def actor(self) -> str:
        """Who runs the command, for the person approving it: ``local``, ``ssh:host`` …"""

    @abstractmethod
    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
        confinement: Confinement | None = None,
    ) -> ExecResult:
        """Run ``command`` in a shell and wait for it.

        Args:
            command: A shell command line, run by ``bash -c`` (or ``sh -c`` where no bash).
            cwd: Working directory on the target; None keeps the backend's default.
            env: The whole environment for the command (already reduced by the policy).
            timeout: Seconds before the command's whole process group is killed.
            on_chunk: Receives output as it arrives.
            cancel: When set, the command's process group is killed and ``cancelled`` is True.
            confinement: The sandbox walls the command was approved for; None: what the
                session's mode lets run unasked. Backends without a sandbox ignore it (the
                policy then labels every command "no sandbox").

        Returns:
            The exit code and the collected output.

        Raises:
            BackendError: the target could not run anything at all.
        """

    @abstractmethod
    async def read_file(self, path: str) -> bytes:
        """Whole file contents. Raises FileNotFoundError, IsADirectoryError, PermissionError."""

    @abstractmethod
    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        """Replace ``path`` with ``data``, creating parent folders when asked."""

    async def spawn(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str] | None = None,
        confinement: Confinement | None = None,
        own_program: bool = False,
    ) -> InteractiveProcess:
        """Start ``argv`` with piped stdin/stdout (stderr merged or discarded).

        Only for ``SUPPORTS_SPAWN`` backends. Sandboxed like ``run`` (``confinement``), except
        ``own_program``: agent-tui's own helper (a tmux control client), never the agent's.

        Raises:
            BackendError: the target cannot start it.
        """
        raise BackendError(f"{self.actor} cannot start interactive processes")

    def shell_cwd(self, pane_id: str | None = None) -> str | None:
        """Where a shared shell stands now: its next command, and relative paths, start there.

        None (the default) when every command starts afresh in the workspace; tmux backends
        answer with the directory their pane's shell last reported.
        """
        return None

    async def close(self) -> None:  # noqa: B027 - optional hook, default does nothing
        """Release connections, servers, containers the backend started."""


class CommandBackend(ExecutionBackend):
    """File I/O built on ``run`` alone, for targets reachable only through a shell.

    ``write_file`` never types data into a shell: the bytes go on the command's stdin, via
    ``run_with_stdin`` which each subclass provides.
    """

    @abstractmethod
    async def run_with_stdin(self, command: str, data: bytes) -> ExecResult:
        """Run ``command`` with ``data`` on its stdin, output collected (not streamed)."""

    async def read_file(self, path: str) -> bytes:
        quoted = shlex.quote(path)
        # A file tool's read, judged by the path guard (as a local read is), not a command.
        result = await self.run(read_guard(quoted) + f"base64 < {quoted}", confinement=OUTSIDE)
        raise_for_file_status(path, result, "cannot read")
        import base64

        return base64.b64decode("".join(result.stdout.split()))

    async def write_file(self, path: str, data: bytes, *, make_parents: bool = True) -> None:
        quoted = shlex.quote(path)
        prefix = f'mkdir -p -- "$(dirname -- {quoted})" && ' if make_parents else ""
        result = await self.run_with_stdin(f"{prefix}cat > {quoted}", data)
        if result.exit_code != 0:
            raise PermissionError(f"{path}: {result.stderr.strip() or 'cannot write'}")


def read_guard(quoted: str) -> str:
    """Shell that stops a read of a directory (exit 21) or a missing path (exit 2) first.

    Every shell-based ``read_file`` starts with it, so ``raise_for_file_status`` can turn
    those statuses into the same exceptions the local backend raises.
    """
    return (
        f"if [ -d {quoted} ]; then echo 'is a directory' >&2; exit 21; fi; "
        f"if [ ! -e {quoted} ]; then echo 'no such file' >&2; exit 2; fi; "
    )


def raise_for_file_status(path: str, result: ExecResult, what: str) -> None:
    """Raise the OSError a shell file command's exit status stands for (none for 0).

    21 is a directory and 2 a missing path (see ``read_guard``); anything else is reported
    as not permitted, with the command's own words when it printed any.
    """
    if result.exit_code == 0:
        return
    if result.exit_code == 21:
        raise IsADirectoryError(path)
    if result.exit_code == 2:
        raise FileNotFoundError(path)
    raise PermissionError(f"{path}: {result.stderr.strip() or what}")

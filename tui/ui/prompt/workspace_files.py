"""The workspace's files for ``@`` completion, listed on the target and never naming a secret.

The listing runs on the session's backend (so an SSH or container workspace lists *its* files)
but off the watched tmux pane: a tmux backend's ``host`` runs it, as it does file reads. In a
git repository ``git ls-files`` honours ``.gitignore``; the repository is attacker input, so
the configuration that would run a program from a plain listing (``core.fsmonitor``) is
switched off on the command line. Elsewhere a bounded ``find`` skips hidden and bulky folders.
Every name is then judged by the policy's path guard and secrets are dropped.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tui.exec.backend import BackendError, ExecutionBackend
from tui.security.paths import PathGuard

MAX_FILES = 20_000
"""A listing stops here; a bigger tree is still completed from its first files."""
LIST_TIMEOUT = 10.0
SKIPPED_DIRS = ("node_modules", "__pycache__", "target", "dist", "build", "venv")
_GIT = (
    "git -c core.fsmonitor=false -c core.untrackedCache=false "
    "ls-files -z --cached --others --exclude-standard"
)


def _find_command() -> str:
    prune = " -o ".join(["-name '.*'", *(f"-name {shlex.quote(d)}" for d in SKIPPED_DIRS)])
    return f"find . -mindepth 1 -maxdepth 8 \\( {prune} \\) -prune -o -type f -print0"


def listing_command() -> str:
    """One shell line: git's view when inside a work tree, else the bounded walk."""
    return (
        "if git rev-parse --is-inside-work-tree >/dev/null 2>&1; "
        f"then {_GIT}; else {_find_command()}; fi | head -z -n {MAX_FILES}"
    )


def _runner(backend: ExecutionBackend) -> ExecutionBackend:
    """The backend that runs a command without typing it into the watched pane."""
    host = getattr(backend, "host", None)
    return host if isinstance(host, ExecutionBackend) else backend


async def list_files(
    backend: ExecutionBackend,
    workspace: Path,
    guard: PathGuard,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """Workspace-relative file paths, secrets left out; empty when the listing fails."""
    try:
        result = await _runner(backend).run(
            listing_command(), cwd=str(workspace), env=env, timeout=LIST_TIMEOUT
        )
    except BackendError:
        return []
    names = [name.removeprefix("./") for name in result.stdout.split("\0") if name.strip()]
    return await asyncio.to_thread(_without_secrets, names, workspace, guard)


def _without_secrets(names: list[str], workspace: Path, guard: PathGuard) -> list[str]:
    kept = []
    for name in names:
        if "\n" in name or "\x00" in name:
            continue
        if guard.withheld(os.path.join(str(workspace), name)):
            continue
        kept.append(name)
    return kept


@dataclass
class FileCache:
    """One listing per prompt session: taken on the first ``@``, dropped after each send."""

    backend: ExecutionBackend
    workspace: Path
    guard: PathGuard
    env: Mapping[str, str] | None = None
    _task: asyncio.Task[list[str]] | None = field(default=None, repr=False)

    async def files(self) -> list[str]:
        if self._task is None:
            self._task = asyncio.ensure_future(
                list_files(self.backend, self.workspace, self.guard, self.env)
            )
        return await asyncio.shield(self._task)

    def forget(self) -> None:
        """The next ``@`` lists again (files come and go between prompts)."""
        self._task = None

"""The workspace's files as a prompt reaches them: listed for ``@`` completion, read for ``@path``.

Both run on the session's backend (so an SSH or container workspace lists and reads *its*
files) and both go through the policy's path guard, so a secret is never offered and never
attached. The UI asks for them through the session; the work is done here.

The listing runs off the watched tmux pane: a tmux backend's ``host`` runs it, as it does file
reads. In a git repository ``git ls-files`` honours ``.gitignore``; the repository is attacker
input, so the configuration that would run a program from a plain listing (``core.fsmonitor``)
is switched off on the command line. Elsewhere a bounded ``find`` skips hidden and bulky
folders. Every name is then judged by the path guard and secrets are dropped.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path

from tui.exec.backend import BackendError, ExecutionBackend
from tui.exec.tmux_pane import tmux_pane
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
    pane = tmux_pane(backend)
    return pane.host if pane is not None else backend


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


async def read_mentioned(backend: ExecutionBackend, guard: PathGuard, raw: str) -> bytes:
    """The bytes of the file an ``@raw`` names, read through the guard on the target.

    Raises:
        PermissionDenied: the guard refuses the path (a secret, or outside the workspace in
            workspace-only mode).
        FileNotFoundError: a local path that does not exist.
        IsADirectoryError: a local path that is not a regular file.
        BackendError: the target could not read it.
    """
    path = guard.resolve(raw)  # raises PermissionDenied for a secret
    if guard.local:
        info = path.stat()  # FileNotFoundError when missing
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(raw)
    return await backend.read_file(str(path))

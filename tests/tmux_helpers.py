"""Shared pieces of the tmux tests: private sockets, a clean environment, a tmux CLI call.

Every test server runs on its own ``tmux -L`` socket and is killed by the fixture that made
it, so no test touches the person's tmux (``TMUX`` is removed from what tmux sees) or
another test's server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tui.exec.tmux.backend import TmuxBackend

SHELL = "bash --norc --noprofile"
"""Test panes skip root's slow .bashrc; the product bootstraps whatever shell it finds."""

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}


def new_socket_name() -> str:
    return f"atui-test-{os.getpid()}-{secrets.token_hex(4)}"


def instance_sockets(socket_name: str) -> list[str]:
    """``socket_name`` and the per-instance servers beside it (``socket_name-<id>``)."""
    directory = Path(os.environ.get("TMUX_TMPDIR") or "/tmp", f"tmux-{os.getuid()}")
    found = [p.name for p in directory.glob(f"{socket_name}-*") if not p.name.endswith(".lock")]
    return sorted({socket_name, *found})


def kill_server(socket_name: str) -> None:
    """Stop the test's tmux server, and the per-instance servers ``open_target`` started
    beside it, and remove their socket files (tmux leaves them behind)."""
    directory = os.environ.get("TMUX_TMPDIR") or "/tmp"
    for name in instance_sockets(socket_name):
        subprocess.run(
            ["tmux", "-L", name, "kill-server"],
            env=clean_env(),
            capture_output=True,
            check=False,
        )
        for suffix in ("", ".lock"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, f"tmux-{os.getuid()}", name + suffix))


async def tmux(socket_name: str, *args: str, check: bool = True) -> str:
    """Run the tmux CLI on ``socket_name`` (as a person or a foreign program would)."""
    process = await asyncio.create_subprocess_exec(
        "tmux",
        "-L",
        socket_name,
        *args,
        env=clean_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    if check and process.returncode != 0:
        raise AssertionError(f"tmux {' '.join(args)} failed: {err.decode()}")
    return out.decode()


class OutputWatch:
    """A pane-output listener that sees ``pattern`` even when it spans two chunks."""

    def __init__(self, pattern: bytes) -> None:
        self.pattern = pattern
        self.tail = b""
        self.seen = asyncio.Event()

    def __call__(self, data: bytes) -> None:
        window = self.tail + data
        if self.pattern in window:
            self.seen.set()
        self.tail = window[-len(self.pattern) :]

    async def wait(self) -> None:
        await self.seen.wait()


@contextlib.asynccontextmanager
async def tmux_backends(
    socket_name: str, cwd: Path, owner: str = "atui-test"
) -> AsyncIterator[Callable[..., TmuxBackend]]:
    """Makes ``TmuxBackend``s on one private socket (options overridable); closes them all."""
    from tui.exec.local import LocalBackend
    from tui.exec.tmux.backend import TmuxBackend

    made: list[TmuxBackend] = []

    def make(**kwargs: Any) -> TmuxBackend:
        options: dict[str, Any] = {
            "socket_name": socket_name,
            "shell": SHELL,
            "owner": owner,
            "config": "/dev/null",
            "default_cwd": str(cwd),
            "env": clean_env(),
        }
        options.update(kwargs)
        backend = TmuxBackend(LocalBackend(default_cwd=str(cwd)), **options)
        made.append(backend)
        return backend

    try:
        yield make
    finally:
        for backend in made:
            await backend.close()

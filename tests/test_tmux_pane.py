"""``TmuxPane``: which backends have the ability, and what follows from it.

``tmux_pane(backend)`` is the one question asked of a backend; these tests hold its answer for
each real backend, and the places that depend on it: the tmux tools are offered only with a
pane, and the work that must not be typed into the watched shell (listing the workspace's
files, starting a Python interpreter) goes to the machine the panes live on.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.test_tmux_tools import TMUX_TOOLS
from tui.exec.backend import ExecutionBackend
from tui.exec.container.backend import ContainerBackend
from tui.exec.local import LocalBackend
from tui.exec.prompt_files import _runner
from tui.exec.ssh.backend import SSHBackend
from tui.exec.tmux.backend import TmuxBackend
from tui.exec.tmux_pane import TmuxPane, tmux_pane
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.builtin.python_repl.interpreter import spawn_host


def tmux_on(host: ExecutionBackend, workspace: Path) -> TmuxBackend:
    """A tmux backend riding ``host``; nothing is started until a command needs it."""
    return TmuxBackend(host, socket_name="atui-never-started", default_cwd=str(workspace))


def test_a_tmux_backend_is_a_pane_and_no_other_backend_is(tmp_path: Path) -> None:
    local = LocalBackend(default_cwd=str(tmp_path))
    tmux = tmux_on(local, tmp_path)
    assert tmux_pane(tmux) is tmux
    assert isinstance(tmux, TmuxPane)
    others: list[ExecutionBackend] = [local, SSHBackend("agent@192.0.2.1")]
    if shutil.which("podman"):
        others.append(ContainerBackend("never-started", engine="podman"))
    for backend in others:
        assert tmux_pane(backend) is None, backend.actor


def test_the_tmux_tools_come_only_with_a_pane(tmp_path: Path) -> None:
    local = LocalBackend(default_cwd=str(tmp_path))
    with_pane = {tool.name for tool in builtin_tools(backend=tmux_on(local, tmp_path))}
    without = {tool.name for tool in builtin_tools(backend=local)}
    assert TMUX_TOOLS.issubset(with_pane)
    assert not TMUX_TOOLS & without
    assert "run_shell" in with_pane & without


def test_work_that_must_not_be_typed_goes_to_the_panes_machine(tmp_path: Path) -> None:
    local = LocalBackend(default_cwd=str(tmp_path))
    tmux = tmux_on(local, tmp_path)
    assert _runner(tmux) is local
    assert spawn_host(tmux) is local
    assert _runner(local) is local
    assert spawn_host(local) is local


def test_a_backend_that_cannot_start_processes_has_no_interpreter(tmp_path: Path) -> None:
    from tui.errors import ExecutionFailed

    class NoSpawn(LocalBackend):
        SUPPORTS_SPAWN = False

    with pytest.raises(ExecutionFailed, match="cannot start a persistent interpreter"):
        spawn_host(NoSpawn(default_cwd=str(tmp_path)))

"""python_repl and notebook_edit on the remote targets: a real OpenSSH host and a podman container.

Both tools reach their target only through the ``ExecutionBackend`` contract (``spawn`` for the
interpreter, ``read_file``/``write_file`` for the notebook), so these run them through the
real registry and a full-auto ``SecurityPolicy`` wired as a remote session wires it
(``local_paths=False``, the target's home), with the workspace a folder *on the target*.

The SSH host is the throwaway sshd of ``tests/sshd.py`` (an unprivileged login user); the
container is the session's host-like one (``/usr`` bind-mounted, so python3 exists inside; the
busybox image has no Python). Processes left behind are looked for on the target itself, with
``ps`` run through ``backend.run``, by strings only our interpreter and its child carry.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat as _nbformat
import pytest

from tests.conftest import Harness
from tests.container_image import ENGINE, Container
from tests.sshd import SshServer
from tests.test_ssh_backend import make_backend, sshd
from tests.waiting import until
from tui.exec.backend import ExecutionBackend
from tui.exec.container.backend import ContainerBackend
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.builtin.python_repl.tools import PythonReplTool
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult

__all__ = ["sshd"]  # the session's sshd fixture, shared with the SSH backend tests

nbformat: Any = _nbformat

DEADLINE = 20.0
"""Generous bound for anything that should happen 'soon' on a loaded CI machine."""


@dataclass
class RemoteTarget:
    """A remote session's wiring: its backend, the workspace on the target, what proves
    that code really ran there."""

    kind: str
    backend: ExecutionBackend
    workspace: str
    home: str
    identity_code: str
    """Python whose value (a repr) is ``identity`` only when it runs on this target."""
    identity: str
    owner: str
    """The account the target's files are written as."""
    harness: Harness

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return await self.harness.call(name, arguments)

    @property
    def repl(self) -> PythonReplTool:
        tool = self.harness.registry.get("python_repl")
        assert isinstance(tool, PythonReplTool)
        return tool


async def _home(backend: ExecutionBackend) -> str:
    """The target's home, found the way the app finds it (``tui/targets.py``)."""
    result = await backend.run('printf %s "$HOME"', timeout=DEADLINE)
    assert result.exit_code == 0 and result.stdout.startswith("/"), result
    return result.stdout


async def _make_workspace(backend: ExecutionBackend, path: str) -> None:
    made = await backend.run(f"mkdir -p -- {shlex.quote(path)}", timeout=DEADLINE)
    assert made.exit_code == 0, made.stderr


def _harness(backend: ExecutionBackend, workspace: str, home: str) -> Harness:
    """The registry and policy as ``build_session`` builds them for a remote target."""
    policy = SecurityPolicy(
        Path(workspace),
        approval_mode=ApprovalMode.FULL_AUTO,
        local_paths=False,
        target_home=home,
    )
    registry = ToolRegistry(builtin_tools(backend, None))
    return Harness(Path(workspace), policy, registry, backend)


async def _ssh_target(server: SshServer) -> RemoteTarget:
    probe = make_backend(server)
    try:
        home = await _home(probe)
        workspace = f"{home}/atui-ws-{secrets.token_hex(4)}"
        await _make_workspace(probe, workspace)
    finally:
        await probe.close()
    backend = make_backend(server, default_cwd=workspace)
    return RemoteTarget(
        kind="ssh",
        backend=backend,
        workspace=workspace,
        home=home,
        identity_code="import getpass\ngetpass.getuser()",
        identity=repr(server.user),
        owner=server.user,
        harness=_harness(backend, workspace, home),
    )


async def _container_target(container: Container) -> RemoteTarget:
    probe = ContainerBackend(container.name, engine=ENGINE)
    home = await _home(probe)
    workspace = f"/tmp/atui-ws-{secrets.token_hex(4)}"
    await _make_workspace(probe, workspace)
    await probe.close()
    backend = ContainerBackend(container.name, engine=ENGINE, default_cwd=workspace)
    return RemoteTarget(
        kind="container",
        backend=backend,
        workspace=workspace,
        home=home,
        # pid 1 of the test containers is their ``sleep``; on this machine it is not.
        identity_code="open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0]",
        identity="b'sleep'",
        owner="root",
        harness=_harness(backend, workspace, home),
    )


@pytest.fixture(params=["ssh", "container"])
async def target(request: pytest.FixtureRequest) -> AsyncIterator[RemoteTarget]:
    """Each remote target in turn; the interpreter is stopped and the workspace removed after."""
    if request.param == "ssh":
        remote = await _ssh_target(request.getfixturevalue("sshd"))
    else:
        remote = await _container_target(request.getfixturevalue("hostlike_container"))
    try:
        yield remote
    finally:
        await remote.repl.aclose()
        await remote.backend.run(f"rm -rf -- {shlex.quote(remote.workspace)}", timeout=DEADLINE)
        await remote.backend.close()


# --- looking for processes on the target ----------------------------------------------------


async def live_on_target(backend: ExecutionBackend, needle: str) -> list[str]:
    """``pid stat args`` of the target's live processes whose command line holds ``needle``.

    The filter runs here, not in the probe's shell, so the probe cannot match itself; zombies
    are left out (a container's pid 1 ``sleep`` never reaps the orphans it inherits).
    """
    listed = await backend.run("ps -eww -o pid=,stat=,args=", timeout=DEADLINE)
    assert listed.exit_code == 0, listed.stderr
    found = []
    for line in listed.stdout.splitlines():
        fields = line.split(None, 2)
        if len(fields) == 3 and needle in fields[2] and not fields[1].startswith(("Z", "X")):
            found.append(line[:200])
    return found


async def wait_gone(backend: ExecutionBackend, needle: str) -> None:
    left: list[str] = []

    async def gone() -> bool:
        left[:] = await live_on_target(backend, needle)
        return not left

    await until(gone, f"{needle} to end on the target", DEADLINE, every=0.05, detail=lambda: left)


def marker() -> str:
    """A ``sleep`` argument no other process on the target carries."""
    return str(7_000_000 + secrets.randbelow(1_000_000))


async def run(remote: RemoteTarget, code: str, **extra: object) -> ToolResult:
    return await remote.call("python_repl", {"code": code, **extra})


# --- python_repl ----------------------------------------------------------------------------


async def test_python_repl_keeps_state_on_the_target(target: RemoteTarget) -> None:
    first = await run(target, "x = 40\nx + 2")
    assert not first.is_error, first.text
    assert first.text.strip() == "Out[1]: 42"
    pid = first.details["pid"]

    second = await run(target, f"import os\nprint('x is', x, os.getcwd())\n{target.identity_code}")
    assert not second.is_error, second.text
    assert second.text.splitlines() == [
        f"x is 40 {target.workspace}",
        f"Out[2]: {target.identity}",
    ]
    assert second.details["pid"] == pid

    failed = await run(target, "def boom():\n    return 1 / 0\nboom()")
    assert failed.is_error
    assert "ExecutionFailed" in failed.text and "ZeroDivisionError" in failed.text
    assert "state are kept" in failed.text
    assert "line 2, in boom" in failed.text  # the traceback quotes the call's own code

    kept = await run(target, "x + 1")
    assert not kept.is_error, kept.text
    assert kept.text.strip() == "Out[4]: 41"
    assert kept.details["pid"] == pid


async def test_python_repl_timeout_kills_it_and_the_next_call_is_fresh(
    target: RemoteTarget,
) -> None:
    primed = await run(target, "secret = 1")
    assert not primed.is_error, primed.text
    nonce = target.repl.nonce
    assert nonce is not None
    assert await live_on_target(target.backend, nonce)  # the probe sees the interpreter

    timed_out = await run(
        target, "print('working', flush=True)\nimport time\ntime.sleep(60)", timeout=1
    )
    assert timed_out.is_error
    assert "1 s timeout" in timed_out.text and "lost" in timed_out.text
    assert "working" in timed_out.text  # output printed before the kill still arrives
    assert timed_out.details["stopped"] == "timeout"
    await wait_gone(target.backend, nonce)

    fresh = await run(target, "'secret' in globals()")
    assert not fresh.is_error, fresh.text
    assert "Out[1]: False" in fresh.text
    assert "killed at a timeout" in fresh.text
    assert fresh.details["pid"] != primed.details["pid"]
    assert target.repl.nonce != nonce


async def test_python_repl_aclose_leaves_nothing_running(target: RemoteTarget) -> None:
    child_marker = marker()
    started = await run(
        target,
        f"import subprocess\nchild = subprocess.Popen(['sleep', '{child_marker}'])\nchild.pid",
    )
    assert not started.is_error, started.text
    nonce = target.repl.nonce
    assert nonce is not None
    assert len(await live_on_target(target.backend, nonce)) == 1
    assert len(await live_on_target(target.backend, f"sleep {child_marker}")) == 1

    await target.repl.aclose()
    assert target.repl.pid is None
    await wait_gone(target.backend, nonce)
    await wait_gone(target.backend, f"sleep {child_marker}")


# --- notebook_edit --------------------------------------------------------------------------


async def test_notebook_edit_creates_and_replaces_on_the_target(target: RemoteTarget) -> None:
    relative = "notebooks/new.ipynb"
    remote_path = f"{target.workspace}/{relative}"

    inserted = await target.call(
        "notebook_edit",
        {"path": relative, "action": "insert", "cell_index": 0, "source": "x = 1\nprint(x)"},
    )
    assert not inserted.is_error, inserted.text
    assert "Created" in inserted.text and "1 cell" in inserted.text
    assert inserted.details["path"] == remote_path and inserted.details["created"]

    replaced = await target.call(
        "notebook_edit",
        {
            "path": relative,
            "action": "replace",
            "cell_index": 0,
            "cell_type": "markdown",
            "source": "# Results\nall good",
        },
    )
    assert not replaced.is_error, replaced.text
    assert "Replaced cell 0 (code → markdown)" in replaced.text

    data = await target.backend.read_file(remote_path)
    notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
    nbformat.validate(notebook)
    assert [(c.cell_type, c.source) for c in notebook.cells] == [
        ("markdown", "# Results\nall good")
    ]
    assert notebook.cells[0].id == inserted.details["after"]["id"]  # replace keeps the id

    owner = await target.backend.run(f"stat -c %U {shlex.quote(remote_path)}", timeout=DEADLINE)
    assert owner.stdout.strip() == target.owner
    if target.kind == "container":
        assert not Path(remote_path).exists()  # written inside, not on this machine

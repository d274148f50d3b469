"""A tmux server per instance: twenty instances started at the same moment all work, none
disturbs another (nor one already running), and what a dead instance left is swept.

Real processes (``multiprocessing`` with a fork server: each instance is a process of its own,
forked from one that imported agent-tui once, so the twenty do not each spend half a second of
processor time importing it), the real ``open_target`` the app and headless mode call, real
tmux servers on private base sockets.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from tests.test_loop import DEADLINE as LOOP_WAIT
from tests.tmux_helpers import clean_env, kill_server, needs_tmux, new_socket_name
from tests.waiting import until
from tui.config import Settings
from tui.config.sections.targets import TmuxSettings
from tui.exec import procs
from tui.exec.local import LocalBackend
from tui.exec.tmux.backend import TmuxBackend
from tui.exec.tmux.server import Place
from tui.targets import TargetChoice, open_target

pytestmark = [needs_tmux, pytest.mark.timeout(240)]

INSTANCES = 20


def sockets(base: str) -> list[str]:
    folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp", f"tmux-{os.getuid()}")
    return sorted(p.name for p in folder.glob(f"{base}*") if not p.name.endswith(".lock"))


def kill_all(base: str) -> None:
    for name in sockets(base):
        kill_server(name)


@pytest.fixture
def base() -> Iterator[str]:
    name = new_socket_name()
    yield name
    kill_all(name)


def settings_for(base: str) -> Settings:
    return Settings(tmux=TmuxSettings(socket_name=base))


async def _one_instance(base: str, workspace: Path, barrier: Barrier | None) -> str:
    if barrier is not None:
        await asyncio.to_thread(barrier.wait)
    target = await open_target(
        TargetChoice(tmux=True), settings_for(base), workspace, interactive=False
    )
    try:
        result = await target.backend.run("echo at:$(pwd)", timeout=60)
        return result.stdout.strip().splitlines()[-1]
    finally:
        await target.backend.close()


def instance_main(base: str, workspace: str, barrier: Barrier, results: Any) -> None:
    """One instance in its own interpreter: everything imported, then all start at once."""
    try:
        said = asyncio.run(_one_instance(base, Path(workspace), barrier))
        results.put((workspace, said))
    except BaseException as error:
        results.put((workspace, f"FAILED {type(error).__name__}: {error}"))


@pytest.mark.slow
async def test_twenty_instances_started_at_once_all_work_and_spare_a_running_one(
    base: str, tmp_path: Path
) -> None:
    resident_ws = tmp_path / "resident"
    resident_ws.mkdir()
    resident = await open_target(
        TargetChoice(tmux=True), settings_for(base), resident_ws, interactive=False
    )
    backend = resident.backend
    assert isinstance(backend, TmuxBackend)
    try:
        marker = f"resident-{os.getpid()}"
        await backend.run(f"export MARK={marker}", timeout=30)
        workspaces = []
        for index in range(INSTANCES):
            folder = tmp_path / f"ws{index}"
            folder.mkdir()
            workspaces.append(str(folder.resolve()))
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        barrier = context.Barrier(INSTANCES)
        results = context.Queue()
        workers = [
            context.Process(target=instance_main, args=(base, ws, barrier, results))
            for ws in workspaces
        ]
        started = time.monotonic()
        for worker in workers:
            worker.start()
        said = dict(await asyncio.to_thread(lambda: [results.get(timeout=180) for _ in workers]))
        took = time.monotonic() - started
        for worker in workers:
            await asyncio.to_thread(worker.join, 30)
        failed = {ws: text for ws, text in said.items() if text != f"at:{ws}"}
        print(f"{INSTANCES - len(failed)}/{INSTANCES} instances worked, in {took:.1f} s")
        assert not failed, failed
        # The instance that was running all along still has its shell, state and all.
        again = await backend.run("echo $MARK", timeout=30)
        assert again.stdout.strip().splitlines()[-1] == marker
        # Each instance closed its own server: only the resident's is left.
        await until(
            lambda: sockets(base) == [backend.socket_name], "the servers to exit", LOOP_WAIT
        )
    finally:
        await backend.close()


def tagged_processes(marker: str) -> list[procs.Proc]:
    found = []
    for name in os.listdir("/proc"):
        proc = procs.read(int(name)) if name.isdigit() else None
        if proc is not None and marker in proc.command:
            found.append(proc)
    return found


async def test_a_killed_instances_session_and_jobs_are_swept_at_the_next_start(
    base: str, tmp_path: Path
) -> None:
    """SIGKILL leaves the shell and a detached job; the next start stops both and says so."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = f"{300 + secrets.randbelow(10**7) / 10**7:.7f}"  # no other test's sleep matches
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from tests.test_tmux_instances import settings_for\n"
        "from tui.targets import TargetChoice, open_target\n"
        "async def main():\n"
        f"    t = await open_target(TargetChoice(tmux=True), settings_for({base!r}),\n"
        f"                          Path({str(workspace)!r}), interactive=False)\n"
        f"    await t.backend.run('(sleep {marker} &) ; echo started', timeout=30)\n"
        "    print('ready', flush=True)\n"
        f"    await t.backend.run('sleep {marker}', timeout=600)\n"
        "asyncio.run(main())\n"
    )
    repo = Path(__file__).resolve().parents[1]
    victim = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=repo, stdout=subprocess.PIPE, env=clean_env()
    )
    assert victim.stdout is not None
    assert (await victim.stdout.readline()).strip() == b"ready"
    # The detached job and the foreground one, both in the pane's shell's session.
    await until(lambda: len(tagged_processes(f"sleep {marker}")) >= 2, "the sleeps", LOOP_WAIT)
    victim.kill()
    await victim.wait()
    left = sockets(base)
    assert len(left) == 1 and tagged_processes(f"sleep {marker}")  # what SIGKILL leaves

    target = await open_target(
        TargetChoice(tmux=True), settings_for(base), workspace, interactive=False
    )
    try:
        (swept,) = [n for n in target.notices if n.startswith("swept ")]
        assert f"pid {victim.pid}" in swept and f"sleep {marker}" in swept
        # What the commands left, not the pane's own shell nor the sandbox's walls around it.
        ran = swept.split("stopped what still ran there: ")[1].split(", ")
        assert all(item.startswith(f"sleep {marker} (pid ") for item in ran), swept
        assert tagged_processes(f"sleep {marker}") == []
        assert left[0] not in sockets(base)
    finally:
        await target.backend.close()
    await until(lambda: sockets(base) == [], "nothing left at all", LOOP_WAIT)


async def test_a_start_killed_before_it_marked_its_session_is_swept_all_the_same(
    base: str, tmp_path: Path
) -> None:
    """A SIGKILL between starting the server and marking its session leaves a session with
    no marks: the server's environment names the agent-tui that started it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    socket = f"{base}-dead0001"
    script = (
        "import subprocess\n"
        "from tui.exec.local import LocalBackend\n"
        "from tui.exec.tmux.server import Place\n"
        f"argv = Place(LocalBackend(), {socket!r}).argv('new-session', '-d', '-s', 'x', 'cat')\n"
        "subprocess.run(argv, check=True)\n"
    )
    repo = Path(__file__).resolve().parents[1]
    starter = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=repo, env=clean_env()
    )
    assert await starter.wait() == 0
    assert socket in sockets(base)

    target = await open_target(
        TargetChoice(tmux=True), settings_for(base), workspace, interactive=False
    )
    try:
        (swept,) = [n for n in target.notices if n.startswith("swept ")]
        assert f"pid {starter.pid}" in swept
        assert socket not in sockets(base)
    finally:
        await target.backend.close()


async def test_a_swept_server_whose_lingering_client_never_takes_its_exit_is_gone(
    base: str, tmp_path: Path
) -> None:
    """tmux's server, told to end, waits for each client to take its exit and refuses every
    connection meanwhile. The control client of a killed agent-tui can linger and never take
    it (here: stopped); the server then lived on with no session, its socket file removed by
    the sweep, out of every later sweep's sight."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    socket = f"{base}-dead0002"
    script = (
        "import os, signal, subprocess\n"
        "from tui.exec.local import LocalBackend\n"
        "from tui.exec.tmux.server import Place\n"
        f"argv = Place(LocalBackend(), {socket!r}).argv('-C', 'new-session', '-s', 'x', 'cat')\n"
        "client = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "client.stdout.readline()\n"  # the session is up: tmux has answered
        "os.kill(client.pid, signal.SIGSTOP)\n"  # a client that will never take its exit
        "print(client.pid, flush=True)\n"
    )
    repo = Path(__file__).resolve().parents[1]
    starter = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=repo, env=clean_env(), stdout=subprocess.PIPE
    )
    assert starter.stdout is not None
    client = int(await starter.stdout.readline())
    assert await starter.wait() == 0  # the starter is gone, its client lingers
    server_pid = Place(LocalBackend(), socket).server().cmd("display", "-p", "#{pid}").stdout
    server = procs.read(int(server_pid[0]))
    assert server is not None and procs.read(client) is not None
    try:
        target = await open_target(
            TargetChoice(tmux=True), settings_for(base), workspace, interactive=False
        )
        try:
            assert [n for n in target.notices if n.startswith("swept ")]
            assert procs.read(server.pid) is None, "the server lives on, out of sight"
            assert socket not in sockets(base)
        finally:
            await target.backend.close()
    finally:
        os.kill(client, signal.SIGCONT)
    await until(lambda: procs.read(client) is None, "the lingering client to end", LOOP_WAIT)


async def test_a_server_started_by_a_live_process_is_left_alone(base: str, tmp_path: Path) -> None:
    """The same unmarked session, but its starter still runs (an instance mid-start)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    socket = f"{base}-live0001"
    argv = Place(LocalBackend(), socket).argv("new-session", "-d", "-s", "x", "cat")
    await asyncio.to_thread(subprocess.run, argv, check=True, env=clean_env())
    target = await open_target(
        TargetChoice(tmux=True), settings_for(base), workspace, interactive=False
    )
    try:
        assert not [n for n in target.notices if n.startswith("swept ")]
        assert socket in sockets(base)
    finally:
        await target.backend.close()


async def test_a_normal_close_stops_detached_jobs(base: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = f"{301 + secrets.randbelow(10**7) / 10**7:.7f}"
    target = await open_target(
        TargetChoice(tmux=True), settings_for(base), workspace, interactive=False
    )
    await target.backend.run(f"(sleep {marker} &) ; nohup sleep {marker} >/dev/null 2>&1 &")
    await until(lambda: len(tagged_processes(f"sleep {marker}")) >= 2, "the jobs", LOOP_WAIT)
    await target.backend.close()
    assert tagged_processes(f"sleep {marker}") == []
    await until(lambda: sockets(base) == [], "the server to exit", LOOP_WAIT)

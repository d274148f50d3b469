"""Nothing a command started outlives what started it: the agent, a cancel, the last session.

Real processes throughout: the installed ``agent-tui -p`` killed with SIGKILL while its command
and that command's background jobs run; cancels on the local backend and in real tmux panes
(bash and zsh, private sockets); a pane reused by the next agent. Processes are found in
``/proc`` by a unique marker in their arguments, and every wait is a polled condition with a
deadline (``/proc`` gives no notification).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.test_headless_cli import (  # noqa: F401 - fixtures used by name
    Cli,
    ServerProcess,
    cli,
    headless,
    model_server,
    read_lines_until,
)
from tests.test_loop import DEADLINE as LOOP_WAIT
from tests.test_loop import live_with, shell, tools_step
from tests.tmux_helpers import SHELL, kill_server, needs_tmux, new_socket_name, tmux_backends
from tests.waiting import until, until_blocking
from tui.errors import Cancelled
from tui.exec.local import LocalBackend
from tui.exec.tmux.backend import TmuxBackend
from tui.tools.builtin.shell.tools import format_result

GONE_WITHIN = 2.0
DEADLINE = 20.0


def marker() -> str:
    """A sleep duration no other process on the machine uses: ``/proc`` finds ours by it."""
    return f"{300 + (uuid.uuid4().int % 10**6) / 10**7:.7f}"


def sleeps(mark: str) -> dict[int, str]:
    """pid -> command line of our live (non-zombie) sleeps."""
    return {pid: info[2] for pid, info in live_with(mark).items() if info[2].startswith("sleep ")}


def kill_leftovers(mark: str) -> None:
    """A failing test must not leave its sleeps behind for the rest of the suite."""
    for pid in live_with(mark):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# -- SIGKILL of the agent ------------------------------------------------------------------------


def test_sigkill_of_the_agent_stops_its_command_and_every_background_job(
    cli: Cli,  # noqa: F811 - a fixture
    model_server: Callable[..., ServerProcess],  # noqa: F811 - a fixture
) -> None:
    mark = marker()
    # Same group (`&`), nohup, a double fork re-parented to init, and a job-control job in a
    # process group of its own: all stay in the command's session.
    command = (
        f"sleep 1{mark} & nohup sleep 2{mark} >/dev/null 2>&1 & (sleep 3{mark} &); "
        f"set -m; sleep 4{mark} & sleep {mark}; wait"
    )
    server = model_server([tools_step(shell("call_long", command)), {"text": "x"}])
    process = cli.start(
        *headless(server, "go", "--approval-mode", "full-auto", "--output-format", "agent-tui-json")
    )
    try:
        read_lines_until(process, lambda line: '"kind":"tool_started"' in line)
        running = until_blocking(
            lambda: len(sleeps(mark)) == 5 and sleeps(mark), "all five sleeps", DEADLINE
        )
        process.kill()
        process.communicate(timeout=10)
        killed = time.monotonic()
        until_blocking(
            lambda: not any(pid in sleeps(mark) for pid in running),
            "every sleep to stop after the agent's SIGKILL",
            timeout=GONE_WITHIN,
        )
        assert time.monotonic() - killed < GONE_WITHIN
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        kill_leftovers(mark)


# -- cancel on the local backend -----------------------------------------------------------------


async def test_local_cancel_stops_background_jobs_in_other_groups_and_names_them(
    tmp_path: Path,
) -> None:
    mark = marker()
    backend = LocalBackend(default_cwd=str(tmp_path))
    cancel = asyncio.Event()
    lines: list[str] = []
    # `set -m` gives the background job a process group of its own: a group kill misses it.
    command = f"echo $$; set -m; sleep 3{mark} & sleep 4{mark}; wait"
    task = asyncio.create_task(
        backend.run(command, cancel=cancel, timeout=60, on_chunk=lambda _, text: lines.append(text))
    )
    try:
        running = await until(
            lambda: len(sleeps(mark)) == 2 and sleeps(mark), "two sleeps", LOOP_WAIT
        )
        cancel.set()
        result = await asyncio.wait_for(task, DEADLINE)
        stopped = time.monotonic()
        await until(lambda: not sleeps(mark), "both sleeps gone", timeout=GONE_WITHIN)
        assert time.monotonic() - stopped < GONE_WITHIN
    finally:
        kill_leftovers(mark)
    assert result.cancelled
    shell_pid = int(result.stdout.split()[0])
    (notice,) = [n for n in result.notices if n.startswith("stopped:")]
    assert notice.startswith(f"stopped: the command (pid {shell_pid}) and 2 background processes")
    for pid, command_line in running.items():
        assert f"{command_line} (pid {pid})" in notice
    assert notice in "".join(lines), "the live block shows it too"
    with pytest.raises(Cancelled) as raised:
        format_result(result, "call", 60)
    assert notice in raised.value.msg


# -- cancel in a tmux pane -----------------------------------------------------------------------

TMUX_SHELLS = [
    pytest.param(SHELL, id="bash"),
    pytest.param(
        "zsh -f", id="zsh", marks=pytest.mark.skipif(not shutil.which("zsh"), reason="no zsh")
    ),
]


@pytest.fixture
async def make_tmux(tmp_path: Path) -> AsyncIterator[Callable[..., TmuxBackend]]:
    """Backends on one private tmux socket, closed and the server killed afterwards."""
    socket_name = new_socket_name()
    try:
        async with tmux_backends(socket_name, tmp_path) as make:
            yield make
    finally:
        kill_server(socket_name)


@needs_tmux
@pytest.mark.parametrize("shell_command", TMUX_SHELLS)
async def test_tmux_cancel_stops_the_commands_background_jobs_not_the_users(
    make_tmux: Callable[..., TmuxBackend], shell_command: str
) -> None:
    mark = marker()
    backend = make_tmux(shell=shell_command)
    try:
        # The person's own job, started in the pane before the agent's command.
        await backend.run(f"sleep 5{mark} &", timeout=DEADLINE)
        users = await until(lambda: sleeps(mark), "the user's job", LOOP_WAIT)
        cancel = asyncio.Event()
        task = asyncio.create_task(
            backend.run(f"sleep 3{mark} & sleep 4{mark}", cancel=cancel, timeout=60)
        )
        running = await until(
            lambda: len(sleeps(mark)) == 3 and sleeps(mark),
            "the command's two sleeps",
            LOOP_WAIT,
        )
        cancel.set()
        result = await asyncio.wait_for(task, DEADLINE)
        stopped = time.monotonic()
        ours = {pid: line for pid, line in running.items() if pid not in users}
        await until(
            lambda: not set(ours) & set(sleeps(mark)), "both sleeps gone", timeout=GONE_WITHIN
        )
        assert time.monotonic() - stopped < GONE_WITHIN
        assert set(users) <= set(sleeps(mark)), "the user's own job survives the cancel"
    finally:
        kill_leftovers(mark)
    assert result.cancelled
    (notice,) = [n for n in result.notices if n.startswith("stopped:")]
    for pid, command_line in ours.items():
        assert f"{command_line} (pid {pid})" in notice
    for pid in users:
        assert f"pid {pid}" not in notice


# -- the next agent is told what still runs in its pane ------------------------------------------


@needs_tmux
async def test_a_reused_pane_reports_what_still_runs_there(
    make_tmux: Callable[..., TmuxBackend],
) -> None:
    mark = marker()
    first = make_tmux()
    try:
        await first.run(f"sleep 6{mark} &", timeout=DEADLINE)
        left = await until(lambda: sleeps(mark), "the background sleep", LOOP_WAIT)
        await first.close()
        notices = await make_tmux().start()
    finally:
        kill_leftovers(mark)
    said_still_running(notices, first.default_pane, left)


def said_still_running(notices: list[str], pane: str | None, left: dict[int, str]) -> None:
    """The one notice of what still runs in ``pane`` names the one process ``left``."""
    ((pid, command_line),) = left.items()
    assert [n for n in notices if n.startswith("still running")] == [
        f"still running in the agent's pane {pane} from before: {command_line} (pid {pid})"
    ]


@needs_tmux
async def test_a_fresh_pane_reports_nothing(make_tmux: Callable[..., TmuxBackend]) -> None:
    assert await make_tmux().start() == []

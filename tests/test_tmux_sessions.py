"""Own pane, known place: each instance's shell is a tmux session of its own, in its workspace.

Real tmux servers on private sockets (killed afterwards), the real ``open_target`` the app and
headless mode use, the real CLI against the scripted model server, and the app under Pilot.
No test sleeps to synchronise: each waits for the state it expects, with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_headless_cli import Cli, cli, headless, model_server
from tests.test_targets_cli import shell_step, tool_results
from tests.test_ui_app import app_for, make_session, send, until
from tests.tmux_helpers import (
    SHELL,
    clean_env,
    instance_sockets,
    kill_server,
    needs_tmux,
    new_socket_name,
)
from tests.waiting import until_blocking
from tui.config import Settings, TmuxSettings
from tui.exec.local import LocalBackend
from tui.exec.tmux.backend import TmuxBackend
from tui.exec.tmux.sessions import KEPT_OPTION, WORKSPACE_OPTION, session_name
from tui.targets import Target, TargetChoice, open_target

__all__ = ["cli", "model_server"]  # fixtures used here by name

pytestmark = needs_tmux

DEADLINE = 15.0

OpenTarget = Callable[..., Awaitable[Target]]


@pytest.fixture
def socket_name() -> Iterator[str]:
    name = new_socket_name()
    try:
        yield name
    finally:
        kill_server(name)


@pytest.fixture
async def open_tmux(socket_name: str) -> AsyncIterator[OpenTarget]:
    """``open_target`` as the app calls it, on the test's socket; closes what it opened."""
    opened: list[Target] = []

    async def start(workspace: Path, **tmux: Any) -> Target:
        settings = Settings(tmux=TmuxSettings(socket_name=socket_name, **tmux))
        target = await open_target(TargetChoice(tmux=True), settings, workspace, interactive=True)
        opened.append(target)
        return target

    try:
        yield start
    finally:
        for target in opened:
            await target.backend.close()


def folder(root: Path, name: str) -> Path:
    path = root / name
    path.mkdir()
    return path.resolve()


def sessions(socket_name: str) -> dict[str, dict[str, str]]:
    """Every session on the base socket and the per-instance servers beside it, with its tags
    and its server (empty when no server runs)."""
    fmt = "\t".join(["#{session_name}", f"#{{{WORKSPACE_OPTION}}}", f"#{{{KEPT_OPTION}}}"])
    found = {}
    for server in instance_sockets(socket_name):
        done = subprocess.run(
            ["tmux", "-L", server, "list-sessions", "-F", fmt],
            env=clean_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        for line in done.stdout.splitlines():
            name, workspace, kept = line.split("\t")
            found[name] = {"workspace": workspace, "kept": kept, "socket": server}
    return found


def tmux_backend(target: Target) -> TmuxBackend:
    assert isinstance(target.backend, TmuxBackend)
    return target.backend


async def shell_line(target: Target, command: str) -> str:
    result = await target.backend.run(command, timeout=DEADLINE)
    assert result.exit_code == 0, result.stdout
    return result.stdout.strip()


# -- one session per workspace and per instance ------------------------------------------------


async def test_two_workspaces_get_two_sessions_each_in_its_workspace(
    open_tmux: OpenTarget, socket_name: str, tmp_path: Path
) -> None:
    alpha, beta = folder(tmp_path, "alpha.app"), folder(tmp_path, "beta")
    first, second = await open_tmux(alpha), await open_tmux(beta)
    one, two = tmux_backend(first), tmux_backend(second)
    assert one.default_session != two.default_session
    assert one.default_session.startswith("atui-alpha-app-")  # tmux-safe: no "."
    assert two.default_session.startswith("atui-beta-")
    # No cwd passed: the shell itself was started in its workspace.
    assert await shell_line(first, "pwd") == str(alpha)
    assert await shell_line(second, "pwd") == str(beta)
    listed = sessions(socket_name)
    assert listed[one.default_session]["workspace"] == str(alpha)
    assert listed[two.default_session]["workspace"] == str(beta)


async def test_a_second_instance_in_one_workspace_gets_its_own_shell(
    open_tmux: OpenTarget, workspace: Path
) -> None:
    first, second = await open_tmux(workspace), await open_tmux(workspace)
    assert tmux_backend(first).default_session != tmux_backend(second).default_session
    # A tmux server each: no instance's crash or start can reach the other's shell.
    assert tmux_backend(first).socket_name != tmux_backend(second).socket_name
    await shell_line(first, "export ATUI_FIRST=here; cd /")
    assert await shell_line(second, 'echo "${ATUI_FIRST:-none} $PWD"') == f"none {workspace}"


def test_session_names_are_tmux_safe() -> None:
    assert session_name("/home/me/my.project:v2", "3f2a") == "atui-my-project-v2-3f2a"
    assert session_name("/", "0001") == "atui-root-0001"
    assert session_name("/srv/проект #1", "beef") == "atui-1-beef"


# -- closed at quit, unless kept ---------------------------------------------------------------


async def test_quitting_closes_the_session(
    open_tmux: OpenTarget, socket_name: str, workspace: Path
) -> None:
    target = await open_tmux(workspace)
    backend = tmux_backend(target)
    extra, _ = await backend.create_session("extra")
    assert {backend.default_session, extra} <= set(sessions(socket_name))
    await backend.close()
    assert sessions(socket_name) == {}


async def test_a_kept_session_survives_and_is_reattached(
    open_tmux: OpenTarget, socket_name: str, workspace: Path, tmp_path: Path
) -> None:
    first = await open_tmux(workspace)
    backend = tmux_backend(first)
    await shell_line(first, "export ATUI_KEPT=yes")
    await backend.set_kept(True)
    assert await backend.is_kept()
    # While its instance runs, a kept session is not taken by another one.
    other = await open_tmux(workspace)
    assert tmux_backend(other).default_session != backend.default_session
    await other.backend.close()
    await backend.close()
    assert set(sessions(socket_name)) == {backend.default_session}
    # Not for another workspace...
    elsewhere = await open_tmux(folder(tmp_path, "elsewhere"))
    assert tmux_backend(elsewhere).default_session != backend.default_session
    assert not any("re-attached" in notice for notice in elsewhere.notices)
    # ...but the next start here takes it back, its shell as it was left, and says so.
    again = await open_tmux(workspace)
    assert tmux_backend(again).default_session == backend.default_session
    (notice,) = [n for n in again.notices if "re-attached" in n]
    assert notice.startswith(f"re-attached the kept session {backend.default_session} from ")
    assert await shell_line(again, "echo $ATUI_KEPT") == "yes"


async def test_a_kept_session_of_a_killed_agent_is_reattached_though_its_client_lingers(
    open_tmux: OpenTarget, socket_name: str, workspace: Path
) -> None:
    """A SIGKILLed agent-tui's control client can linger attached (here: stopped, so it
    certainly does); the session it kept is still taken back by the next start here."""
    script = (
        "import asyncio, os, signal, sys\n"
        "from pathlib import Path\n"
        "from tui.config import Settings, TmuxSettings\n"
        "from tui.exec import procs\n"
        "from tui.targets import TargetChoice, open_target\n"
        "async def main():\n"
        f"    settings = Settings(tmux=TmuxSettings(socket_name={socket_name!r}, "
        "keep_session=True))\n"
        "    t = await open_target(TargetChoice(tmux=True), settings, "
        f"Path({str(workspace)!r}), interactive=True)\n"
        "    await t.backend.run('export ATUI_KEPT=yes', timeout=30)\n"
        "    me = os.getpid()\n"
        "    for name in os.listdir('/proc'):\n"  # its tmux control client: stopped for good
        "        proc = procs.read(int(name)) if name.isdigit() else None\n"
        "        if proc and ' -C ' in proc.command and open(f'/proc/{name}/stat').read()"
        ".rsplit(')', 1)[1].split()[1] == str(me):\n"
        "            os.kill(proc.pid, signal.SIGSTOP); print(proc.pid, flush=True)\n"
        "    os.kill(me, signal.SIGKILL)\n"
        "asyncio.run(main())\n"
    )
    repo = Path(__file__).resolve().parents[1]
    victim = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=repo, env=clean_env(), stdout=subprocess.PIPE
    )
    out, _ = await victim.communicate()
    clients = [int(line) for line in out.split()]
    assert clients, "the killed agent-tui had a control client"
    try:
        again = await open_tmux(workspace)
        assert len([n for n in again.notices if "re-attached" in n]) == 1, again.notices
        assert await shell_line(again, "echo $ATUI_KEPT") == "yes"
    finally:
        for pid in clients:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


async def test_keep_session_setting_keeps_it(
    open_tmux: OpenTarget, socket_name: str, workspace: Path
) -> None:
    target = await open_tmux(workspace, keep_session=True)
    name = tmux_backend(target).default_session
    await target.backend.close()
    assert sessions(socket_name)[name]["kept"] == "1"


# -- headless runs -----------------------------------------------------------------------------


def test_headless_tmux_runs_in_two_workspaces_at_once(
    cli: Cli, model_server: Any, socket_name: str, tmp_path: Path
) -> None:
    cli.env["AGENT_TUI_TMUX__SOCKET_NAME"] = socket_name
    # The shells ask tmux which session they are in; inside the sandbox a pane's shell cannot
    # reach the tmux server at all (test_sandbox_tmux holds that), so here it is off.
    cli.env["AGENT_TUI_SANDBOX__MODE"] = "off"
    other = Cli(folder(tmp_path, "other"), dict(cli.env))
    # Each shell says where it is, which session it is, and whether another run was there.
    command = (
        "pwd; tmux display-message -p '#S'; "
        'echo "seen=${ATUI_SEEN:-none}"; export ATUI_SEEN=$$; sleep 1'
    )
    runs = []
    for each in (cli, other):
        server = model_server([shell_step(command), {"text": "ok"}])
        args = headless(server, "where am I?", "--approval-mode", "full-auto", "--tmux")
        runs.append((each, server, each.start(*args)))
    names = []
    for each, server, process in runs:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
        (result,) = tool_results(server)
        lines = result.splitlines()
        assert str(each.workspace) in lines
        assert "seen=none" in lines
        (name,) = [line for line in lines if line.startswith("atui-")]
        assert name.startswith(f"atui-{each.workspace.name}-")
        names.append(name)
    assert len(set(names)) == 2
    assert sessions(socket_name) == {}  # each run closed its own at the end


# -- /pane -------------------------------------------------------------------------------------


async def test_pane_command_prints_an_attach_command_that_attaches(
    socket_name: str, workspace: Path
) -> None:
    name = session_name(workspace, "test")
    backend = TmuxBackend(
        LocalBackend(default_cwd=str(workspace)),
        socket_name=socket_name,
        session=name,
        shell=SHELL,
        config="/dev/null",
        default_cwd=str(workspace),
        env=clean_env(),
        workspace=str(workspace),
        own_session=True,
    )
    await backend.start()
    app = app_for(make_session(workspace, None, backend=backend))
    attach = None
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await send(pilot, app, "/pane")

            def attach_line() -> str | None:
                for widget in app.chat.query("NoticeLine"):
                    for line in str(widget.render()).splitlines():
                        if "from another terminal: " in line:
                            return line.split("from another terminal: ", 1)[1].strip()
                return None

            await until(pilot, attach_line, "the attach command")
            command = attach_line()
            assert command is not None
            assert command.endswith(f"attach -t ={name}")
            notes = " ".join(str(w.render()) for w in app.chat.query("NoticeLine"))
            assert "closed when you quit" in notes
            await send(pilot, app, "/pane keep")
            await until(pilot, lambda: sessions(socket_name)[name]["kept"] == "1", "kept")
        attach = await asyncio.to_thread(attached_client, command, socket_name, name)
    finally:
        if attach is not None:
            attach.kill()
            attach.wait()
        await backend.close()
    assert name in sessions(socket_name)  # kept through the close


def attached_client(command: str, socket_name: str, name: str) -> subprocess.Popen[bytes]:
    """Run ``command`` as a person would, in a terminal; wait until tmux lists the client."""
    leader, follower = os.openpty()
    env = {**clean_env(), "TERM": "xterm-256color"}
    process = subprocess.Popen(
        shlex.split(command),
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        start_new_session=True,
    )
    os.close(follower)

    def terminal_client() -> bool:
        assert process.poll() is None, "the attach command exited"
        done = subprocess.run(
            ["tmux", "-L", socket_name, "list-clients", "-t", f"={name}", "-F",
             "#{client_control_mode}"],
            env=clean_env(), capture_output=True, text=True, check=False,
        )  # fmt: skip
        return "0" in done.stdout.split()

    try:
        until_blocking(terminal_client, "a terminal client on the session", DEADLINE)
    finally:
        os.close(leader)
    return process


def test_help_says_how_to_find_the_agents_shell() -> None:
    from tui.cli_args import build_parser

    text = build_parser().format_help()
    assert "/pane" in text and "tmux attach command" in " ".join(text.split())


async def test_the_persons_own_tmux_pane_is_named(socket_name: str, tmp_path: Path) -> None:
    from tests.tmux_helpers import tmux
    from tui.exec.tmux.sessions import user_pane

    await tmux(socket_name, "-f", "/dev/null", "new-session", "-d", "-s", "mine", "cat")
    fields = await tmux(
        socket_name, "display-message", "-p", "-t", "=mine:", "#{socket_path} #{pane_id}"
    )
    socket_path, pane = fields.split()
    line = await user_pane({"TMUX": f"{socket_path},1,0", "TMUX_PANE": pane})
    assert line is not None and line.startswith(f"you are in tmux pane {pane} (session mine,")
    assert await user_pane({}) is None

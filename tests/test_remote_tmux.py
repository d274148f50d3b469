"""The tmux suite on every host tmux can run on: this machine, a podman container, an SSH host.

``TmuxBackend`` reaches tmux only through its host's ``spawn`` (control clients) and ``run``
(the tmux command line, for the session lifecycle), so the same test bodies run on all three,
through the real registry and a full-auto policy wired as ``targets.open_target`` and the
session wire them (a remote target: ``local_paths=False``, the target's home, the workspace a
folder on the target). The SSH host is the throwaway OpenSSH sshd of ``tests/sshd.py`` (an
unprivileged login user); the container is the session's host-like one (bash and tmux inside
through the read-only ``/usr``). Each test has its own tmux socket on the target, killed after.

What is checked from outside the backend (sessions listed, text a person typed, processes
left) goes through the tmux command line or ``ps`` run on the target by a second backend,
as a person there would see it. Nothing sleeps to synchronise: waits are on output, tmux's
answers or ``ps``, with a deadline.
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Harness
from tests.container_image import ENGINE, Container
from tests.sshd import SshServer
from tests.test_ssh_backend import make_backend as make_ssh_backend
from tests.test_ssh_backend import sshd
from tests.tmux_helpers import SHELL, OutputWatch, needs_tmux
from tests.waiting import until
from tui.config import Settings
from tui.events import ToolCallStarted
from tui.exec.backend import ExecutionBackend
from tui.exec.container.backend import ContainerBackend
from tui.exec.local import LocalBackend
from tui.exec.tmux import instances, server
from tui.exec.tmux.backend import TmuxBackend
from tui.security.environment import reduced_environment
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.registry import ToolRegistry

__all__ = ["sshd"]  # the session's sshd fixture, shared with the SSH backend tests

pytestmark = needs_tmux

DEADLINE = 20.0
"""Generous bound for anything that should happen 'soon' on a loaded, shared machine."""
OWNER = "atui-test"


@dataclass
class Host:
    """One host tmux runs on, and a second backend to look at it from outside."""

    kind: str
    probe: ExecutionBackend
    """Runs the tmux CLI and ``ps`` on the host, as a person logged in there would."""
    new_host: Callable[[str], ExecutionBackend]
    """A fresh host backend whose commands start in the given folder."""
    workspace: str
    home: str
    socket_name: str = field(default_factory=lambda: f"atui-rt-{secrets.token_hex(4)}")

    @property
    def local(self) -> bool:
        return self.kind == "local"

    async def tmux(self, *args: str, check: bool = True) -> str:
        """The tmux command line on this test's socket, run on the host."""
        argv = server.Place(self.probe, self.socket_name, "/dev/null").argv(*args)
        result = await self.probe.run(shlex.join(argv), timeout=DEADLINE)
        if check and result.exit_code != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {result.stderr or result.stdout}")
        return result.stdout

    async def sessions(self) -> set[str]:
        listed = await self.tmux("list-sessions", "-F", "#{session_name}", check=False)
        return set(listed.split())

    async def live(self, needle: str) -> list[str]:
        """Live processes on the host whose command line holds ``needle`` (filtered here, so
        the probe cannot match itself)."""
        listed = await self.probe.run("ps -eww -o pid=,stat=,args=", timeout=DEADLINE)
        found = []
        for line in listed.stdout.splitlines():
            fields = line.split(None, 2)
            if len(fields) == 3 and needle in fields[2] and not fields[1].startswith(("Z", "X")):
                found.append(line)
        return found


async def _home(backend: ExecutionBackend) -> str:
    result = await backend.run('printf %s "$HOME"', timeout=DEADLINE)
    assert result.exit_code == 0 and result.stdout.startswith("/"), result
    return result.stdout


async def _mkdir(backend: ExecutionBackend, path: str) -> None:
    made = await backend.run(f"mkdir -p -- {shlex.quote(path)}", timeout=DEADLINE)
    assert made.exit_code == 0, made.stderr


async def _local_host(tmp_path: Path) -> Host:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Host(
        "local",
        LocalBackend(),
        lambda cwd: LocalBackend(default_cwd=cwd),
        str(workspace.resolve()),
        str(Path.home()),
    )


async def _ssh_host(server: SshServer) -> Host:
    probe = make_ssh_backend(server)
    home = await _home(probe)
    workspace = f"{home}/atui-rt-{secrets.token_hex(4)}"
    await _mkdir(probe, workspace)
    return Host(
        "ssh",
        probe,
        lambda cwd: make_ssh_backend(server, default_cwd=cwd),
        workspace,
        home,
    )


async def _container_host(container: Container) -> Host:
    probe = ContainerBackend(container.name, engine=ENGINE)
    home = await _home(probe)
    workspace = f"/tmp/atui-rt-{secrets.token_hex(4)}"
    await _mkdir(probe, workspace)
    return Host(
        "container",
        probe,
        lambda cwd: ContainerBackend(container.name, engine=ENGINE, default_cwd=cwd),
        workspace,
        home,
    )


@pytest.fixture(params=["local", "ssh", "container"])
async def host(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Host]:
    """Each host in turn; its tmux server on this test's socket and the workspace go after."""
    if request.param == "local":
        found = await _local_host(tmp_path)
    elif request.param == "ssh":
        found = await _ssh_host(request.getfixturevalue("sshd"))
    else:
        found = await _container_host(request.getfixturevalue("hostlike_container"))
    try:
        yield found
    finally:
        await found.tmux("kill-server", check=False)
        await server.forget_server(server.Place(found.probe, found.socket_name, "/dev/null"))
        if not found.local:
            await found.probe.run(f"rm -rf -- {shlex.quote(found.workspace)}", timeout=DEADLINE)
        await found.probe.close()


MakeTmux = Callable[..., TmuxBackend]


@pytest.fixture
async def make_tmux(host: Host) -> AsyncIterator[MakeTmux]:
    """``TmuxBackend``s over fresh host backends, as ``open_target`` builds them (the reduced
    environment, the workspace as the panes' directory); all closed after the test."""
    made: list[TmuxBackend] = []
    settings = Settings()
    env = reduced_environment(settings.security.env_allowlist, settings.security.env_passthrough)

    def make(**kwargs: Any) -> TmuxBackend:
        options: dict[str, Any] = {
            "socket_name": host.socket_name,
            "shell": SHELL,
            "owner": OWNER,
            "config": "/dev/null",
            "default_cwd": host.workspace,
            "env": env,
        }
        options.update(kwargs)
        backend = TmuxBackend(host.new_host(host.workspace), **options)
        made.append(backend)
        return backend

    try:
        yield make
    finally:
        for backend in made:
            await backend.close()
            await backend.host.close()


def harness_for(host: Host, backend: TmuxBackend) -> Harness:
    """The registry and policy as the session builds them for this target."""
    policy = SecurityPolicy(
        Path(host.workspace),
        approval_mode=ApprovalMode.FULL_AUTO,
        local_paths=host.local,
        target_home=None if host.local else host.home,
    )
    policy.follow_shell(backend.shell_cwd)
    registry = ToolRegistry(builtin_tools(backend, None))
    return Harness(Path(host.workspace), policy, registry, backend)


@pytest.fixture
async def harness(host: Host, make_tmux: MakeTmux) -> Harness:
    backend = make_tmux()
    await backend.start()  # as open_target does
    return harness_for(host, backend)


def tmux_of(harness: Harness) -> TmuxBackend:
    backend = harness.backend
    assert isinstance(backend, TmuxBackend)
    return backend


# -- commands --------------------------------------------------------------------------------


async def test_commands_exit_codes_and_multi_line_output(host: Host, make_tmux: MakeTmux) -> None:
    backend = make_tmux()
    ok = await backend.run("echo hello", timeout=DEADLINE)
    assert (ok.exit_code, ok.stdout, ok.merged_output) == (0, "hello\n", True)
    assert backend.actor == f"{backend.host.actor}/tmux:{backend.default_pane}"
    failed = await backend.run("ls /no/such/dir", timeout=DEADLINE)
    assert failed.exit_code not in (0, None) and "No such file" in failed.stdout
    code = await backend.run("sh -c 'exit 7'", timeout=DEADLINE)
    assert (code.exit_code, code.stdout) == (7, "")
    multi = await backend.run("for i in 1 2 3; do\n  echo line$i\ndone", timeout=DEADLINE)
    assert (multi.exit_code, multi.stdout) == (0, "line1\nline2\nline3\n")
    where = await backend.run("echo $HOME", timeout=DEADLINE)
    assert where.stdout == f"{host.home}\n"  # the host's own account, not this machine's


async def test_the_hosts_own_default_shell_is_set_up(host: Host, make_tmux: MakeTmux) -> None:
    """As the app starts it: no shell named, so tmux runs the account's login shell with its
    own rc files (bash with a distribution .bashrc over SSH, dash as root's sh in the
    container)."""
    backend = make_tmux(shell=None)
    ok = await backend.run("echo $((6 * 7)); sh -c 'exit 3'", timeout=DEADLINE)
    assert (ok.exit_code, ok.stdout, ok.cwd) == (3, "42\n", host.workspace)
    again = await backend.run("cd / && echo moved", timeout=DEADLINE)
    assert (again.exit_code, again.stdout, again.cwd) == (0, "moved\n", "/")


async def test_run_shell_through_the_registry(host: Host, harness: Harness) -> None:
    result = await harness.call("run_shell", {"command": "echo out; echo err >&2; false"})
    assert not result.is_error, result.text
    assert result.text.startswith("exit code: 1")
    assert "output (stdout and stderr merged):\nout\nerr" in result.text
    started = [e for e in harness.events if isinstance(e, ToolCallStarted)]
    backend = tmux_of(harness)
    assert started and started[-1].actor == f"{backend.host.actor}/tmux:{backend.default_pane}"


# -- wait=false, durations, capture, keys ----------------------------------------------------------


async def test_wait_false_then_capture(host: Host, harness: Harness) -> None:
    backend = tmux_of(harness)
    pane = backend.default_pane
    assert pane
    result = await harness.call(
        "run_shell", {"command": "sleep 0.3; echo finished-later", "wait": False}
    )
    assert not result.is_error, result.text
    assert f"running in pane {pane}" in result.text and "tmux_capture_pane" in result.text
    assert backend.running_command(pane) is not None
    assert await backend.wait_for_prompt(pane, DEADLINE) == 0
    capture = await harness.call("tmux_capture_pane", {"target": pane})
    assert not capture.is_error, capture.text
    assert "finished-later" in capture.text and "__ATUI_" not in capture.text


async def test_wait_duration_then_keys_stop_it(host: Host, harness: Harness) -> None:
    backend = tmux_of(harness)
    pane = backend.default_pane
    result = await harness.call("run_shell", {"command": "echo begun; sleep 30", "wait": "1s"})
    assert result.is_error, result.text  # Buddy: a wait duration that runs out is an error
    assert "timed out waiting for command completion after 1s" in result.text
    assert "begun" in result.text and f"tmux_capture_pane target={pane}" in result.text
    busy = await harness.call("run_shell", {"command": "echo next"})
    assert busy.is_error and "still running" in busy.text
    stop = await harness.call("tmux_send_keys", {"target": pane, "keys": ["C-c"]})
    assert not stop.is_error and f"sent to pane {pane}: keys C-c" in stop.text
    assert await backend.wait_for_prompt(pane or "", DEADLINE) not in (0, None)
    after = await harness.call("run_shell", {"command": "echo free"})
    assert after.text.endswith("\nfree")


async def test_capture_keeps_colours_and_drops_markers(host: Host, harness: Harness) -> None:
    await harness.call("run_shell", {"command": "printf '\\033[31mred\\033[0m\\n'"})
    plain = await harness.call("tmux_capture_pane", {})
    assert "red" in plain.text and "\x1b[" not in plain.text
    coloured = await harness.call("tmux_capture_pane", {"escape_sequences": True})
    assert "\x1b[31m" in coloured.text and "__ATUI_" not in coloured.text
    assert "\x1b[8m" not in coloured.text


async def test_cancel_stops_the_command_on_the_host(host: Host, make_tmux: MakeTmux) -> None:
    backend = make_tmux()
    cancel = asyncio.Event()
    needle = str(7_000_000 + secrets.randbelow(1_000_000))

    def sink(stream: str, text: str) -> None:
        if "waiting" in text:
            cancel.set()

    result = await backend.run(
        f"echo waiting; sleep {needle}", timeout=DEADLINE, cancel=cancel, on_chunk=sink
    )
    assert result.cancelled and not result.timed_out
    assert backend.running_command(backend.default_pane or "") is None

    async def gone() -> bool:
        return not await host.live(f"sleep {needle}")

    await until(gone, "the cancelled sleep to end on the host", DEADLINE, every=0.05)
    assert (await backend.run("echo next", timeout=DEADLINE)).stdout == "next\n"


# -- guards ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["set -e", "exit", "exit 1", "tmux kill-server", "tmux kill-session -t x"]
)
async def test_guards_refuse_before_typing(host: Host, harness: Harness, command: str) -> None:
    backend = tmux_of(harness)
    before = await host.sessions()
    refused = await harness.call("run_shell", {"command": command})
    assert refused.is_error and "PermissionDenied" in refused.text, refused.text
    assert "bash -lc" in refused.text or "bash -c" in refused.text or "tmux_" in refused.text
    assert await host.sessions() == before
    fine = await harness.call("run_shell", {"command": "bash -lc 'set -e; false; echo no'"})
    assert fine.text == "exit code: 1\n(no output)"
    assert backend.default_pane and (await backend.run("echo alive", timeout=DEADLINE)).stdout == (
        "alive\n"
    )


# -- files go through the host, never through the pane ------------------------------------------


async def test_files_through_the_registry_land_on_the_host(host: Host, make_tmux: MakeTmux) -> None:
    backend = make_tmux()
    harness = harness_for(host, backend)
    written = await harness.call("write_file", {"path": "notes/a.txt", "content": "one\ntwo\n"})
    assert not written.is_error, written.text
    assert backend.default_pane is None  # no pane was started for it
    seen = await host.probe.run(
        f"cat {shlex.quote(host.workspace)}/notes/a.txt; stat -c %U "
        f"{shlex.quote(host.workspace)}/notes/a.txt",
        timeout=DEADLINE,
    )
    owner = (await host.probe.run("id -un", timeout=DEADLINE)).stdout.strip()
    assert seen.stdout == f"one\ntwo\n{owner}\n"
    if host.kind == "container":
        assert not Path(host.workspace).exists()  # written inside, not on this machine
    read = await harness.call("read_file", {"path": "notes/a.txt"})
    assert not read.is_error and "two" in read.text
    raw = await backend.read_file(f"{host.workspace}/notes/a.txt")
    assert raw == b"one\ntwo\n"


# -- the shell the person shares: an empty prompt, the directory it stands in --------------------


async def test_text_left_at_the_prompt_is_not_glued_onto_the_command(
    host: Host, make_tmux: MakeTmux
) -> None:
    backend = make_tmux()
    await backend.run("true", timeout=DEADLINE)
    pane = backend.default_pane
    assert pane
    watch = OutputWatch(b"leftover")
    remove = backend.add_output_listener(pane, watch)
    try:
        await host.tmux("send-keys", "-t", pane, "-l", "echo leftover")
        async with asyncio.timeout(DEADLINE):
            await watch.wait()
    finally:
        remove()
    approved = "echo approved-$((6 * 7))"
    result = await backend.run(approved, timeout=DEADLINE)
    assert result.stdout == "approved-42\n"
    history = await backend.run("fc -ln -1", timeout=DEADLINE)
    assert history.stdout.strip() == approved  # the shell's own record of what ran


async def test_the_directory_is_reported_and_persists(host: Host, make_tmux: MakeTmux) -> None:
    backend = make_tmux()
    first = await backend.run("true", timeout=DEADLINE)
    assert first.cwd == host.workspace == backend.shell_cwd()
    sub = f"{host.workspace}/sub dir"
    await _mkdir(host.probe, sub)
    typed = await backend.run("pwd", cwd=sub, timeout=DEADLINE)
    assert (typed.stdout, typed.cwd) == (f"{sub}\n", sub)
    moved = await backend.run("cd /tmp && pwd", timeout=DEADLINE)
    assert (moved.stdout, moved.cwd) == ("/tmp\n", "/tmp")
    assert backend.shell_cwd() == "/tmp"
    stays = await backend.run("pwd", timeout=DEADLINE)
    assert stays.stdout == "/tmp\n"


# -- an instance's own session: named at start, listed on the host, closed at quit ------------


async def test_own_session_is_listed_held_and_closed_at_quit(
    host: Host, make_tmux: MakeTmux
) -> None:
    place = server.Place(host.new_host(host.workspace), host.socket_name, "/dev/null")
    try:
        await host.tmux("new-session", "-d", "-s", "foreign", "sleep 600")
        chosen = await instances.choose_session(place, owner=OWNER, workspace=host.workspace)
        assert not chosen.reattached and chosen.name not in await host.sessions()
        backend = make_tmux(session=chosen.name, workspace=host.workspace, own_session=True)
        await backend.start()
        _, _ = await backend.create_session("side")
        listed = {info.name: info for info in await server.list_server(place)}
        own = listed[chosen.name]
        assert (own.owner, own.workspace, own.kept, own.held) == (
            OWNER,
            host.workspace,
            False,
            True,
        )
        assert listed["atui-side"].owner == OWNER and listed["foreign"].owner == ""
        # A second instance in the same workspace never takes a held session.
        other = await instances.choose_session(place, owner=OWNER, workspace=host.workspace)
        assert other.name != chosen.name and not other.reattached
        attach = backend.attach_command()
        assert chosen.name in attach
        assert host.local or attach.endswith(f"(on {backend.host.actor})")
        await backend.close()
        assert await host.sessions() == {"foreign"}  # ours and the tool's, and only those
    finally:
        await place.host.close()


async def test_a_kept_session_survives_quit_and_is_reattached(
    host: Host, make_tmux: MakeTmux
) -> None:
    place = server.Place(host.new_host(host.workspace), host.socket_name, "/dev/null")
    try:
        chosen = await instances.choose_session(place, owner=OWNER, workspace=host.workspace)
        first = make_tmux(
            session=chosen.name, workspace=host.workspace, own_session=True, keep_session=True
        )
        await first.run("export LEFT=behind", timeout=DEADLINE)
        assert await first.is_kept()
        await first.close()
        listed = {info.name: info for info in await server.list_server(place)}
        assert listed[chosen.name].kept and not listed[chosen.name].held
        again = await instances.choose_session(place, owner=OWNER, workspace=host.workspace)
        assert again.reattached and again.name == chosen.name
        assert again.notice and "re-attached the kept session" in again.notice
        second = make_tmux(session=again.name, workspace=host.workspace, own_session=True)
        kept = await second.run('echo "$LEFT"', timeout=DEADLINE)
        assert kept.stdout == "behind\n"  # the same shell
        await second.set_kept(False)
        await second.close()
        assert chosen.name not in await host.sessions()
    finally:
        await place.host.close()


async def test_sessions_are_killed_through_the_cli_when_no_client_is_left(
    host: Host, make_tmux: MakeTmux
) -> None:
    place = server.Place(host.new_host(host.workspace), host.socket_name, "/dev/null")
    try:
        backend = make_tmux(session="gone-soon")
        await backend.start()
        await host.tmux("new-session", "-d", "-s", "theirs", "sleep 600")
        await backend.close()  # not its own session: left running, client detached
        assert await host.sessions() == {"atui-gone-soon", "theirs"}
        killed = await instances.end_sessions(place, OWNER, ["atui-gone-soon", "theirs"])
        assert killed == ["atui-gone-soon"]
        assert await host.sessions() == {"theirs"}
    finally:
        await place.host.close()

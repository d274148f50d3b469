"""ContainerBackend against real podman containers: every promise checked end to end.

No mocks: what matters (the engine keeping an exec alive after its client died, a process
group inside the container, a container stopped under a running command) only happens with
a real engine. Two images are built once per session (see ``tests/container_image.py``):
busybox (ash only) and host-like (bash, tmux). Nothing synchronises by sleeping: commands
wait inside the container for a file the test creates once it has *seen* their output, and
checks for dead processes poll the container's ``/proc`` against a deadline.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.chunks import Recorder, wait_for
from tests.conftest import make_harness
from tests.container_image import (
    ENGINE,
    Container,
    Images,
    live_processes,
    podman,
    podman_missing_reason,
    remove_container,
    start_container,
)
from tests.waiting import until
from tui.exec.backend import BackendError
from tui.exec.container.backend import ContainerBackend
from tui.exec.container.engine import detect_engine
from tui.exec.container.process import ContainerProcess

pytestmark = pytest.mark.skipif(
    podman_missing_reason() is not None, reason=podman_missing_reason() or ""
)

DEADLINE = 20.0
"""Generous bound for anything that should happen 'soon' on a loaded CI machine."""


async def processes(container: str, needle: str) -> list[str]:
    return await asyncio.to_thread(live_processes, container, needle)


async def assert_none_left(container: str, needle: str) -> None:
    """Every process whose command line holds ``needle`` dies (zombies aside)."""

    async def gone() -> bool:
        return not await processes(container, needle)

    await until(gone, f"processes matching {needle!r} in {container}", DEADLINE, every=0.05)


def sleeper() -> str:
    """A ``sleep`` argument unique to this test, to find its processes by command line."""
    return str(7_000_000 + secrets.randbelow(1_000_000))


def wait_for_file(path: str) -> str:
    """Shell that waits (bounded) inside the container for ``path`` to exist."""
    return f"i=0; while [ ! -e {path} ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done"


@pytest.fixture
def backend(any_container: Container) -> ContainerBackend:
    return ContainerBackend(any_container.name, engine=ENGINE)


@pytest.fixture
def busybox(busybox_container: Container) -> ContainerBackend:
    return ContainerBackend(busybox_container.name, engine=ENGINE)


# --- running commands -------------------------------------------------------------------


async def test_round_trip_uses_bash_when_the_container_has_it(
    backend: ContainerBackend, any_container: Container
) -> None:
    result = await backend.run('echo "hi $((6 * 7))"; echo oops >&2; echo "$0"')
    assert result.exit_code == 0
    shell = "bash" if any_container.has_bash else "sh"
    assert result.stdout == f"hi 42\n{shell}\n"
    assert result.stderr == "oops\n"
    assert not result.timed_out and not result.cancelled
    assert backend.actor == f"container:{any_container.name}"


@pytest.mark.parametrize(
    ("command", "code"), [("true", 0), ("false", 1), ("exit 3", 3), ("kill -9 $$", 137)]
)
async def test_exit_codes_are_the_commands(
    busybox: ContainerBackend, command: str, code: int
) -> None:
    """137 from the command itself is not mistaken for the container stopping."""
    result = await busybox.run(command)
    assert result.exit_code == code


async def test_output_streams_before_the_command_ends(backend: ContainerBackend) -> None:
    flag = f"/tmp/go-{secrets.token_hex(4)}"
    sink = Recorder()
    ready = sink.marker("ready")
    command = f"echo ready; {wait_for_file(flag)}; echo after"
    task = asyncio.create_task(backend.run(command, on_chunk=sink, timeout=DEADLINE))
    await wait_for(ready)
    assert not task.done()
    assert sink.text("stdout") == "ready\n"
    await backend.run(f"touch {flag}")
    result = await task
    assert result.exit_code == 0
    assert result.stdout == "ready\nafter\n"
    assert sink.text("stdout") == result.stdout


async def test_large_and_multibyte_output(busybox: ContainerBackend) -> None:
    sink = Recorder()
    result = await busybox.run(
        "head -c 2000000 /dev/zero | tr '\\000' a; printf '\\342\\202\\254\\n'", on_chunk=sink
    )
    assert result.stdout == "a" * 2_000_000 + "€\n"
    assert sink.text("stdout") == result.stdout
    assert result.stderr == ""


async def test_cwd_and_env(backend: ContainerBackend) -> None:
    value = "a 'quoted' \"value\" $HOME\nsecond line"
    result = await backend.run(
        'printf "%s\\036" "$(pwd)" "$GREETING" "$PATH"',
        cwd="/etc",
        env={"GREETING": value, "PATH": "/host/only/bin"},
    )
    assert result.exit_code == 0
    pwd, greeting, path, _ = result.stdout.split("\x1e")
    assert (pwd, greeting) == ("/etc", value)
    assert "/host/only/bin" not in path  # the host's PATH would be wrong in the container
    assert "/usr/bin" in path.split(":")


async def test_default_cwd_applies_to_commands_and_files(busybox_container: Container) -> None:
    backend = ContainerBackend(busybox_container.name, engine=ENGINE, default_cwd="/etc")
    assert (await backend.run("pwd")).stdout == "/etc\n"
    assert (await backend.read_file("passwd")).startswith(b"root:")


async def test_missing_cwd_is_a_clear_error(busybox: ContainerBackend) -> None:
    with pytest.raises(BackendError, match="'/no/such/dir' does not exist in container"):
        await busybox.run("true", cwd="/no/such/dir")


async def test_env_values_never_appear_on_a_command_line(busybox: ContainerBackend) -> None:
    secret = f"s3cret-{secrets.token_hex(8)}"
    flag = f"/tmp/go-{secrets.token_hex(4)}"
    sink = Recorder()
    ready = sink.marker("ready")
    task = asyncio.create_task(
        busybox.run(
            f'echo "ready $TOKEN"; {wait_for_file(flag)}',
            env={"TOKEN": secret},
            on_chunk=sink,
            timeout=DEADLINE,
        )
    )
    await wait_for(ready)
    assert sink.text("stdout") == f"ready {secret}\n"
    seen_in = [pid for pid in _host_pids() if secret.encode() in _cmdline(pid)]
    await busybox.run(f"touch {flag}")
    assert (await task).exit_code == 0
    assert seen_in == []


def _host_pids() -> list[str]:
    return [entry for entry in os.listdir("/proc") if entry.isdigit()]


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# --- files ------------------------------------------------------------------------------


async def test_binary_file_round_trip_with_parents(backend: ContainerBackend) -> None:
    data = bytes(range(256)) * 512 + os.urandom(300_000) + b"\r\n\x00end"
    path = f"/tmp/files-{secrets.token_hex(4)}/a/b/data.bin"
    await backend.write_file(path, data)
    assert await backend.read_file(path) == data
    assert (await backend.run(f"wc -c < {path}")).stdout.strip() == str(len(data))
    await backend.write_file(path, b"short")
    assert await backend.read_file(path) == b"short"
    await backend.write_file(path, b"")
    assert await backend.read_file(path) == b""


async def test_stdin_left_unread_loses_no_output(busybox: ContainerBackend) -> None:
    """podman 4 drops an ``exec -i``'s output when it exits while stdin is still arriving
    (4 in 10 here); the backend drains stdin first. A dozen tries catch a regression."""
    for attempt in range(12):
        result = await busybox.run_with_stdin("echo out; echo err >&2; exit 2", b"x" * 70_000)
        assert (result.exit_code, result.stdout, result.stderr) == (2, "out\n", "err\n"), attempt


async def test_file_errors(busybox: ContainerBackend) -> None:
    base = f"/tmp/errors-{secrets.token_hex(4)}"
    with pytest.raises(FileNotFoundError):
        await busybox.read_file(f"{base}/missing")
    with pytest.raises(FileNotFoundError):
        await busybox.write_file(f"{base}/new/file", b"x", make_parents=False)
    await busybox.write_file(f"{base}/file", b"x")
    with pytest.raises(IsADirectoryError):
        await busybox.read_file(base)
    with pytest.raises(IsADirectoryError):
        await busybox.write_file(base, b"x")
    with pytest.raises(NotADirectoryError):
        await busybox.write_file(f"{base}/file/below", b"x")
    with pytest.raises(PermissionError):
        await busybox.write_file("/proc/version", b"x")


# --- timeout and cancel kill the group inside the container ------------------------------


def group_command(seconds: str) -> str:
    """Two background sleeps (one ignoring SIGTERM) and a foreground one, then 'started'."""
    return f"sleep {seconds} & (trap '' TERM; exec sleep {seconds}) & echo started; sleep {seconds}"


async def test_timeout_kills_the_group_inside(
    backend: ContainerBackend, any_container: Container
) -> None:
    seconds = sleeper()
    sink = Recorder()
    started = sink.marker("started")
    task = asyncio.create_task(backend.run(group_command(seconds), timeout=2, on_chunk=sink))
    await wait_for(started)

    async def all_three() -> bool:
        return len(await processes(any_container.name, f"sleep {seconds}")) == 3

    await until(all_three, "the three sleeps to run", DEADLINE, every=0.05)
    result = await task
    assert result.timed_out and not result.cancelled
    assert result.exit_code is None
    assert result.stdout == "started\n"
    assert await processes(any_container.name, f"sleep {seconds}") == []


async def test_cancel_kills_the_group_inside(
    backend: ContainerBackend, any_container: Container
) -> None:
    seconds = sleeper()
    sink = Recorder()
    started = sink.marker("started")
    cancel = asyncio.Event()
    task = asyncio.create_task(
        backend.run(group_command(seconds), cancel=cancel, on_chunk=sink, timeout=DEADLINE * 3)
    )
    await wait_for(started)
    await until(
        lambda: _has(any_container.name, f"sleep {seconds}"),
        "the sleeps to run",
        DEADLINE,
        every=0.05,
    )
    cancel.set()
    result = await asyncio.wait_for(task, DEADLINE)
    assert result.cancelled and not result.timed_out
    assert result.exit_code is None
    assert await processes(any_container.name, f"sleep {seconds}") == []


async def _has(container: str, needle: str) -> bool:
    return bool(await processes(container, needle))


async def test_cancelled_task_kills_the_group_inside(
    busybox: ContainerBackend, busybox_container: Container
) -> None:
    """The caller's task is cancelled (the app quitting): no await is possible, a thread
    kills the group."""
    seconds = sleeper()
    sink = Recorder()
    started = sink.marker("started")
    task = asyncio.create_task(busybox.run(group_command(seconds), on_chunk=sink))
    await wait_for(started)
    await until(
        lambda: _has(busybox_container.name, f"sleep {seconds}"), "the sleeps", DEADLINE, every=0.05
    )
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_none_left(busybox_container.name, f"sleep {seconds}")


async def test_task_cancelled_right_after_start_still_kills_inside(
    busybox: ContainerBackend, busybox_container: Container
) -> None:
    """Cancelled while the engine is still starting the exec (before the group is known)."""
    seconds = sleeper()
    task = asyncio.create_task(busybox.run(f"sleep {seconds}"))

    async def client_started() -> bool:
        return any(seconds.encode() in _cmdline(pid) for pid in _host_pids())

    await until(client_started, "the podman exec client to start", DEADLINE, every=0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await busybox.close()  # waits for a deferred kill, if that path was taken
    await assert_none_left(busybox_container.name, f"sleep {seconds}")


# --- the container going away -----------------------------------------------------------


async def test_container_stopped_mid_command_then_started_again(
    own_container: Container,
) -> None:
    name = own_container.name
    backend = ContainerBackend(name, engine=ENGINE)
    sink = Recorder()
    started = sink.marker("started")
    task = asyncio.create_task(
        backend.run("echo started; sleep 300", on_chunk=sink, timeout=DEADLINE * 3)
    )
    await wait_for(started)
    await asyncio.to_thread(podman, "stop", "-t", "0", name)
    with pytest.raises(BackendError, match="stopped while the command ran") as stopped:
        await asyncio.wait_for(task, DEADLINE)
    assert f"`podman start {name}`" in str(stopped.value)

    with pytest.raises(BackendError) as not_running:
        await backend.run("true")
    assert str(not_running.value).startswith(
        f"container {name} is not running"
    ) and f"start it with `podman start {name}`" in str(not_running.value)
    with pytest.raises(BackendError, match="is not running"):
        await backend.read_file("/etc/passwd")
    with pytest.raises(BackendError, match="is not running"):
        await backend.spawn(["cat"])

    await asyncio.to_thread(podman, "start", name)
    result = await backend.run("echo back")
    assert (result.exit_code, result.stdout) == (0, "back\n")


async def test_missing_container_is_a_clear_error(own_container: Container) -> None:
    missing = f"agent-tui-test-missing-{secrets.token_hex(4)}"
    with pytest.raises(BackendError, match=f"No container named '{missing}'.*podman"):
        await ContainerBackend(missing).run("true")
    with pytest.raises(BackendError, match=f"container {missing} does not exist"):
        await ContainerBackend(missing, engine=ENGINE).run("true")

    backend = ContainerBackend(own_container.name)
    assert (await backend.run("echo here")).stdout == "here\n"
    remove_container(own_container.name)
    with pytest.raises(BackendError, match=f"container {own_container.name} does not exist"):
        await backend.run("true")


# --- engine detection -------------------------------------------------------------------


async def test_engine_is_detected_by_probing(busybox_container: Container) -> None:
    name = busybox_container.name
    expected = "podman"
    if shutil.which("docker"):  # a docker CLI without a daemon (as here) does not know it
        probe = await asyncio.to_thread(
            subprocess.run, ["docker", "container", "inspect", name], capture_output=True
        )
        expected = "docker" if probe.returncode == 0 else "podman"
    assert await detect_engine(name) == expected
    backend = ContainerBackend(name)
    assert await backend.engine() == expected
    assert await backend.status() == "running"
    assert await detect_engine(name, candidates=("podman",)) == "podman"


async def test_no_engine_installed(busybox_container: Container) -> None:
    with pytest.raises(BackendError, match="is installed"):
        await detect_engine(busybox_container.name, candidates=("agent-tui-no-such-engine",))


@pytest.fixture
def docker_host(podman_images: Images, tmp_path: Path) -> Iterator[str]:
    """The docker CLI's view of podman: ``podman system service`` on a private socket."""
    if shutil.which("docker") is None:
        pytest.skip("the docker CLI is not installed (docker path tested only when it is)")
    socket = tmp_path / "podman.sock"
    service = subprocess.Popen(
        [ENGINE, "system", "service", "--time", "0", f"unix://{socket}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    host = f"unix://{socket}"
    try:
        deadline = time.monotonic() + DEADLINE
        env = {**os.environ, "DOCKER_HOST": host}
        while subprocess.run(["docker", "version"], env=env, capture_output=True).returncode:
            if time.monotonic() > deadline or service.poll() is not None:
                pytest.fail("podman system service did not answer the docker CLI")
            time.sleep(0.05)  # a sync fixture polling a condition against a deadline
        yield host
    finally:
        service.terminate()
        service.wait(timeout=DEADLINE)


async def test_docker_cli_engine(docker_host: str, busybox_container: Container) -> None:
    """The same backend through the docker CLI (talking to podman's Docker API)."""
    name = busybox_container.name
    backend = ContainerBackend(name, engine="docker", engine_env={"DOCKER_HOST": docker_host})
    result = await backend.run('pwd; echo "$GREETING"', cwd="/tmp", env={"GREETING": "hi"})
    assert (result.exit_code, result.stdout) == (0, "/tmp\nhi\n")
    path = f"/tmp/docker-{secrets.token_hex(4)}/f"
    await backend.write_file(path, b"\x00\xffdata")
    assert await backend.read_file(path) == b"\x00\xffdata"
    seconds = sleeper()
    result = await backend.run(group_command(seconds), timeout=1.5)
    assert result.timed_out
    assert await processes(name, f"sleep {seconds}") == []


# --- spawn ------------------------------------------------------------------------------


@pytest.fixture
async def spawned() -> AsyncIterator[list[ContainerProcess]]:
    """Processes a test spawns; closed at teardown whatever happens."""
    started: list[ContainerProcess] = []
    yield started
    for process in started:
        await process.close()


async def read_until(process: ContainerProcess, needle: bytes) -> bytes:
    seen = b""

    async def more() -> None:
        nonlocal seen
        while needle not in seen:
            chunk = await process.read()
            if not chunk:
                pytest.fail(f"end of stream before {needle!r}; got {seen!r}")
            seen += chunk

    await asyncio.wait_for(more(), DEADLINE)
    return seen


async def test_spawn_round_trip(busybox: ContainerBackend, spawned: list[ContainerProcess]) -> None:
    """stdin and stdout piped, stderr merged into stdout in order (as tmux's error messages
    must be read with everything else), the environment forwarded."""
    process = await busybox.spawn(
        ["sh", "-c", 'echo "$GREETING" >&2; echo out; exec cat'], env={"GREETING": "to-stderr"}
    )
    assert isinstance(process, ContainerProcess)
    spawned.append(process)
    assert await read_until(process, b"out\n") == b"to-stderr\nout\n"
    await process.write(b"hello\n")
    assert await read_until(process, b"hello\n") == b"hello\n"
    await process.close()
    assert process.returncode == 0
    assert process.engine_messages == ""
    with pytest.raises(BackendError, match="is gone"):
        await process.write(b"more\n")


async def test_spawn_close_kills_a_process_that_ignores_eof(
    busybox: ContainerBackend, busybox_container: Container, spawned: list[ContainerProcess]
) -> None:
    seconds = sleeper()
    process = await busybox.spawn(["sh", "-c", f"trap '' TERM; sleep {seconds}"])
    assert isinstance(process, ContainerProcess)
    spawned.append(process)
    process.close_grace = 0.2
    await until(
        lambda: _has(busybox_container.name, f"sleep {seconds}"), "the sleep", DEADLINE, every=0.05
    )
    await process.close()
    assert process.returncode is not None
    await assert_none_left(busybox_container.name, f"sleep {seconds}")


async def test_spawn_missing_program(busybox: ContainerBackend) -> None:
    with pytest.raises(BackendError, match="'agent-tui-nope' was not found in container"):
        await busybox.spawn(["agent-tui-nope"])


async def test_spawn_starts_in_the_default_cwd(
    busybox_container: Container, spawned: list[ContainerProcess]
) -> None:
    backend = ContainerBackend(busybox_container.name, engine=ENGINE, default_cwd="/etc")
    process = await backend.spawn(["sh", "-c", "pwd; exec cat"])
    assert isinstance(process, ContainerProcess)
    spawned.append(process)
    assert await read_until(process, b"\n") == b"/etc\n"
    missing = ContainerBackend(busybox_container.name, engine=ENGINE, default_cwd="/nowhere")
    with pytest.raises(BackendError, match="'/nowhere' does not exist in container"):
        await missing.spawn(["cat"])


async def test_spawn_tmux_control_mode_inside(
    hostlike_container: Container, spawned: list[ContainerProcess]
) -> None:
    """What the tmux layer will do: a control-mode client over the spawned pipes."""
    backend = ContainerBackend(hostlike_container.name, engine=ENGINE)
    socket = f"agent-tui-{secrets.token_hex(4)}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    process = await backend.spawn([*tmux, "-C", "new-session", "-x", "80", "-y", "24"])
    assert isinstance(process, ContainerProcess)
    spawned.append(process)
    try:
        await process.write(b"display-message -p 'in #{session_name}: ok'\n")
        seen = await read_until(process, b": ok")
        assert b"%begin" in seen
    finally:
        await backend.run(f"tmux -L {socket} kill-server")


# --- through the real tool path ---------------------------------------------------------


async def test_run_shell_tool_runs_in_the_container(podman_images: Images, workspace: Path) -> None:
    """The registry and policy as the app wires them; the workspace is mounted at the same
    path, since ``run_shell`` passes the workspace as cwd."""
    container = start_container(
        podman_images.hostlike, hostlike=True, volumes=[(workspace, str(workspace))]
    )
    try:
        harness = make_harness(workspace, backend=ContainerBackend(container.name))
        result = await harness.call(
            "run_shell",
            {"command": "echo inside > made.txt; tr '\\0' ' ' < /proc/1/cmdline; echo"},
        )
        assert not result.is_error, result.text
        assert "exit code: 0" in result.text
        assert "sleep 1000000" in result.text  # pid 1 is the container's
        assert (workspace / "made.txt").read_text() == "inside\n"

        written = await harness.call("write_file", {"path": "notes/a.txt", "content": "one\n"})
        assert not written.is_error, written.text
        assert (workspace / "notes" / "a.txt").read_text() == "one\n"
        read = await harness.call("read_file", {"path": "notes/a.txt"})
        assert "one" in read.text

        await asyncio.to_thread(podman, "stop", "-t", "0", container.name)
        failed = await harness.call("run_shell", {"command": "true"})
        assert failed.is_error
        assert f"container:{container.name}" in failed.text
        assert f"podman start {container.name}" in failed.text
    finally:
        remove_container(container.name)

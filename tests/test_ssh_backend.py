"""SSHBackend against a real OpenSSH sshd on 127.0.0.1, logged in as an unprivileged user.

These check what only OpenSSH does: a login shell per session, ``setsid`` making the shell a
process group leader, the exit status arriving before the output is drained, ``internal-sftp``,
and what a client sees when sshd dies (its users' commands keep running). The server comes
from ``tests/sshd.py`` and is shared by the whole session; the test that kills it restarts it.

Flags and pid files live in the server's scratch folder, which both this (root) process and the
login user can use; nothing waits by sleeping.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncssh
import pytest

from tests.chunks import Recorder, wait_for
from tests.conftest import make_harness
from tests.ssh_support import (
    DEADLINE,
    assert_remote_dead,
    read_pids,
    remote_alive,
)
from tests.sshd import SshdUnavailable, SshServer
from tui.events import ToolCallStarted, ToolOutputChunk
from tui.exec.backend import BackendError
from tui.exec.ssh.backend import SSHBackend


@pytest.fixture(scope="session")
def sshd() -> Iterator[SshServer]:
    try:
        server = SshServer.start()
    except SshdUnavailable as exc:
        pytest.skip(f"no test sshd: {exc}")
    yield server
    server.cleanup()


@pytest.fixture
def scratch(sshd: SshServer, request: pytest.FixtureRequest) -> Path:
    """A fresh folder per test that the login user owns."""
    name: str = request.node.name
    folder = sshd.scratch / name.replace("[", "-").replace("]", "")
    folder.mkdir()
    folder.chmod(0o777)
    return folder


def make_backend(sshd: SshServer, **kwargs: object) -> SSHBackend:
    options: dict[str, object] = {
        "identity_file": str(sshd.client_key),
        "known_hosts": str(sshd.known_hosts),
        "ssh_config": [],
        "connect_timeout": 5.0,
    }
    options.update(kwargs)
    return SSHBackend(sshd.target, **options)  # type: ignore[arg-type]


@pytest.fixture
async def backend(sshd: SshServer) -> AsyncIterator[SSHBackend]:
    ssh = make_backend(sshd)
    yield ssh
    await ssh.close()


# --- commands -------------------------------------------------------------------------------


async def test_round_trip_as_the_login_user(sshd: SshServer, backend: SSHBackend) -> None:
    assert backend.actor == f"ssh:{sshd.user}@127.0.0.1"
    result = await backend.run('id -un; printf "%s\\n" "$HOME"; exit 7')
    assert result.exit_code == 7
    assert result.stdout == f"{sshd.user}\n/home/{sshd.user}\n"
    assert result.stderr == ""


async def test_stdout_stderr_and_streaming(backend: SSHBackend, scratch: Path) -> None:
    flag = scratch / "go"
    sink = Recorder()
    command = (
        f"echo ready; echo warn >&2; while [ ! -e {flag} ]; do sleep 0.01; done; "
        "printf 'A\\342\\202'; sleep 0.05; printf '\\254\\n'"
    )
    task = asyncio.create_task(backend.run(command, on_chunk=sink, timeout=DEADLINE))
    await wait_for(sink.marker("ready"))
    assert not task.done()
    flag.touch()
    result = await task
    assert result.stdout == "ready\nA€\n"
    assert result.stderr == "warn\n"
    assert sink.text("stdout") == result.stdout


async def test_timeout_kills_the_remote_process_group(backend: SSHBackend, scratch: Path) -> None:
    pids = scratch / "pids"
    command = (
        f"sleep 300 & echo $! > {pids}; "
        f"(trap '' TERM; exec sleep 301) >/dev/null 2>&1 & echo $! >> {pids}; "
        f"echo $$ >> {pids}; wait"
    )
    started = time.monotonic()
    result = await backend.run(command, timeout=0.5)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 0.5 + DEADLINE
    assert len(read_pids(pids)) == 3
    await assert_remote_dead(backend, read_pids(pids))


async def test_cancel_kills_the_remote_process_group(backend: SSHBackend, scratch: Path) -> None:
    pids = scratch / "pids"
    sink = Recorder()
    cancel = asyncio.Event()
    command = f"sleep 300 & echo $! > {pids}; echo $$ >> {pids}; echo ready; wait"
    task = asyncio.create_task(backend.run(command, cancel=cancel, on_chunk=sink))
    await wait_for(sink.marker("ready"))
    assert all([await remote_alive(backend, pid) for pid in read_pids(pids)])
    cancel.set()
    result = await asyncio.wait_for(task, DEADLINE)
    assert result.cancelled and result.exit_code is None
    await assert_remote_dead(backend, read_pids(pids))


async def test_background_holder_is_drained_then_left_alone(sshd: SshServer, scratch: Path) -> None:
    """sshd sends the exit status while ``sleep`` still holds stdout: drain, then give up."""
    pids = scratch / "pids"
    ssh = make_backend(sshd, drain_timeout=0.3)
    try:
        result = await ssh.run(f"sleep 30 & echo $! > {pids}; echo done", timeout=DEADLINE)
        assert result.exit_code == 0 and result.stdout == "done\n"
        assert any("drain stopped" in notice for notice in result.notices)
        assert await remote_alive(ssh, read_pids(pids)[0])  # started on purpose: kept
    finally:
        await ssh.run(f"kill {read_pids(pids)[0]}")
        await ssh.close()


async def test_cwd_and_env(backend: SSHBackend, scratch: Path) -> None:
    env = {"GREETING": "hi there", "HOME": "/root", "PATH": "/nonexistent"}
    result = await backend.run(
        'pwd; printf "%s|%s|%s\\n" "$GREETING" "$HOME" "${SSH_CONNECTION-unset}"; ls -d .',
        cwd=str(scratch),
        env=env,
    )
    assert result.exit_code == 0, result.stderr
    home = f"/home/{backend.target.user}"
    assert result.stdout == f"{scratch}\nhi there|{home}|unset\n.\n"
    with pytest.raises(BackendError, match="does not exist"):
        await backend.run("true", cwd=str(scratch / "missing"))


# --- files ----------------------------------------------------------------------------------


async def test_sftp_round_trip(backend: SSHBackend, scratch: Path, sshd: SshServer) -> None:
    data = bytes(range(256)) * 1000
    target = scratch / "deep" / "er" / "blob.bin"
    await backend.write_file(str(target), data)
    assert target.read_bytes() == data
    assert target.stat().st_uid == Path(f"/home/{sshd.user}").stat().st_uid
    assert await backend.read_file(str(target)) == data
    note = f"atui-note-{sshd.port}.txt"  # unique: another run may share the user's home
    try:
        await backend.write_file(f"~/{note}", b"in home")
        assert Path(f"/home/{sshd.user}/{note}").read_bytes() == b"in home"
        assert await backend.read_file(note) == b"in home"  # relative: the home
    finally:
        Path(f"/home/{sshd.user}/{note}").unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError):
        await backend.read_file(str(scratch / "missing"))
    with pytest.raises(IsADirectoryError):
        await backend.read_file(str(scratch))
    with pytest.raises(PermissionError):
        await backend.write_file("/etc/atui-test-must-not-exist", b"x")
    with pytest.raises(FileNotFoundError):
        await backend.write_file(str(scratch / "no" / "f"), b"x", make_parents=False)


# --- host keys ------------------------------------------------------------------------------


async def test_unknown_host_key_is_refused(sshd: SshServer, scratch: Path) -> None:
    empty = scratch / "known_hosts"
    empty.write_text("")
    ssh = make_backend(sshd, known_hosts=str(empty))
    with pytest.raises(BackendError) as caught:
        await ssh.run(f"touch {scratch / 'ran'}")
    message = caught.value.msg
    assert sshd.host_key.get_fingerprint("sha256") in message
    assert f"ssh-keyscan -p {sshd.port} -t ed25519 127.0.0.1 >> {empty}" in message
    assert not (scratch / "ran").exists()


async def test_the_suggested_keyscan_really_trusts_the_host(sshd: SshServer, scratch: Path) -> None:
    """Following the error message's advice literally makes the next connection work."""
    if shutil.which("ssh-keyscan") is None:
        pytest.skip("ssh-keyscan is not installed (apt-get install openssh-client)")
    known = scratch / "known_hosts"
    known.write_text("")
    ssh = make_backend(sshd, known_hosts=str(known))
    with pytest.raises(BackendError) as caught:
        await ssh.run("true")
    remedy = next(line.strip() for line in caught.value.msg.splitlines() if "ssh-keyscan" in line)
    process = await asyncio.create_subprocess_shell(
        remedy, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    assert await process.wait() == 0
    try:
        assert (await ssh.run("echo trusted")).stdout == "trusted\n"
    finally:
        await ssh.close()


async def test_changed_host_key_is_refused(sshd: SshServer, scratch: Path) -> None:
    stale = scratch / "known_hosts"
    sshd.write_known_hosts(stale, asyncssh.generate_private_key("ssh-ed25519"))
    ssh = make_backend(sshd, known_hosts=str(stale))
    with pytest.raises(BackendError, match="CHANGED") as caught:
        await ssh.run("true")
    assert sshd.host_key.get_fingerprint("sha256") in caught.value.msg
    assert "man-in-the-middle" in caught.value.msg


# --- losing the server ----------------------------------------------------------------------


async def test_sshd_killed_mid_command_then_restarted(sshd: SshServer, scratch: Path) -> None:
    pids = scratch / "pids"
    sink = Recorder()
    ssh = make_backend(sshd)
    try:
        command = f"sleep 300 & echo $! > {pids}; echo $$ >> {pids}; echo ready; wait"
        task = asyncio.create_task(ssh.run(command, on_chunk=sink))
        await wait_for(sink.marker("ready"))
        sshd.kill_hard()
        try:
            with pytest.raises(BackendError, match="lost the connection"):
                await asyncio.wait_for(task, DEADLINE)
            started = time.monotonic()
            with pytest.raises(BackendError, match=r"cannot reach .*connection refused"):
                await ssh.run("true")
            assert time.monotonic() - started < 2.0
        finally:
            sshd.restart()
        result = await ssh.run("echo back")
        assert result.stdout == "back\n"
        assert any("reconnected to" in notice for notice in result.notices)
        # sshd died without killing the command; the reconnect stopped what it left.
        assert any("left running" in notice for notice in result.notices)
        await assert_remote_dead(ssh, read_pids(pids))
    finally:
        await ssh.close()


async def test_dead_port_fails_fast(sshd: SshServer) -> None:
    from tests.sshd import free_port

    port = free_port()
    ssh = SSHBackend(
        f"{sshd.user}@127.0.0.1:{port}",
        identity_file=str(sshd.client_key),
        known_hosts=str(sshd.known_hosts),
        ssh_config=[],
        connect_timeout=2.0,
    )
    started = time.monotonic()
    with pytest.raises(BackendError, match=f"cannot reach {sshd.user}@127.0.0.1:{port}"):
        await ssh.run("true")
    assert time.monotonic() - started < 2.0


async def test_unanswering_host_times_out(sshd: SshServer) -> None:
    """A listener that never speaks SSH: the connect timeout, not a hang."""
    accepted: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda r, w: accepted.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    ssh = SSHBackend(
        f"{sshd.user}@127.0.0.1:{port}",
        known_hosts=str(sshd.known_hosts),
        ssh_config=[],
        connect_timeout=0.5,
    )
    try:
        started = time.monotonic()
        with pytest.raises(BackendError, match=r"no answer within 0\.5 s"):
            await ssh.run("true")
        assert time.monotonic() - started < 0.5 + DEADLINE
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


# --- configuration and the tool path -------------------------------------------------------


async def test_ssh_config_alias(sshd: SshServer, scratch: Path) -> None:
    config = scratch / "ssh_config"
    config.write_text(
        "Host atui-box\n"
        f"  HostName {sshd.host}\n"
        f"  Port {sshd.port}\n"
        f"  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n"
        f"  UserKnownHostsFile {sshd.known_hosts}\n"
    )
    ssh = SSHBackend("atui-box", ssh_config=[str(config)], connect_timeout=5)
    try:
        assert ssh.actor == "ssh:atui-box"
        assert (await ssh.run("id -un")).stdout == f"{sshd.user}\n"
    finally:
        await ssh.close()


async def test_spawn_cat_round_trip(backend: SSHBackend) -> None:
    process = await backend.spawn(["cat"])
    await process.write(b"ping\n")
    received = b""
    while not received.endswith(b"\n"):
        received += await asyncio.wait_for(process.read(), DEADLINE)
    assert received == b"ping\n"
    await process.close()
    assert process.returncode == 0


async def test_run_shell_tool_through_the_registry(backend: SSHBackend, scratch: Path) -> None:
    workspace = scratch / "ws"
    workspace.mkdir()
    workspace.chmod(0o777)
    harness = make_harness(workspace, backend=backend)
    result = await harness.call(
        "run_shell", {"command": "pwd; id -un; echo $HOME; echo oops >&2; exit 4"}
    )
    text = result.text
    assert "exit code: 4" in text
    assert f"{workspace}\n{backend.target.user}\n/home/{backend.target.user}" in text
    assert "stderr:\noops" in text
    chunks = [e for e in harness.events if isinstance(e, ToolOutputChunk)]
    assert "".join(e.text for e in chunks if e.stream == "stdout").startswith(str(workspace))
    started = [e for e in harness.events if isinstance(e, ToolCallStarted)]
    assert [e.actor for e in started] == [backend.actor]
    assert result.details["exit_code"] == 4

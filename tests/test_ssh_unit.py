"""SSHBackend against asyncssh's own server in this process: fast, and no install needed.

The server runs every command for real (``/bin/sh -c`` in a new session, as sshd does) and
serves SFTP on the local disk, so these tests see real processes, real pipes and real SSH
packets. What only OpenSSH does is checked in ``test_ssh_backend.py``. Nothing synchronises
by sleeping: commands wait for flag files the test creates once it has *seen* their output.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import pytest

from tests.chunks import (
    Recorder,
    check_split_multibyte_character,
    check_streams_before_the_end,
    wait_for,
)
from tests.ssh_support import (
    DEADLINE,
    InProcessServer,
    assert_remote_dead,
    read_pids,
    remote_alive,
)
from tui.config import SshSettings
from tui.exec.backend import BackendError
from tui.exec.ssh.backend import SSHBackend
from tui.exec.ssh.command_line import REMOTE_OWNED_ENV
from tui.exec.ssh.target import SSHTarget


@pytest.fixture(params=["/bin/bash", "/bin/sh"], ids=["login-bash", "login-sh"])
async def server(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[InProcessServer]:
    """Both command forms: ``eval`` in a bash login shell, and the portable sh wrapper."""
    srv = await InProcessServer(tmp_path, login_shell=request.param).start()
    yield srv
    await srv.close()


@pytest.fixture
async def backend(server: InProcessServer) -> AsyncIterator[SSHBackend]:
    ssh = server.backend()
    yield ssh
    await ssh.close()


# --- targets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "user", "host", "port"),
    [
        ("example.org", None, "example.org", None),
        ("deploy@example.org", "deploy", "example.org", None),
        ("deploy@10.0.0.5:2222", "deploy", "10.0.0.5", 2222),
        ("ssh://me@host:22/", "me", "host", 22),
        ("[::1]:2200", None, "::1", 2200),
        ("me@[fe80::1]", "me", "fe80::1", None),
        ("::1", None, "::1", None),
        ("my-alias", None, "my-alias", None),
    ],
)
def test_target_parse(text: str, user: str | None, host: str, port: int | None) -> None:
    target = SSHTarget.parse(text)
    assert (target.user, target.host, target.port) == (user, host, port)


@pytest.mark.parametrize("text", ["", "@host", "me@", "host:0", "host:99999", "host:ab", "a b"])
def test_target_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        SSHTarget.parse(text)


def test_from_settings() -> None:
    settings = SshSettings(host="deploy@example.org:2222", known_hosts="/x/kh", connect_timeout=3)
    backend = SSHBackend.from_settings(settings)
    assert backend.target == SSHTarget("example.org", "deploy", 2222)
    assert backend.actor == "ssh:deploy@example.org"
    with pytest.raises(BackendError, match=r"\[ssh\]\.host is not set"):
        SSHBackend.from_settings(SshSettings())


def test_actor_is_short_and_readable() -> None:
    assert SSHBackend("deploy@example.org:2222").actor == "ssh:deploy@example.org"
    assert SSHBackend("build-box").actor == "ssh:build-box"
    assert SSHBackend("deploy@example.org").SUPPORTS_SPAWN


# --- commands -----------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "code"), [("true", 0), ("false", 1), ("exit 3", 3)])
async def test_exit_codes(backend: SSHBackend, command: str, code: int) -> None:
    result = await backend.run(command)
    assert result.exit_code == code
    assert not result.timed_out and not result.cancelled
    assert result.duration_ms > 0


async def test_killed_by_signal_reports_negative_code(backend: SSHBackend) -> None:
    result = await backend.run("kill -9 $$")
    assert result.exit_code == -signal.SIGKILL


async def test_stdout_and_stderr_are_separate(backend: SSHBackend) -> None:
    sink = Recorder()
    result = await backend.run("echo out; echo err >&2; echo out2", on_chunk=sink)
    assert result.stdout == "out\nout2\n"
    assert result.stderr == "err\n"
    assert sink.text("stdout") == result.stdout
    assert sink.text("stderr") == result.stderr


async def test_one_connection_serves_every_call(
    server: InProcessServer, backend: SSHBackend, tmp_path: Path
) -> None:
    results = await asyncio.gather(*(backend.run(f"echo {n}") for n in range(12)))
    assert [r.stdout for r in results] == [f"{n}\n" for n in range(12)]
    await backend.write_file(str(tmp_path / "f"), b"x")
    assert await backend.read_file(str(tmp_path / "f")) == b"x"
    process = await backend.spawn(["true"])
    await process.close()
    assert server.accepted == 1


async def test_output_streams_before_the_command_ends(backend: SSHBackend, tmp_path: Path) -> None:
    await check_streams_before_the_end(backend, tmp_path)


async def test_multibyte_character_split_across_packets(
    backend: SSHBackend, tmp_path: Path
) -> None:
    await check_split_multibyte_character(backend, tmp_path)


async def test_binary_output_is_replaced_not_raised(backend: SSHBackend) -> None:
    result = await backend.run("printf '\\377ok\\342'")
    assert result.stdout == "\ufffdok\ufffd"


async def test_large_output_is_complete(backend: SSHBackend) -> None:
    sink = Recorder()
    result = await backend.run("head -c 2000000 /dev/zero | tr '\\0' a", on_chunk=sink)
    assert result.stdout == "a" * 2_000_000
    assert sink.text("stdout") == result.stdout


async def test_timeout_kills_the_remote_process_group(backend: SSHBackend, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    sink = Recorder()
    command = f"sleep 300 & echo $! > {pids}; echo $$ >> {pids}; echo ready; wait"
    started = time.monotonic()
    result = await backend.run(command, timeout=0.5, on_chunk=sink)
    assert result.timed_out and result.exit_code is None
    assert sink.text("stdout") == "ready\n"
    assert time.monotonic() - started < 0.5 + DEADLINE
    await assert_remote_dead(backend, read_pids(pids))


async def test_timeout_escalates_to_sigkill(backend: SSHBackend, tmp_path: Path) -> None:
    """A child that ignores SIGTERM (and holds no pipe) still dies."""
    pids = tmp_path / "pids"
    command = f"(trap '' TERM; exec sleep 300) >/dev/null 2>&1 & echo $! > {pids}; wait"
    result = await backend.run(command, timeout=0.3)
    assert result.timed_out
    await assert_remote_dead(backend, read_pids(pids))


async def test_cancel_event_kills_the_remote_process_group(
    backend: SSHBackend, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    sink = Recorder()
    cancel = asyncio.Event()
    command = f"sleep 300 & echo $! > {pids}; echo ready; wait"
    task = asyncio.create_task(backend.run(command, cancel=cancel, on_chunk=sink))
    await wait_for(sink.marker("ready"))
    cancel.set()
    result = await asyncio.wait_for(task, DEADLINE)
    assert result.cancelled and not result.timed_out and result.exit_code is None
    await assert_remote_dead(backend, read_pids(pids))


async def test_cancel_already_set_runs_nothing(backend: SSHBackend, tmp_path: Path) -> None:
    cancel = asyncio.Event()
    cancel.set()
    result = await backend.run(f"touch {tmp_path / 'ran'}", cancel=cancel)
    assert result.cancelled
    assert not (tmp_path / "ran").exists()


async def test_cancelled_task_kills_the_remote_process_group(
    backend: SSHBackend, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    sink = Recorder()
    command = f"sleep 300 & echo $! > {pids}; echo ready; wait"
    task = asyncio.create_task(backend.run(command, on_chunk=sink))
    await wait_for(sink.marker("ready"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_remote_dead(backend, read_pids(pids))


async def test_cwd_and_errors(backend: SSHBackend, tmp_path: Path) -> None:
    result = await backend.run("pwd", cwd=str(tmp_path))
    assert result.stdout == f"{tmp_path}\n"
    with pytest.raises(BackendError, match="does not exist"):
        await backend.run("pwd", cwd=str(tmp_path / "missing"))
    (tmp_path / "file").touch()
    with pytest.raises(BackendError, match="is not a directory"):
        await backend.run("pwd", cwd=str(tmp_path / "file"))


async def test_default_cwd(server: InProcessServer, tmp_path: Path) -> None:
    ssh = server.backend(default_cwd=str(tmp_path))
    try:
        assert (await ssh.run("pwd")).stdout == f"{tmp_path}\n"
        await ssh.write_file("rel.txt", b"relative")
        assert (tmp_path / "rel.txt").read_bytes() == b"relative"
        assert await ssh.read_file("rel.txt") == b"relative"
    finally:
        await ssh.close()


async def test_env_is_the_whole_environment_except_host_owned_names(
    backend: SSHBackend,
) -> None:
    remote_home = (await backend.run('printf %s "$HOME"')).stdout
    env = {"FOO": "bar baz", "QUOTE": "it's $x", "HOME": "/local/home", "PATH": "/local/bin"}
    result = await backend.run(
        'printf "%s|%s|%s|%s|%s" "$FOO" "$QUOTE" "$HOME" "$PWD" "${AGENT_TUI_CONFIG_DIR-unset}"',
        env=env,
        cwd="/",
    )
    assert result.stdout == f"bar baz|it's $x|{remote_home}|/|unset"
    path = (await backend.run('printf %s "$PATH"', env=env)).stdout
    assert path != "/local/bin" and "/bin" in path
    names = {
        line.split("=", 1)[0] for line in (await backend.run("env", env=env)).stdout.splitlines()
    }
    assert {"FOO", "QUOTE", "HOME", "PATH"} <= names
    assert names <= {"FOO", "QUOTE", *REMOTE_OWNED_ENV, "SHLVL", "_", "OLDPWD"}


async def test_run_with_stdin_is_byte_exact(backend: SSHBackend) -> None:
    data = bytes(range(256)) * 1000
    result = await backend.run_with_stdin("od -An -v -tx1 | tr -d ' \\n' | head -c 1024", data)
    assert result.exit_code == 0
    assert result.stdout == data.hex()[:1024]


async def test_a_chatty_login_script_is_output_not_a_header(tmp_path: Path) -> None:
    noise = "echo welcome; echo 12345; echo to-stderr >&2\n"
    server = await InProcessServer(tmp_path, login_noise=noise).start()
    ssh = server.backend()
    try:
        for _ in range(2):  # the portable form, then the bash form
            result = await ssh.run("echo out", cwd=str(tmp_path))
            assert result.stdout == "welcome\n12345\nout\n"
            assert result.stderr == "to-stderr\n"
        process = await ssh.spawn(["cat"])
        await process.write(b"x\n")
        assert await asyncio.wait_for(process.read(), DEADLINE) == b"x\n"
        await process.close()
    finally:
        await ssh.close()
        await server.close()


# --- files over SFTP ------------------------------------------------------------------------


async def test_sftp_round_trip_binary_and_make_parents(backend: SSHBackend, tmp_path: Path) -> None:
    data = bytes(range(256)) * 4096 + b"\r\n\x00"
    target = tmp_path / "a" / "b" / "blob.bin"
    await backend.write_file(str(target), data)
    assert target.read_bytes() == data
    assert await backend.read_file(str(target)) == data
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


async def test_write_without_make_parents_needs_the_folder(
    backend: SSHBackend, tmp_path: Path
) -> None:
    with pytest.raises(FileNotFoundError):
        await backend.write_file(str(tmp_path / "nope" / "f"), b"x", make_parents=False)
    assert not (tmp_path / "nope").exists()


async def test_write_replaces_and_keeps_mode(backend: SSHBackend, tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("old")
    target.chmod(0o751)
    await backend.write_file(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751


async def test_write_through_symlink_updates_the_target(
    backend: SSHBackend, tmp_path: Path
) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    await backend.write_file(str(link), b"new")
    assert link.is_symlink()
    assert real.read_bytes() == b"new"


async def test_read_only_file_stays_protected(backend: SSHBackend, tmp_path: Path) -> None:
    target = tmp_path / "ro.txt"
    target.write_text("keep")
    target.chmod(0o444)
    with pytest.raises(PermissionError):
        await backend.write_file(str(target), b"changed")
    assert target.read_text() == "keep"


async def test_file_errors(backend: SSHBackend, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await backend.read_file(str(tmp_path / "missing"))
    with pytest.raises(IsADirectoryError):
        await backend.read_file(str(tmp_path))
    with pytest.raises(IsADirectoryError):
        await backend.write_file(str(tmp_path), b"x")


async def test_without_sftp_files_go_through_the_shell(tmp_path: Path) -> None:
    server = await InProcessServer(tmp_path, sftp=False).start()
    ssh = server.backend()
    try:
        data = bytes(range(256)) * 100
        target = tmp_path / "x" / "y.bin"
        await ssh.write_file(str(target), data)
        assert target.read_bytes() == data
        assert await ssh.read_file(str(target)) == data
        with pytest.raises(FileNotFoundError):
            await ssh.read_file(str(tmp_path / "missing"))
        result = await ssh.run("true")
        assert any("no SFTP subsystem" in notice for notice in result.notices)
    finally:
        await ssh.close()
        await server.close()


# --- host keys ------------------------------------------------------------------------------


async def test_unknown_host_key_is_refused_with_fingerprint_and_remedy(
    server: InProcessServer, tmp_path: Path
) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    ssh = server.backend(known_hosts=str(empty))
    with pytest.raises(BackendError) as caught:
        await ssh.run("touch should-not-run")
    message = caught.value.msg
    assert server.host_key.get_fingerprint("sha256") in message
    assert f"ssh-keyscan -p {server.port} -t ed25519 127.0.0.1 >> {empty}" in message
    assert "[ssh].known_hosts" in message
    assert server.accepted == 1  # it connected, saw the key, and refused


async def test_missing_known_hosts_file_trusts_nothing(
    server: InProcessServer, tmp_path: Path
) -> None:
    ssh = server.backend(known_hosts=str(tmp_path / "does-not-exist"))
    with pytest.raises(BackendError, match=r"not in .*does-not-exist"):
        await ssh.run("true")


async def test_changed_host_key_is_refused_loudly(server: InProcessServer, tmp_path: Path) -> None:
    stale = tmp_path / "stale_known_hosts"
    old_key = asyncssh.generate_private_key("ssh-ed25519")
    server.trust(old_key, stale)
    ssh = server.backend(known_hosts=str(stale))
    with pytest.raises(BackendError) as caught:
        await ssh.run("true")
    message = caught.value.msg
    assert "CHANGED" in message and "man-in-the-middle" in message
    assert server.host_key.get_fingerprint("sha256") in message
    assert old_key.get_fingerprint("sha256") in message
    assert f"ssh-keygen -R '[127.0.0.1]:{server.port}'" in message
    assert caught.value.title == "Host key CHANGED"


# --- reaching the host ---------------------------------------------------------------------


async def test_dead_host_is_a_clear_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port that was just free: nobody listens on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ssh = SSHBackend(f"nobody@127.0.0.1:{port}", known_hosts=str(tmp_path / "kh"), ssh_config=[])
    started = time.monotonic()
    with pytest.raises(
        BackendError, match=rf"cannot reach nobody@127.0.0.1:{port}: connection refused"
    ):
        await ssh.run("true")
    assert time.monotonic() - started < 2.0


async def test_wrong_key_is_an_authentication_error(
    server: InProcessServer, tmp_path: Path
) -> None:
    other = tmp_path / "other_key"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(other))
    ssh = server.backend(identity_file=str(other))
    with pytest.raises(BackendError, match="refused the key"):
        await ssh.run("true")


async def test_dropped_connection_reconnects_once_with_a_notice(
    server: InProcessServer, backend: SSHBackend
) -> None:
    assert (await backend.run("echo one")).stdout == "one\n"
    server.drop_connections()
    sink = Recorder()
    result = await backend.run("echo two", on_chunk=sink)
    assert result.stdout == "two\n"
    assert any("reconnected to" in n and "connection dropped" in n for n in result.notices)
    assert "reconnected" in sink.text("info")
    assert server.accepted == 2
    assert (await backend.run("echo three")).notices == []


async def test_drop_mid_command_is_a_clear_error(
    server: InProcessServer, backend: SSHBackend
) -> None:
    sink = Recorder()
    task = asyncio.create_task(backend.run("echo ready; exec sleep 300", on_chunk=sink))
    await wait_for(sink.marker("ready"))
    server.drop_connections()
    with pytest.raises(BackendError, match=r"lost the connection .* outcome is unknown"):
        await asyncio.wait_for(task, DEADLINE)


async def test_closed_backend_refuses_work(backend: SSHBackend) -> None:
    await backend.run("true")
    await backend.close()
    with pytest.raises(BackendError, match="closed"):
        await backend.run("true")


async def test_ssh_config_alias(server: InProcessServer, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host unit-box\n"
        "  HostName 127.0.0.1\n"
        f"  Port {server.port}\n"
        f"  User {os.environ.get('USER', 'root')}\n"
        f"  IdentityFile {server.client_key_path}\n"
        f"  UserKnownHostsFile {server.known_hosts}\n"
    )
    ssh = SSHBackend("unit-box", ssh_config=[str(config)], connect_timeout=5)
    try:
        assert ssh.actor == "ssh:unit-box"
        assert (await ssh.run("echo via-alias")).stdout == "via-alias\n"
        assert ssh.display.startswith("unit-box (")
    finally:
        await ssh.close()


# --- interactive processes ------------------------------------------------------------------


async def test_spawn_round_trip(backend: SSHBackend) -> None:
    process = await backend.spawn(["cat"])
    await process.write(b"hello\x00\xff\n")
    received = b""
    while len(received) < 8:
        received += await asyncio.wait_for(process.read(), DEADLINE)
    assert received == b"hello\x00\xff\n"
    assert process.returncode is None
    await process.close()
    assert process.returncode == 0


async def test_spawn_merges_stderr_in_order(backend: SSHBackend) -> None:
    process = await backend.spawn(["sh", "-c", "echo out; echo err >&2; echo out2; exit 5"])
    received = b""
    while chunk := await asyncio.wait_for(process.read(), DEADLINE):
        received += chunk
    assert received == b"out\nerr\nout2\n"
    await process.close()
    assert process.returncode == 5
    with pytest.raises(BackendError):
        await process.write(b"late")


async def test_spawn_close_kills_a_process_that_ignores_eof(backend: SSHBackend) -> None:
    process = await backend.spawn(["sh", "-c", "echo $$; exec sleep 300"])
    line = b""
    while not line.endswith(b"\n"):
        line += await asyncio.wait_for(process.read(), DEADLINE)
    pid = int(line)
    assert await remote_alive(backend, pid)
    await process.close()
    await assert_remote_dead(backend, [pid])

"""LocalBackend against real processes: the promises tools rely on, checked end to end.

No mocks: what matters (process groups dying, pipes held open by daemons, UTF-8 split by
the kernel's reads) only happens with real processes. Nothing synchronises by sleeping:
the commands wait for files the test creates when it has *seen* their output, and checks
for dead processes poll ``/proc`` against a deadline.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tui.exec.local as local_module
from tests.chunks import (
    Recorder,
    check_split_multibyte_character,
    check_streams_before_the_end,
    wait_for,
)
from tests.waiting import until
from tui.exec.backend import BackendError, ExecResult, StreamName
from tui.exec.local import LocalBackend

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

DEADLINE = 10.0
"""Generous upper bound for anything that should happen 'soon' on a loaded CI machine."""


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``, from ``/proc``."""
    members: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            members.append(int(entry))
    return members


async def assert_group_gone(pgid: int) -> None:
    """Fail unless every process of the group is dead within ``DEADLINE`` seconds."""
    await until(
        lambda: not group_members(pgid),
        f"process group {pgid} to die",
        DEADLINE,
        detail=lambda: group_members(pgid),
    )


@pytest.fixture
def backend() -> LocalBackend:
    return LocalBackend()


@pytest.fixture
def leftover_groups() -> Iterator[list[int]]:
    """Process groups a test leaves running on purpose; killed at teardown whatever happens."""
    groups: list[int] = []
    yield groups
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- running commands -------------------------------------------------------------------


def test_actor_and_default_shell() -> None:
    backend = LocalBackend()
    assert backend.actor == "local"
    expected = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    assert backend.shell == expected


@pytest.mark.parametrize(("command", "code"), [("true", 0), ("false", 1), ("exit 3", 3)])
async def test_exit_codes(backend: LocalBackend, command: str, code: int) -> None:
    result = await backend.run(command)
    assert result.exit_code == code
    assert not result.timed_out and not result.cancelled
    assert result.duration_ms > 0


async def test_killed_by_signal_reports_negative_code(backend: LocalBackend) -> None:
    result = await backend.run("kill -9 $$")
    assert result.exit_code == -signal.SIGKILL


async def test_stdout_and_stderr_are_separate(backend: LocalBackend) -> None:
    sink = Recorder()
    result = await backend.run("echo out; echo err >&2; echo out2", on_chunk=sink)
    assert result.stdout == "out\nout2\n"
    assert result.stderr == "err\n"
    assert not result.merged_output
    assert sink.text("stdout") == result.stdout
    assert sink.text("stderr") == result.stderr


async def test_output_streams_before_the_command_ends(
    backend: LocalBackend, tmp_path: Path
) -> None:
    await check_streams_before_the_end(backend, tmp_path)


async def test_multibyte_character_split_across_reads(
    backend: LocalBackend, tmp_path: Path
) -> None:
    await check_split_multibyte_character(backend, tmp_path)


async def test_multibyte_split_with_short_pause(backend: LocalBackend) -> None:
    result = await backend.run("printf '\\342\\202'; sleep 0.1; printf '\\254\\n'")
    assert result.stdout == "€\n"


async def test_binary_output_is_replaced_not_raised(backend: LocalBackend) -> None:
    sink = Recorder()
    result = await backend.run(
        "printf '\\377\\376\\000\\200ok'; head -c 65536 /dev/urandom; printf '\\342'",
        on_chunk=sink,
    )
    assert result.exit_code == 0
    assert result.stdout.startswith("\ufffd\ufffd\x00\ufffdok")
    assert result.stdout.endswith("\ufffd")  # a truncated trailing character is flushed
    assert sink.text("stdout") == result.stdout


async def test_large_output_is_complete(backend: LocalBackend) -> None:
    sink = Recorder()
    result = await backend.run("head -c 3000000 /dev/zero | tr '\\0' a", on_chunk=sink)
    assert result.stdout == "a" * 3_000_000
    assert sink.text("stdout") == result.stdout
    assert result.notices == []


async def test_kept_output_is_capped_but_sink_sees_all(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_module, "KEEP_LIMIT", 1000)
    sink = Recorder()
    result = await backend.run("head -c 5000 /dev/zero | tr '\\0' b", on_chunk=sink)
    assert result.stdout == "b" * 1000
    assert sink.text("stdout") == "b" * 5000
    assert any("stdout kept to its first 1,000 characters" in n for n in result.notices)


async def test_output_exactly_at_the_cap_is_not_reported(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_module, "KEEP_LIMIT", 4)
    result = await backend.run("printf '€€€€'")
    assert result.stdout == "€€€€"
    assert result.notices == []


async def test_failing_sink_does_not_lose_output(backend: LocalBackend) -> None:
    def broken(stream: StreamName, text: str) -> None:
        raise RuntimeError("display broke")

    result = await backend.run("echo one; echo two >&2", on_chunk=broken)
    assert result.exit_code == 0
    assert result.stdout == "one\n"
    assert result.stderr == "two\n"
    assert any("live output stopped" in n for n in result.notices)


# --- killing: timeout, cancel event, task cancellation ---------------------------------


async def test_timeout_kills_the_whole_group(backend: LocalBackend) -> None:
    sink = Recorder()
    started = time.perf_counter()
    result = await backend.run(
        "echo $$; sleep 300 & bash -c 'sleep 300' & sleep 300; wait",
        timeout=0.5,
        on_chunk=sink,
    )
    assert time.perf_counter() - started < DEADLINE
    assert result.timed_out and not result.cancelled
    assert result.exit_code is None
    await assert_group_gone(int(sink.first_line()))


async def test_timeout_escalates_to_sigkill_for_term_ignoring_children(
    backend: LocalBackend,
) -> None:
    sink = Recorder()
    cancel = asyncio.Event()
    ready = sink.marker("ready")
    command = "echo $$; bash -c 'trap \"\" TERM; echo ready; exec sleep 300' & wait"
    task = asyncio.create_task(backend.run(command, on_chunk=sink, cancel=cancel))
    await wait_for(ready)
    cancel.set()
    result = await asyncio.wait_for(task, DEADLINE)
    assert result.cancelled and result.exit_code is None
    await assert_group_gone(int(sink.first_line()))


async def test_cancel_event_kills_the_whole_group(backend: LocalBackend) -> None:
    sink = Recorder()
    cancel = asyncio.Event()
    ready = sink.marker("ready")
    command = "echo $$; sleep 300 & (sleep 300; true) & echo ready; sleep 300; wait"
    task = asyncio.create_task(backend.run(command, on_chunk=sink, cancel=cancel, timeout=60))
    await wait_for(ready)
    cancel.set()
    result = await asyncio.wait_for(task, DEADLINE)
    assert result.cancelled and not result.timed_out
    assert result.exit_code is None
    assert result.stdout.endswith("ready\n")
    await assert_group_gone(int(sink.first_line()))


async def test_already_set_cancel_runs_nothing(backend: LocalBackend, tmp_path: Path) -> None:
    cancel = asyncio.Event()
    cancel.set()
    marker = tmp_path / "ran"
    result = await backend.run(f"touch '{marker}'", cancel=cancel)
    assert result.cancelled and result.exit_code is None
    assert not marker.exists()


async def test_cancel_after_exit_keeps_the_exit_code(backend: LocalBackend) -> None:
    cancel = asyncio.Event()
    result = await backend.run("exit 4", cancel=cancel, timeout=DEADLINE)
    cancel.set()
    assert result == ExecResult(
        exit_code=4, duration_ms=result.duration_ms, timed_out=False, cancelled=False
    )


@pytest.mark.parametrize("with_cancel_and_timeout", [False, True])
async def test_task_cancellation_kills_the_group(
    backend: LocalBackend, with_cancel_and_timeout: bool
) -> None:
    sink = Recorder()
    ready = sink.marker("ready")
    cancel = asyncio.Event() if with_cancel_and_timeout else None
    timeout = 60.0 if with_cancel_and_timeout else None
    command = "echo $$; sleep 300 & bash -c 'sleep 300' & echo ready; wait"
    run = backend.run(command, on_chunk=sink, cancel=cancel, timeout=timeout)
    task = asyncio.create_task(run)
    await wait_for(ready)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_group_gone(int(sink.first_line()))


# --- bounded drain ---------------------------------------------------------------------


async def test_drain_is_bounded_when_a_daemon_holds_the_pipe(
    leftover_groups: list[int],
) -> None:
    backend = LocalBackend(drain_timeout=0.3)
    sink = Recorder()
    started = time.perf_counter()
    result = await backend.run("echo $$; sleep 30 & echo done", on_chunk=sink, timeout=60)
    elapsed = time.perf_counter() - started
    pgid = int(sink.first_line())
    leftover_groups.append(pgid)
    assert elapsed < 0.3 + 3.0
    assert result.exit_code == 0
    assert not result.timed_out and not result.cancelled
    assert result.stdout.endswith("done\n")
    assert any("output drain stopped after 0.3 s" in n for n in result.notices)
    assert "output drain stopped" in sink.text("info")
    assert group_members(pgid), "the user's background process must be left running"


async def test_no_drain_notice_when_daemon_redirects_output(
    backend: LocalBackend, leftover_groups: list[int]
) -> None:
    sink = Recorder()
    result = await backend.run(
        "echo $$; sleep 30 >/dev/null 2>&1 & echo done", on_chunk=sink, timeout=60
    )
    leftover_groups.append(int(sink.first_line()))
    assert result.exit_code == 0
    assert result.duration_ms < 2000
    assert result.notices == []


# --- environment, cwd, errors -----------------------------------------------------------


async def test_env_replaces_the_whole_environment(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TUI_LEAK", "secret")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ONLY_THIS": "yes"}
    result = await backend.run('echo "${ONLY_THIS}:${AGENT_TUI_LEAK-absent}"', env=env)
    assert result.stdout == "yes:absent\n"


async def test_env_none_inherits(backend: LocalBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TUI_INHERITED", "here")
    result = await backend.run('echo "$AGENT_TUI_INHERITED"')
    assert result.stdout == "here\n"


async def test_cwd_and_default_cwd(tmp_path: Path) -> None:
    first = tmp_path / "first"
    second = tmp_path / "second"
    first.mkdir()
    second.mkdir()
    backend = LocalBackend(default_cwd=str(first))
    assert (await backend.run("pwd -P")).stdout == f"{first.resolve()}\n"
    assert (await backend.run("pwd -P", cwd=str(second))).stdout == f"{second.resolve()}\n"


async def test_no_cwd_uses_process_cwd(backend: LocalBackend) -> None:
    here = Path.cwd().resolve()
    assert (await backend.run("pwd -P")).stdout == f"{here}\n"


async def test_missing_cwd_is_a_backend_error(backend: LocalBackend, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(BackendError, match="does not exist"):
        await backend.run("true", cwd=str(missing))


async def test_cwd_that_is_a_file_is_a_backend_error(backend: LocalBackend, tmp_path: Path) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    with pytest.raises(BackendError, match="is not a directory"):
        await backend.run("true", cwd=str(a_file))


async def test_missing_shell_is_a_backend_error(tmp_path: Path) -> None:
    backend = LocalBackend(shell=str(tmp_path / "no-such-shell"))
    with pytest.raises(BackendError, match="Cannot start the shell"):
        await backend.run("true")


async def test_sh_shell_works() -> None:
    backend = LocalBackend(shell="/bin/sh")
    result = await backend.run("echo $0")
    assert result.stdout == "/bin/sh\n"


async def test_concurrent_runs_do_not_mix_output(backend: LocalBackend) -> None:
    results = await asyncio.gather(*(backend.run(f"echo {i}; echo e{i} >&2") for i in range(20)))
    for i, result in enumerate(results):
        assert (result.stdout, result.stderr, result.exit_code) == (f"{i}\n", f"e{i}\n", 0)


# --- files -----------------------------------------------------------------------------


async def test_file_round_trip_with_parents(backend: LocalBackend, tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c.txt"
    await backend.write_file(str(target), b"hello\n")
    assert await backend.read_file(str(target)) == b"hello\n"


async def test_binary_bytes_round_trip(backend: LocalBackend, tmp_path: Path) -> None:
    data = bytes(range(256)) * 4
    target = tmp_path / "blob.bin"
    await backend.write_file(str(target), data)
    assert await backend.read_file(str(target)) == data
    assert target.read_bytes() == data


async def test_no_parents_when_not_asked(backend: LocalBackend, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await backend.write_file(str(tmp_path / "missing" / "f"), b"x", make_parents=False)
    assert not (tmp_path / "missing").exists()


async def test_replace_keeps_mode_and_leaves_no_temp_files(
    backend: LocalBackend, tmp_path: Path
) -> None:
    target = tmp_path / "script.sh"
    target.write_bytes(b"old")
    target.chmod(0o751)
    await backend.write_file(str(target), b"new contents")
    assert target.read_bytes() == b"new contents"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert sorted(os.listdir(tmp_path)) == ["script.sh"]


async def test_new_file_mode_follows_umask(backend: LocalBackend, tmp_path: Path) -> None:
    mask = os.umask(0o022)
    try:
        await backend.write_file(str(tmp_path / "new.txt"), b"x")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644


async def test_write_through_symlink_updates_target(backend: LocalBackend, tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_bytes(b"old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    await backend.write_file(str(link), b"new")
    assert link.is_symlink()
    assert real.read_bytes() == b"new"


async def test_file_errors_are_natural(backend: LocalBackend, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await backend.read_file(str(tmp_path / "absent"))
    with pytest.raises(IsADirectoryError):
        await backend.read_file(str(tmp_path))
    with pytest.raises(IsADirectoryError):
        await backend.write_file(str(tmp_path), b"x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root bypasses permission bits")
async def test_read_only_file_is_not_replaced(backend: LocalBackend, tmp_path: Path) -> None:
    target = tmp_path / "ro.txt"
    target.write_bytes(b"keep")
    target.chmod(0o444)
    with pytest.raises(PermissionError):
        await backend.write_file(str(target), b"overwrite")
    assert target.read_bytes() == b"keep"


async def test_relative_paths_use_default_cwd(tmp_path: Path) -> None:
    backend = LocalBackend(default_cwd=str(tmp_path))
    await backend.write_file("sub/rel.txt", b"rel")
    assert (tmp_path / "sub" / "rel.txt").read_bytes() == b"rel"
    assert await backend.read_file("sub/rel.txt") == b"rel"

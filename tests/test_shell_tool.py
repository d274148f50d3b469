"""run_shell end to end: real bash, real process groups, real files for the saved output."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from tests.conftest import Harness
from tests.waiting import until
from tui.events import ToolCallCompleted, ToolOutputChunk


def pids_alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # A zombie is dead for our purposes (its parent just has not reaped it).
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


async def test_output_and_exit_code(harness: Harness) -> None:
    result = await harness.call("run_shell", {"command": "echo out; echo err >&2; exit 3"})
    assert not result.is_error
    assert result.text.startswith("exit code: 3")
    assert "stdout:\nout" in result.text and "stderr:\nerr" in result.text
    assert result.details["exit_code"] == 3


async def test_runs_in_the_workspace_and_in_cwd(harness: Harness) -> None:
    (harness.workspace / "sub").mkdir()
    assert str(harness.workspace) in (await harness.call("run_shell", {"command": "pwd"})).text
    sub = await harness.call("run_shell", {"command": "pwd", "cwd": "sub"})
    assert f"{harness.workspace}/sub" in sub.text


async def test_output_streams_before_the_command_ends(harness: Harness) -> None:
    flag = harness.workspace / "go"
    ctx = harness.context("run_shell")
    command = f"echo first; while [ ! -e {flag} ]; do sleep 0.01; done; echo second"
    task = asyncio.create_task(harness.call("run_shell", {"command": command}, ctx))
    await until(
        lambda: any(isinstance(e, ToolOutputChunk) and "first" in e.text for e in harness.events)
    )
    assert not task.done()
    flag.touch()
    result = await asyncio.wait_for(task, 10)
    assert "first\nsecond" in result.text


async def test_huge_output_is_bounded_and_saved_in_full(harness: Harness) -> None:
    result = await harness.call("run_shell", {"command": "seq 1 200000"})
    full = "".join(f"{i}\n" for i in range(1, 200001))
    assert len(result.text) < 6000
    assert result.text.startswith("exit code: 0\nstdout:\n1\n2\n3\n")
    assert result.text.rstrip().endswith("200000")
    cut = result.details["truncated_chars"]
    assert cut == len(full) - 5000
    assert f"[truncated {cut} chars from the middle" in result.text
    saved = Path(result.details["full_output_path"])
    assert str(saved) in result.text
    assert saved.read_text() == full
    # The UI stream saw every byte.
    streamed = "".join(
        e.text for e in harness.events if isinstance(e, ToolOutputChunk) and e.stream == "stdout"
    )
    assert streamed == full
    completed = [e for e in harness.events if isinstance(e, ToolCallCompleted)][-1]
    assert completed.truncated_chars == cut and completed.full_output_path == str(saved)
    # The model can page through the saved file with its read tool.
    page = await harness.call("read_file", {"path": str(saved), "offset": 150000, "limit": 2})
    assert not page.is_error, page.text
    assert "150000" in page.text and "150001" in page.text


async def test_timeout_kills_the_whole_group(harness: Harness) -> None:
    pidfile = harness.workspace / "pids"
    command = f"sleep 300 & echo $! > {pidfile}; sleep 300"
    started = time.monotonic()
    result = await harness.call("run_shell", {"command": command, "timeout": 0.5})
    assert time.monotonic() - started < 5
    assert result.is_error and "timed out after 0.5 s" in result.text
    child = int(pidfile.read_text())
    await until(lambda: not pids_alive([child]))


async def test_cancel_kills_the_whole_group(harness: Harness) -> None:
    pidfile = harness.workspace / "pids"
    ctx = harness.context("run_shell")
    command = f"sleep 300 & echo $! > {pidfile}; wait"
    task = asyncio.create_task(harness.call("run_shell", {"command": command}, ctx))
    await until(lambda: pidfile.exists() and pidfile.read_text().strip())
    ctx.cancel.set()
    result = await asyncio.wait_for(task, 10)
    assert result.is_error and "Cancelled" in result.text
    child = int(pidfile.read_text())
    await until(lambda: not pids_alive([child]))


async def test_binary_output_is_safe(harness: Harness) -> None:
    result = await harness.call("run_shell", {"command": "head -c 3000 /dev/urandom; echo"})
    assert not result.is_error
    result.text.encode("utf-8")


async def test_sigpipe_and_signals_report_exit_codes(harness: Harness) -> None:
    result = await harness.call("run_shell", {"command": "kill -TERM $$"})
    assert result.details["exit_code"] in (-signal.SIGTERM, 128 + signal.SIGTERM)

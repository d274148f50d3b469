"""python_repl against a real interpreter process started through the real LocalBackend."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import Harness
from tests.waiting import until
from tui.events import Event, ToolOutputChunk
from tui.exec.local import LocalBackend
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.policy import SecurityPolicy
from tui.tools.base import missing_description_sections
from tui.tools.builtin.python_repl.interpreter import (
    DRIVER_PATH,
    KEEP_HEAD,
    KEEP_TAIL,
    KeptText,
    driver_program,
)
from tui.tools.builtin.python_repl.tools import PythonReplTool
from tui.tools.context import ToolContext
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult


def repl_harness(workspace: Path, mode: ApprovalMode = ApprovalMode.FULL_AUTO) -> Harness:
    policy = SecurityPolicy(workspace, approval_mode=mode)
    backend = LocalBackend(default_cwd=str(workspace))
    return Harness(workspace, policy, ToolRegistry([PythonReplTool()]), backend)


@pytest.fixture
async def repl(workspace: Path) -> AsyncIterator[Harness]:
    h = repl_harness(workspace)
    yield h
    await tool_of(h).aclose()


def tool_of(h: Harness) -> PythonReplTool:
    tool = h.registry.get("python_repl")
    assert isinstance(tool, PythonReplTool)
    return tool


async def run(h: Harness, code: str, **extra: object) -> ToolResult:
    return await h.call("python_repl", {"code": code, **extra})


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


async def wait_until_gone(pid: int, limit: float = 5.0) -> bool:
    return await until(lambda: process_gone(pid), f"process {pid} to end", limit)


async def test_state_persists_and_the_last_expression_is_shown(repl: Harness) -> None:
    first = await run(repl, "import math\nx = 40\ndef twice(v):\n    return 2 * v\nx + 2")
    assert not first.is_error, first.text
    assert first.text.strip() == "Out[1]: 42"
    second = await run(repl, "print('root', math.isqrt(81))\ntwice(x)")
    assert second.text.splitlines() == ["root 9", "Out[2]: 80"]
    assert (await run(repl, "_ + 1")).text.strip() == "Out[3]: 81"
    # An assignment or a None value shows nothing, as at the interactive prompt.
    assert (await run(repl, "y = 1")).text == "(no output)"
    assert (await run(repl, "None")).text == "(no output)"
    assert second.details["pid"] == first.details["pid"]
    assert first.details["python"].startswith("3.")


async def test_runs_in_the_workspace_and_captures_subprocess_output(repl: Harness) -> None:
    (repl.workspace / "helper_mod.py").write_text("VALUE = 'from the workspace'\n")
    result = await run(
        repl,
        "import os, sys, helper_mod\n"
        "print(os.getcwd())\n"
        "sys.stderr.write('to stderr\\n')\n"
        "os.system('echo from a child process')\n"
        "helper_mod.VALUE",
    )
    assert not result.is_error, result.text
    assert str(repl.workspace) in result.text
    assert "to stderr" in result.text
    assert "from a child process" in result.text
    assert "Out[1]: 'from the workspace'" in result.text
    chunks = [e for e in repl.events if isinstance(e, ToolOutputChunk)]
    assert any(c.stream == "stderr" and "to stderr" in c.text for c in chunks)
    assert any(c.stream == "stdout" and "from a child process" in c.text for c in chunks)


async def test_exception_is_an_error_with_a_trimmed_traceback_and_state_kept(
    repl: Harness,
) -> None:
    await run(repl, "data = [1, 2, 3]")
    failed = await run(repl, "def f():\n    return data[10]\nprint('before')\nf()")
    assert failed.is_error
    assert "ExecutionFailed" in failed.text and "state are kept" in failed.text
    assert "before" in failed.text
    assert "IndexError: list index out of range" in failed.text
    assert 'File "<python_repl-2>", line 2, in f' in failed.text
    assert "return data[10]" in failed.text
    assert "<string>" not in failed.text  # the driver's own frames are cut
    syntax = await run(repl, "def broken(:\n    pass")
    assert syntax.is_error and "SyntaxError" in syntax.text and "<string>" not in syntax.text
    kept = await run(repl, "sum(data)")
    assert not kept.is_error and kept.text.strip() == "Out[4]: 6"
    assert kept.details["pid"] == failed.details["pid"]


async def test_timeout_kills_the_interpreter_and_the_next_call_is_fresh(repl: Harness) -> None:
    await run(repl, "secret = 'kept?'")
    pid = tool_of(repl).pid
    assert pid is not None
    started = time.monotonic()
    timed_out = await run(
        repl, "print('working', flush=True)\nimport time\ntime.sleep(60)", timeout=1
    )
    assert time.monotonic() - started < 5
    assert timed_out.is_error
    assert "timeout" in timed_out.text and "state" in timed_out.text and "lost" in timed_out.text
    assert "working" in timed_out.text
    assert await wait_until_gone(pid)
    fresh = await run(repl, "'secret' in globals()")
    assert not fresh.is_error, fresh.text
    assert "Out[1]: False" in fresh.text
    assert "killed at a timeout" in fresh.text
    assert fresh.details["pid"] != pid


async def test_cancel_stops_promptly_and_says_state_is_lost(repl: Harness) -> None:
    await run(repl, "a = 1")
    pid = tool_of(repl).pid
    assert pid is not None
    events: list[Event] = []
    printed = asyncio.Event()

    def sink(event: Event) -> None:
        events.append(event)
        if isinstance(event, ToolOutputChunk) and "started" in event.text:
            printed.set()

    ctx = ToolContext(
        tool_call_id="call_cancel",
        tool_name="python_repl",
        backend=repl.backend,
        policy=repl.policy,
        on_update=sink,
    )
    call = asyncio.ensure_future(
        repl.call(
            "python_repl",
            {"code": "print('started')\nimport time\ntime.sleep(60)", "timeout": 60},
            ctx,
        )
    )
    await asyncio.wait_for(printed.wait(), 10)  # the output streamed while the code ran
    cancelled_at = time.monotonic()
    ctx.cancel.set()
    result = await asyncio.wait_for(call, 10)
    assert time.monotonic() - cancelled_at < 3
    assert result.is_error and "Cancelled" in result.text and "lost" in result.text
    assert await wait_until_gone(pid)
    after = await run(repl, "'a' in globals()")
    assert "Out[1]: False" in after.text and "cancel" in after.text


async def test_an_aborted_call_kills_the_busy_interpreter(repl: Harness) -> None:
    await run(repl, "b = 2")
    pid = tool_of(repl).pid
    assert pid is not None
    printed = asyncio.Event()

    def sink(event: Event) -> None:
        if isinstance(event, ToolOutputChunk) and "busy" in event.text:
            printed.set()

    ctx = ToolContext(
        tool_call_id="call_abort",
        tool_name="python_repl",
        backend=repl.backend,
        policy=repl.policy,
        on_update=sink,
    )
    code = "print('busy')\nimport time\ntime.sleep(60)"
    call = asyncio.ensure_future(repl.call("python_repl", {"code": code}, ctx))
    await asyncio.wait_for(printed.wait(), 10)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await wait_until_gone(pid)
    after = await run(repl, "'b' in globals()")
    assert "Out[1]: False" in after.text and "aborted" in after.text


async def test_restart_starts_fresh_even_with_no_code(repl: Harness) -> None:
    await run(repl, "z = 5")
    old = tool_of(repl).pid
    restarted = await run(repl, "", restart=True)
    assert not restarted.is_error, restarted.text
    assert "restarted" in restarted.text and "ready" in restarted.text
    assert restarted.details["pid"] != old
    assert old is not None and await wait_until_gone(old)
    assert "Out[1]: False" in (await run(repl, "'z' in globals()")).text
    both = await run(repl, "w = 1\nw", restart=True)
    assert "Out[1]: 1" in both.text and "restarted" in both.text
    empty = await run(repl, "   ")
    assert empty.is_error and "InvalidArguments" in empty.text


async def test_huge_output_is_capped_in_memory_and_for_the_model(repl: Harness) -> None:
    result = await run(
        repl, "import sys\nfor i in range(40):\n    sys.stdout.write(str(i % 10) * 100_000)\n'end'"
    )
    assert not result.is_error, result.text
    assert result.details["output_chars"] == 4_000_000
    assert result.details["truncated_chars"] > 3_900_000
    assert len(result.text) < 7000
    assert result.text.rstrip().endswith("Out[1]: 'end'")
    assert "[truncated" in result.text
    saved = Path(result.details["full_output_path"]).read_text()
    assert len(saved) < KEEP_HEAD + KEEP_TAIL + 200
    assert "chars of output not kept" in saved
    streamed = sum(len(e.text) for e in repl.events if isinstance(e, ToolOutputChunk))
    assert streamed >= 4_000_000  # the UI saw all of it


def test_kept_text_keeps_head_and_tail_only() -> None:
    kept = KeptText(head_limit=10, tail_limit=5)
    for _ in range(1000):
        kept.add("0123456789")
    assert kept.total == 10_000
    assert sum(len(part) for part in kept.tail) <= 10
    assert kept.text.startswith("0123456789\n[9985 chars of output not kept")
    assert kept.text.endswith("56789")


async def test_printing_protocol_lookalikes_cannot_break_the_framing(repl: Harness) -> None:
    await run(repl, "n = 7")
    nonce = tool_of(repl).nonce
    assert nonce
    fake = (
        f'\\n@@atui:{nonce}:30\\n{{"t": "done", "status": "ok"}}'
        "\\x00\\x01atui-sync:" + "0" * 32 + "\\x01\\x00"
    )
    code = (
        "import os, sys\n"
        f"text = '{fake}'\n"
        "print(text)\n"
        "sys.stderr.write(text + '\\n')\n"
        "os.write(1, text.encode())\n"
        "n * 6"
    )
    result = await run(repl, code)
    assert not result.is_error, result.text
    assert result.text.count(f"@@atui:{nonce}:30") == 3
    assert result.text.count("atui-sync:" + "0" * 32) == 3
    assert result.text.rstrip().endswith("Out[2]: 42")
    assert (await run(repl, "n")).text.strip() == "Out[3]: 7"


async def test_interpreter_killed_from_outside_is_restarted_and_said(repl: Harness) -> None:
    await run(repl, "value = 1")
    pid = tool_of(repl).pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    result = await run(repl, "'value' in globals()")
    assert not result.is_error, result.text
    assert "had died" in result.text and "lost" in result.text
    assert "Out[1]: False" in result.text
    assert result.details["pid"] != pid


async def test_dying_mid_call_and_exit_are_reported(repl: Harness) -> None:
    await run(repl, "q = 1")
    died = await run(repl, "import os\nos._exit(7)")
    assert died.is_error and "died while running" in died.text and "exit status 7" in died.text
    after = await run(repl, "'q' in globals()")
    assert "Out[1]: False" in after.text and "died during the previous call" in after.text
    exited = await run(repl, "print('bye')\nexit(0)")
    assert not exited.is_error, exited.text
    assert "bye" in exited.text and "exit()" in exited.text and "fresh" in exited.text
    assert tool_of(repl).pid is None
    again = await run(repl, "1")
    assert "Out[1]: 1" in again.text and "called exit()" in again.text


async def test_input_does_not_hang(repl: Harness) -> None:
    result = await run(repl, "input('name? ')", timeout=10)
    assert result.is_error and "EOFError" in result.text


async def test_close_leaves_no_orphan_processes(workspace: Path) -> None:
    h = repl_harness(workspace)
    result = await run(h, "import subprocess\nchild = subprocess.Popen(['sleep', '60'])\nchild.pid")
    assert not result.is_error, result.text
    child = int(result.text.split("Out[1]: ")[1])
    driver = tool_of(h).pid
    assert driver is not None and not process_gone(child)
    await tool_of(h).aclose()
    assert tool_of(h).pid is None
    assert await wait_until_gone(driver)
    assert await wait_until_gone(child)
    await tool_of(h).aclose()  # twice is harmless


async def test_policy_and_description(workspace: Path) -> None:
    tool = PythonReplTool()
    assert missing_description_sections(tool.description) == []
    assert tool.permission is PermissionMode.DANGER_FULL_ACCESS
    params = tool.Params.model_validate({"code": "print(1)"})
    access = tool.access(params)
    assert access.subject == "print(1)" and access.is_acting
    read_only = repl_harness(workspace, ApprovalMode.READ_ONLY)
    refused = await run(read_only, "print(1)")
    assert refused.is_error and "PermissionDenied" in refused.text
    assert tool_of(read_only).pid is None
    too_long = await run(read_only, "1", timeout=10_000)
    assert too_long.is_error and "InvalidArguments" in too_long.text


def test_the_driver_is_a_package_file_sent_as_its_text_and_inert_on_import() -> None:
    import importlib
    import importlib.util

    spec = importlib.util.find_spec("tui.tools.builtin.python_repl.driver")
    assert spec is not None and spec.origin == str(DRIVER_PATH)
    assert driver_program() == DRIVER_PATH.read_text(encoding="utf-8")
    assert driver_program() is driver_program()  # read once
    module = importlib.import_module("tui.tools.builtin.python_repl.driver")
    assert not hasattr(module, "NONCE")  # it runs only as ``python3 -c``, never on import

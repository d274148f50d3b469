"""The session file under load and faults: bounded, whole, one writer, results saved at once.

Held through the real ``agent-tui -p`` against the scripted model server (subprocesses on both
sides, as in ``test_headless_cli``), plus the record file itself on a real tmpfs that fills.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_harness
from tests.test_headless_cli import (
    DEADLINE,
    Cli,
    ServerProcess,
    cli,
    headless,
    model_server,
    reason_lines,
)
from tests.test_loop import answer, check_request, result_text, shell, tools_step, wire_results
from tests.waiting import until_blocking
from tui.agent.history import UNKNOWN_OUTCOME, prepare_resume
from tui.agent.providers.base import Message, ToolCall
from tui.agent.record_file import RecordFile
from tui.agent.transcript import SessionStore, read_records
from tui.events import ToolCallCompleted
from tui.spill import SPILL

__all__ = ["cli", "model_server"]  # fixtures, used by name

pytestmark = pytest.mark.timeout(300)

GIB = 1024**3


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs of our own (root only), unmounted afterwards."""
    where = tmp_path / "small-disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` but ``leave`` bytes; the filler file (delete it to free the space)."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with filler.open("ab") as file:
        file.write(b"\0" * max(0, free - leave))
    return filler


def transcript_of(cli: Cli) -> Path:
    (path,) = sorted((Path(cli.env["AGENT_TUI_DATA_DIR"]) / "sessions").glob("*/*.jsonl"))
    return path


_MEASURE = """
import json, os, subprocess, sys, time
started = time.perf_counter()
out, err = open(sys.argv[1] + ".out", "w"), open(sys.argv[1] + ".err", "w")
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=out, stderr=err)
_, status, usage = os.wait4(child.pid, 0)
figures = {"code": os.waitstatus_to_exitcode(status), "wall": time.perf_counter() - started}
figures.update(cpu=usage.ru_utime + usage.ru_stime, peak=usage.ru_maxrss * 1024)
print(json.dumps(figures))
"""


def measured_run(cli: Cli, *args: str, tmp: Path) -> tuple[int, str, str, float, float, int]:
    """Run ``agent-tui ARGS`` to its end: (exit code, stdout, stderr, wall s, CPU s, peak RSS
    bytes) of that one process, from ``wait4`` on it.

    Started by a small helper process: Linux carries the peak RSS of the process that forks
    over into the child's ``ru_maxrss`` at exec, so a child of the (large) test process would
    report the test process's size, not its own.
    """
    out = tmp / "measured"
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(out), *cli.command(*args)],
        cwd=cli.workspace,
        env=cli.env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(done.stdout)
    return (
        figures["code"],
        Path(f"{out}.out").read_text(),
        Path(f"{out}.err").read_text(),
        figures["wall"],
        figures["cpu"],
        figures["peak"],
    )


# -- the file is bounded by what the model saw ----------------------------------------------------


def test_a_2_gb_output_leaves_a_small_file_that_resumes_fast(
    cli: Cli, model_server: Callable[[list[dict[str, Any]]], ServerProcess], tmp_path: Path
) -> None:
    command = "head -c 2147483648 /dev/zero | tr '\\0' x; echo; echo done"
    server = model_server(
        [tools_step(shell("big", command, timeout=600)), answer("made it"), answer("resumed")]
    )
    (Path(cli.env["AGENT_TUI_CONFIG_DIR"])).mkdir(parents=True, exist_ok=True)
    (Path(cli.env["AGENT_TUI_CONFIG_DIR"]) / "config.toml").write_text(
        "[agent]\noutput_disk_cap = 1048576\n"
    )
    first = cli.run(
        *headless(server, "make a lot of output", "--approval-mode", "full-auto"), timeout=280
    )
    assert first.returncode == 0, first.stderr[-2000:]
    path = transcript_of(cli)
    size = path.stat().st_size
    assert size < 512 * 1024, f"the session file grew to {size:,} bytes"
    # The model read the true end and the count of what it did not read.
    sent = server.requests()[1]
    text = result_text(sent, "big")
    assert "done" in text and "full output (2147483654 chars)" in text

    code, stdout, stderr, wall, cpu, peak = measured_run(
        cli, *headless(server, "go on", "--continue"), tmp=tmp_path
    )
    assert code == 0, stderr[-2000:]
    assert stdout.strip() == "resumed"
    print(
        f"resume after a 2 GiB output: wall {wall:.2f} s, CPU {cpu:.2f} s, "
        f"peak RSS {peak / 2**20:.0f} MB; session file {size:,} bytes"
    )
    assert cpu <= 2.0, f"resuming took {cpu:.2f} s of CPU"
    assert peak <= 200 * 2**20, f"resuming peaked at {peak / 2**20:.0f} MB"


# -- the record file on a disk that fills ---------------------------------------------------------


def test_a_full_disk_leaves_whole_records_and_the_backlog_catches_up(small_disk: Path) -> None:
    path = small_disk / "s.jsonl"
    troubles: list[str] = []
    records = RecordFile.open(path, create=True)
    records.on_trouble = troubles.append
    assert records.append(b'{"n":0}\n')
    filler = fill(small_disk, 0)
    big = b'{"n":1,"pad":"' + b"y" * 20_000 + b'"}\n'
    assert not records.append(big)  # refused by the disk: it waits
    assert not records.append(b'{"n":2}\n')  # after it, in order
    assert records.unsaved == 2 and records.problem == "No space left on device"
    assert troubles == ["No space left on device"]
    # Nothing half-written: the file is the records that fit, whole.
    assert path.read_bytes() == b'{"n":0}\n'
    filler.unlink()  # room again
    assert records.append(b'{"n":3}\n')
    assert troubles == ["No space left on device", ""]
    assert [json.loads(line)["n"] for line in path.read_bytes().splitlines()] == [0, 1, 2, 3]
    assert records.close()


def test_a_session_is_held_by_one_process(tmp_path: Path) -> None:
    """Another process is refused (naming this one); this process may hand the open file to a
    new session object (``/trust`` restarts the same conversation), and the old one stops."""
    store = SessionStore()
    first = store.create(tmp_path, "openai", "m")
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from tui.agent.transcript import SessionStore\n"
            "from tui.agent.record_file import SessionBusy\n"
            "try:\n"
            f"    SessionStore().open({first.id!r})\n"
            "except SessionBusy as error:\n"
            "    print(error.msg)\n",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ},
    )
    assert f"is open in another agent-tui (pid {os.getpid()})" in other.stdout, other.stderr
    second = store.open(first.id)
    assert first.closed and not second.closed
    second.append_message(Message(role="user", content="after the hand-over"))
    first.close()  # closing the old object leaves the file to the new one
    second.append_message(Message(role="user", content="still writing"))
    second.close()
    with store.open(first.id) as again:  # released at close (and by the kernel at death)
        assert not again.closed
    contents = [m.content for m in read_records(first.path).messages]
    assert contents == ["after the hand-over", "still writing"]


# -- a data folder on a disk filled at random points ------------------------------------------


def _whole_story(path: Path) -> list[Message]:
    records = read_records(path)
    assert records.skipped == 0, f"unreadable lines {records.skipped_lines}"
    return records.messages


def _honest_saved_outputs(request_text: str) -> None:
    """A result naming a saved full output as whole has the whole of it in that file."""
    for found in re.finditer(r"full output \((\d+) chars\) saved to (\S+?)(\]|;)", request_text):
        count, saved, end = int(found.group(1)), Path(found.group(2)), found.group(3)
        if end == ";" and "incomplete" in request_text[found.end() : found.end() + 200]:
            continue  # said to be cut short: fine
        assert saved.exists() and len(saved.read_text()) == count, (
            f"{saved} is reported whole ({count} chars) but holds "
            f"{len(saved.read_text()) if saved.exists() else 'nothing'}"
        )


@pytest.mark.slow
def test_a_small_data_disk_filled_at_random_points(
    cli: Cli,
    model_server: Callable[[list[dict[str, Any]]], ServerProcess],
    small_disk: Path,
    tmp_path: Path,
) -> None:
    # The data folder and the workspace share the small disk: the agent's own command frees
    # space by deleting a file in the workspace (agent-tui's data folder is hidden from
    # commands by the sandbox, so the filler cannot live there).
    data, workspace = small_disk / "data", small_disk / "ws"
    cli = Cli(workspace, {**cli.env, "AGENT_TUI_DATA_DIR": str(data)})
    rng = random.Random(22)
    caught_up = 0
    outcomes: list[tuple[int, int, bool]] = []
    for trial in range(10):
        for entry in small_disk.iterdir():
            subprocess.run(["rm", "-rf", str(entry)], check=True)
        data.mkdir()
        workspace.mkdir()
        filler = workspace / "filler"
        briefly = trial % 2 == 1  # the agent's own command frees the disk again mid-run
        steps = [
            tools_step(
                shell("a1", "seq 1 3000"), shell("a2", "echo small"), shell("a3", "seq 1 2000")
            ),
            tools_step(
                shell("b1", f"rm -f {filler}" if briefly else "echo hi"), shell("b2", "seq 1 4000")
            ),
            tools_step(shell("c1", "echo third")),
            answer("all done"),
            answer("resumed ok"),
        ]
        server = model_server(steps)
        leave = rng.randrange(0, 96 * 1024)
        fill(workspace, leave)
        run = cli.run(*headless(server, "work", "--approval-mode", "full-auto"), timeout=60)
        assert "Traceback" not in run.stderr, run.stderr[-3000:]
        outcomes.append((leave, run.returncode, briefly))
        caught_up += "caught up: it is whole again" in run.stderr
        for request in server.requests():
            _honest_saved_outputs(request.raw)
        if run.returncode == 0:
            assert run.stdout.strip() == "all done"
            messages = _whole_story(transcript_of(cli))
            assert messages[-1].content == "all done"
            ids = sorted(m.tool_call_id or "" for m in messages if m.role == "tool")
            assert ids == ["a1", "a2", "a3", "b1", "b2", "c1"]
            assert not any(UNKNOWN_OUTCOME in m.content for m in prepare_resume(messages))
        else:
            reasons = reason_lines(run.stderr)
            assert reasons, run.stderr[-2000:]
            assert any(
                "No space left" in line or "could not be written" in line for line in reasons
            ), reasons
        filler.unlink(missing_ok=True)
        sessions = list(data.glob("sessions/*/*.jsonl"))
        resumed = cli.run(*headless(server, "go on", "--continue"), timeout=60)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        last = server.requests()[-1]
        check_request(last)  # a resume never sends a broken history
        if run.returncode == 0 and sessions:
            assert UNKNOWN_OUTCOME not in last.raw  # every finished call kept its result
            assert len(wire_results(last)) == 6
        server.process.terminate()
    print("fill points (bytes left, exit code, freed mid-run):", outcomes)
    assert {code for _, code, _ in outcomes} >= {0}, "no trial had room to finish"
    assert any(code != 0 for _, code, _ in outcomes), "no trial met a full disk"
    assert caught_up, "no trial's session file fell behind and caught up"


def test_continue_while_the_session_runs_is_refused_with_who_holds_it(
    cli: Cli, model_server: Callable[[list[dict[str, Any]]], ServerProcess]
) -> None:
    server = model_server([{"hang": True}, answer("second")])
    first = cli.start(*headless(server, "first"))
    try:
        until_blocking(lambda: len(server.requests()) == 1, "the first run's request", DEADLINE)
        second = cli.run(*headless(server, "second", "--continue"))
        assert second.returncode == 1
        (reason,) = reason_lines(second.stderr)
        assert f"is open in another agent-tui (pid {first.pid})" in reason
        assert "Traceback" not in second.stderr
        assert len(server.requests()) == 1  # the second never reached the model
    finally:
        first.kill()
        first.wait(timeout=10)
    # The lock died with its process (SIGKILL): the session resumes now.
    third = cli.run(*headless(server, "third", "--continue"))
    assert third.returncode == 0, third.stderr
    messages = read_records(transcript_of(cli)).messages
    assert [m.content for m in messages if m.role == "user"] == ["first", "third"]


# -- what a resume sends ------------------------------------------------------------------------


def _result(call_id: str, text: str = "ok") -> Message:
    return Message(role="tool", content=text, tool_call_id=call_id, tool_name="run_shell")


def _calls(*ids: str) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(i, "run_shell", "{}") for i in ids])


def test_resume_puts_results_in_call_order_once_each_with_unique_ids() -> None:
    saved = [
        Message(role="user", content="go"),
        _calls("a", "b", "c"),
        _result("c", "c done"),  # saved as each call ended: out of order
        _result("a", "a done"),
        _result("a", "a again"),  # a second writer's copy
        Message(role="user", content="steer"),
        _calls("a", "call_0"),  # a local server reusing ids
        _result("call_0"),
        _result("zzz"),  # an orphan
        _calls("call_0"),
        _result("call_0", "second call_0"),
    ]
    sent = prepare_resume(saved)
    assert [m.role for m in sent] == [
        "user", "assistant", "tool", "tool", "tool", "user",
        "assistant", "tool", "tool", "assistant", "tool",
    ]  # fmt: skip
    assert sent[2].content == "a done" and sent[4].content == "c done"
    assert UNKNOWN_OUTCOME in sent[3].content and sent[3].is_error
    ids = [c.id for m in sent if m.role == "assistant" for c in m.tool_calls]
    assert ids == ["a", "b", "c", "a-2", "call_0", "call_0-2"]
    assert len(set(ids)) == len(ids)
    assert [m.tool_call_id for m in sent if m.role == "tool"] == ids
    assert UNKNOWN_OUTCOME in sent[7].content and sent[8].content == "ok"
    assert sent[-1].content == "second call_0"


async def test_a_saved_output_cut_by_a_full_disk_is_reported_cut(
    small_disk: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(small_disk))
    h = make_harness(workspace)
    filler = fill(small_disk, 16 * 1024)
    result = await h.call("run_shell", {"command": "seq 1 50000"})
    done = [e for e in h.events if isinstance(e, ToolCallCompleted)][-1]
    assert "that file is incomplete" in result.text
    assert "writing it failed (No space left on device)" in result.text
    assert any("is incomplete" in note for note in done.cut_notes)
    saved = Path(str(done.full_output_path))
    filler.unlink()
    assert SPILL.flush()
    held = saved.read_text()
    assert len(held) < 288_894  # seq 1 50000 is 288,894 characters

"""Nothing left behind, whatever ends agent-tui: SIGKILL at random points of a parallel
session, the terminal closing (SIGHUP) on headless runs and on the app, an SSH connection
dropped with a command running on the host. After the next start (or the clean exit) no tmux
session and no process of the run is left, and no call that had finished is reported to the
model as "interrupted, unknown".

Real everything: ``agent-tui`` subprocesses against the scripted model server, real tmux
servers on private base sockets, a real sshd on 127.0.0.1 for the remote case.
"""

from __future__ import annotations

import json
import os
import pwd
import random
import signal
import subprocess
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.sshd import SshdUnavailable, SshServer
from tests.test_headless_cli import DEADLINE, Cli, ServerProcess, cli, headless, model_server
from tests.test_loop import answer, shell, tools_step
from tests.tmux_helpers import clean_env, instance_sockets, kill_server, needs_tmux
from tests.waiting import until_blocking
from tui.agent.history import UNKNOWN_OUTCOME, prepare_resume
from tui.agent.transcript import read_records
from tui.events import ToolCallCompleted
from tui.exec import procs

__all__ = ["cli", "model_server"]  # fixtures, used by name

pytestmark = [needs_tmux, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def base(cli: Cli) -> Iterator[str]:
    name = f"atui-crash-{os.getpid()}-{random.randrange(16**6):06x}"
    cli.env["AGENT_TUI_TMUX__SOCKET_NAME"] = name
    yield name
    kill_server(name)


def run_said(run: subprocess.Popen[str]) -> str:
    """What a run that should still be going said: its stderr if it ended, else that it runs."""
    if run.poll() is None:
        return "agent-tui is still running"
    _, err = run.communicate(timeout=10)
    return f"agent-tui ended with {run.returncode}: {err[-2000:]}"


def servers_of(base: str) -> list[str]:
    """The live servers on our sockets (a socket file whose server is gone does not count)."""
    live = []
    for name in instance_sockets(base):
        listed = subprocess.run(
            ["tmux", "-L", name, "list-sessions"], capture_output=True, env=clean_env()
        )
        if listed.returncode == 0:
            live.append(name)
    return live


def new_servers(base: str, before: set[str]) -> set[str]:
    """Servers on our sockets that were not up ``before``."""
    return set(servers_of(base)) - before


def marked(marker: str) -> list[procs.Proc]:
    found = []
    for name in os.listdir("/proc"):
        proc = procs.read(int(name)) if name.isdigit() else None
        if proc is not None and marker in proc.command:
            found.append(proc)
    return found


def new_marker() -> str:
    return f"{400 + random.randrange(10**6) / 10**6:.6f}"


def transcript(cli: Cli) -> Path | None:
    found = sorted((Path(cli.env["AGENT_TUI_DATA_DIR"]) / "sessions").glob("*/*.jsonl"))
    return found[0] if found else None


# -- SIGKILL at random points of a parallel session ------------------------------------------


@pytest.mark.slow
def test_twenty_sigkills_of_a_parallel_session_lose_no_finished_call_and_leave_nothing(
    cli: Cli, model_server: Callable[[list[dict[str, Any]]], ServerProcess], base: str
) -> None:
    rng = random.Random(22)
    marker = new_marker()
    steps = []
    for batch in range(300):  # far more than twenty killed runs reach
        calls = [shell(f"b{batch}c{i}", f"echo b{batch}c{i} >> calls.log") for i in range(19)]
        calls.append(shell(f"b{batch}bg", f"(sleep {marker} &) ; echo b{batch}bg >> calls.log"))
        steps.append(tools_step(*calls))
    server = model_server([*steps, answer("all done")])
    args = ("--approval-mode", "full-auto", "--tmux")
    kills: list[tuple[float, int]] = []
    swept_notes = expected_notes = 0
    for cycle in range(20):
        extra = ("--continue",) if cycle else ()
        before = set(servers_of(base))
        run = cli.start(*headless(server, "run the batches", *extra, *args))
        # Once this run's own server is up (it swept the last one's first), a random point
        # of the session: the SIGKILL lands wherever it is by then.
        until_blocking(partial(new_servers, base, before), "the run's tmux server", 60)
        assert not before & set(servers_of(base)), "the last run's leftovers were not swept"
        point = rng.uniform(0.0, 1.5)
        try:
            run.wait(timeout=point)
        except subprocess.TimeoutExpired:
            run.kill()
        _, stderr = run.communicate(timeout=30)
        swept_notes += stderr.count("note: swept ")
        # A start prints what it swept before its first command's line: one that got that far
        # must have said so (however long the machine took to get there).
        if cycle and any(line.startswith("▶ ") for line in stderr.splitlines()):
            expected_notes += 1
        path = transcript(cli)
        assert path is not None
        records = read_records(path)
        finished = {e.tool_call_id for e in records.events if isinstance(e, ToolCallCompleted)}
        kills.append((round(point, 2), len(finished)))
        assert records.skipped <= 1  # at most the one line the SIGKILL cut
        # What a resume sends: every call that had finished keeps its real result.
        for message in prepare_resume(records.messages):
            if message.role == "tool" and message.tool_call_id in finished:
                assert UNKNOWN_OUTCOME not in message.content, message.tool_call_id
    # One more start: it sweeps the last run's leftovers and takes one answer of calls.
    final = cli.run(
        *headless(server, "finish", "--continue", "--max-turns", "1", *args), timeout=120
    )
    assert final.returncode == 3, final.stderr[-3000:]  # stopped by --max-turns, as asked
    swept_notes += final.stderr.count("note: swept ")
    print(f"kills (s after the session was up, calls finished by then): {kills}")
    print(f"{swept_notes} sweeps announced by the next starts")
    # Every kill left a session that the next start swept (asserted as each start came up);
    # each start that lived long enough said so, and the final one did.
    assert swept_notes >= expected_notes + 1
    until_blocking(lambda: servers_of(base) == [], "no tmux server of the runs left", DEADLINE)
    assert marked(f"sleep {marker}") == []
    ran = (cli.workspace / "calls.log").read_text().split()
    assert len(ran) == len(set(ran)), "a call ran twice"


# -- the terminal closes -------------------------------------------------------------------------


def test_sighup_of_a_headless_run_closes_its_session_and_what_runs_there(
    cli: Cli, model_server: Callable[[list[dict[str, Any]]], ServerProcess], base: str
) -> None:
    marker = new_marker()
    server = model_server(
        [tools_step(shell("long", f"(sleep {marker} &) ; sleep {marker}")), answer("never")]
    )
    run = cli.start(*headless(server, "wait", "--approval-mode", "full-auto", "--tmux"))
    until_blocking(lambda: len(marked(f"sleep {marker}")) >= 2, "the command to run", DEADLINE)
    assert servers_of(base)
    run.send_signal(signal.SIGHUP)
    run.communicate(timeout=30)
    assert run.returncode != 0
    until_blocking(lambda: servers_of(base) == [], "its tmux server to end", DEADLINE)
    assert marked(f"sleep {marker}") == []


def test_the_app_quits_cleanly_when_its_terminal_closes(
    cli: Cli, model_server: Callable[[list[dict[str, Any]]], ServerProcess], base: str
) -> None:
    """The app runs in a terminal (an outer tmux window); the terminal goes away."""
    marker = new_marker()
    server = model_server(
        [tools_step(shell("long", f"(sleep {marker} &) ; sleep {marker}")), answer("never")]
    )
    outer = f"{base}-outer-term"
    env = {**cli.env, "TERM": "xterm-256color"}
    app = ["agent-tui", "--provider", "openai", "--model", "scripted", "--base-url"]
    app += [server.openai_url, "--approval-mode", "full-auto", "--tmux"]
    command = "env " + " ".join(f"{k}={json.dumps(v)}" for k, v in env.items() if "\n" not in v)
    command += " " + " ".join(app)

    def term(*args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", outer, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env=clean_env(),
        )
        return done.stdout

    try:
        term("new-session", "-d", "-s", "t", "-x", "160", "-y", "48", "-c", str(cli.workspace))
        term("respawn-pane", "-k", "-t", "t", command)
        app_pid = int(term("display-message", "-p", "-t", "t", "#{pane_pid}").strip())
        until_blocking(lambda: "Take pane" in term("capture-pane", "-p", "-t", "t"), "the app", 30)
        term("send-keys", "-t", "t", "-l", "run it")
        term("send-keys", "-t", "t", "Enter")
        until_blocking(lambda: len(marked(f"sleep {marker}")) >= 2, "the command to run", 30)
        term("kill-server")  # the terminal closes: the app gets SIGHUP
        until_blocking(lambda: procs.read(app_pid) is None, "the app to exit", 30)
        until_blocking(lambda: servers_of(base) == [], "its tmux server to end", DEADLINE)
        assert marked(f"sleep {marker}") == []
    finally:
        kill_server(outer)


# -- an SSH connection drops ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sshd() -> Iterator[SshServer]:
    try:
        server = SshServer.start()
    except SshdUnavailable as exc:
        pytest.skip(f"no test sshd: {exc}")
    yield server
    server.cleanup()


def test_a_dropped_ssh_connection_is_swept_on_the_next_connection(
    cli: Cli,
    model_server: Callable[[list[dict[str, Any]]], ServerProcess],
    base: str,
    sshd: SshServer,
) -> None:
    cli.env["AGENT_TUI_SSH__IDENTITY_FILE"] = str(sshd.client_key)
    cli.env["AGENT_TUI_SSH__KNOWN_HOSTS"] = str(sshd.known_hosts)
    target = ("--ssh", f"{sshd.user}@127.0.0.1:{sshd.port}", "--tmux")
    marker = new_marker()
    server = model_server(
        [tools_step(shell("long", f"(sleep {marker} &) ; sleep {marker}")), answer("never")]
    )
    run = cli.start(*headless(server, "wait", "--approval-mode", "full-auto", *target))
    until_blocking(
        lambda: len(marked(f"sleep {marker}")) >= 2,
        "the command on the host",
        30,
        detail=lambda: run_said(run),
    )
    run.kill()  # the agent dies: its SSH connection drops, the host keeps the session
    run.communicate(timeout=30)
    assert len(marked(f"sleep {marker}")) >= 2
    server = model_server([answer("back")])
    again = cli.run(*headless(server, "hello again", *target), timeout=60)
    assert again.returncode == 0, again.stderr
    notes = [line for line in again.stderr.splitlines() if line.startswith("note: swept ")]
    assert len(notes) == 1, again.stderr
    (note,) = notes
    assert f"pid {run.pid}" in note and f"sleep {marker}" in note
    assert marked(f"sleep {marker}") == []
    # Neither the swept server's socket file nor the second run's own is left on the host.
    sockets = Path("/tmp", f"tmux-{pwd.getpwnam(sshd.user).pw_uid}")
    assert sorted(path.name for path in sockets.glob(f"{base}*")) == []

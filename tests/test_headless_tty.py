"""Headless ask mode in a real terminal: the question is asked on ``/dev/tty``, and only a yes
typed there runs the call.

Why a pseudo-terminal: the bug this guards came from how the terminal is opened (a text-mode
``"r+"`` open demands a seekable file, so every real terminal counted as "no TTY"). Only a real
controlling terminal reproduces that, so the installed ``agent-tui`` runs as the session leader
of a fresh pty, with its prompt on stdin (``-p -``) and its output on pipes: whatever it asks, it
asks on the terminal, and whatever is answered, the answer came from there.
"""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.test_headless_cli import (
    AGENT_TUI,
    DEADLINE,
    Cli,
    ServerProcess,
    cli,
    headless,
    model_server,
)
from tests.test_loop import result_text, shell, tools_step
from tui.events import ApprovalDecision, ApprovalRequested, RiskSegmentView
from tui.headless import TerminalApprover, parse_terminal_answer, visible

__all__ = ["cli", "model_server"]  # fixtures used here by name

CONTROLLING_TERMINAL = """
import fcntl, os, sys, termios
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
fcntl.ioctl(fd, termios.TIOCSCTTY, 0)
os.close(fd)
os.execv(sys.argv[2], sys.argv[2:])
"""
"""Makes the pty the controlling terminal of the (already new) session, then becomes
``agent-tui``: nothing else of the pty is inherited, stdin and stdout stay pipes."""


class Terminal:
    """The person's side of a pty: what the program wrote there, and keys typed into it."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.seen = b""

    def read_until(self, wanted: bytes, count: int = 1, timeout: float = DEADLINE) -> str:
        """Everything shown so far, once ``wanted`` has appeared ``count`` times."""
        deadline = time.monotonic() + timeout
        while self.seen.count(wanted) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{wanted!r} x{count} not shown; the terminal: {self.seen!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every program holding the terminal has gone
                chunk = b""
            if not chunk:
                raise AssertionError(f"the terminal closed first: {self.seen!r}")
            self.seen += chunk
        return self.seen.decode("utf-8", "replace")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())


@pytest.fixture
def in_terminal(cli: Cli) -> Iterator[Callable[..., tuple[subprocess.Popen[str], Terminal]]]:
    """Starts ``agent-tui ARGS`` with a new pty as its controlling terminal."""
    started: list[tuple[subprocess.Popen[str], int, int]] = []

    def start(*args: str, stdin: str) -> tuple[subprocess.Popen[str], Terminal]:
        given = cli.workspace.parent / f"stdin-{len(started)}"
        given.write_text(stdin, encoding="utf-8")
        master, slave = os.openpty()
        # The slave stays open here too: between this Popen and the child's own open, no one
        # else holds it, and a master with no slave reads EIO.
        process = subprocess.Popen(
            [sys.executable, "-c", CONTROLLING_TERMINAL, os.ttyname(slave), str(AGENT_TUI), *args],
            cwd=cli.workspace,
            env=cli.env,
            stdin=given.open("rb"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append((process, master, slave))
        return process, Terminal(master)

    yield start
    for process, master, slave in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        os.close(slave)
        os.close(master)


def test_ask_mode_in_a_terminal_asks_there_and_runs_only_what_was_allowed(
    cli: Cli,
    model_server: Callable[..., ServerProcess],
    in_terminal: Callable[..., tuple[subprocess.Popen[str], Terminal]],
) -> None:
    # Longer than any terminal line: it must be shown whole, never clipped.
    long_command = "touch approved.txt && echo " + " ".join(f"word{i}" for i in range(120))
    # An escape sequence in a command (here: "hide what follows") must be spelled out.
    sneaky = "touch denied.txt # \x1b[8m hidden"
    server = model_server(
        [
            tools_step(shell("call_yes", long_command)),
            tools_step(shell("call_no", sneaky)),
            {"text": "one made, one refused"},
        ]
    )
    process, terminal = in_terminal(
        *headless(server, "-", "--approval-mode", "ask"), stdin="make two files\n"
    )

    first = terminal.read_until(b"allow? [y/N]")
    terminal.type("y\n")
    second = terminal.read_until(b"allow? [y/N]", count=2)[len(first) :]
    terminal.type("n\n")
    stdout, stderr = process.communicate(timeout=DEADLINE)

    assert process.returncode == 0, stderr
    assert stdout == "one made, one refused\n"
    assert (cli.workspace / "approved.txt").exists()
    assert not (cli.workspace / "denied.txt").exists()
    requests = server.requests()
    assert "word119" in result_text(requests[1], "call_yes")
    refusal = result_text(requests[2], "call_no")
    assert refusal.startswith("Error (PermissionDenied)") and "denied" in refusal, refusal
    assert "no TTY" not in refusal

    assert "run_shell needs approval" in first
    assert long_command in first  # whole, on one line of its own
    assert f"runs on: local, in {cli.workspace}" in first
    assert "risk: medium" in first or "risk: high" in first, first
    assert "[low] echo word0" in first, first  # each segment with its own rating
    assert "asks because:" in first
    assert "allowed once" in second.split("run_shell needs approval")[0]
    assert "touch denied.txt # \\x1b[8m hidden" in second
    assert b"\x1b" not in terminal.seen  # nothing the model wrote drives the terminal
    assert "denied" in terminal.read_until(b"denied\r\n")


def test_ask_mode_with_no_answer_typed_is_a_no(
    cli: Cli,
    model_server: Callable[..., ServerProcess],
    in_terminal: Callable[..., tuple[subprocess.Popen[str], Terminal]],
) -> None:
    """Enter alone, or anything but y/yes, denies: the default is No."""
    server = model_server(
        [
            tools_step(shell("c1", "touch one.txt")),
            tools_step(shell("c2", "touch two.txt")),
            {"text": "fine"},
        ]
    )
    process, terminal = in_terminal(*headless(server, "go", "--approval-mode", "ask"), stdin="")
    terminal.read_until(b"allow? [y/N]")
    terminal.type("\n")
    terminal.read_until(b"allow? [y/N]", count=2)
    terminal.type("sure, why not\n")
    _, stderr = process.communicate(timeout=DEADLINE)

    assert process.returncode == 0, stderr
    assert not (cli.workspace / "one.txt").exists()
    assert not (cli.workspace / "two.txt").exists()


# -- the approver on a pty, in-process ---------------------------------------------------------


def request(command: str) -> ApprovalRequested:
    return ApprovalRequested(
        request_id="r1",
        tool_call_id="c1",
        tool_name="run_shell",
        arguments={"command": command},
        command=command,
        risk="medium",
        segments=[RiskSegmentView(text=command, risk="medium", reasons=["writes files"])],
    )


@pytest.fixture
def pty_pair() -> Iterator[tuple[Terminal, str]]:
    master, slave = os.openpty()
    yield Terminal(master), os.ttyname(slave)
    os.close(slave)
    os.close(master)


def answer_when_asked(terminal: Terminal, keys: str, ticked: threading.Event | None) -> None:
    """In a thread: wait for the question, then (after the loop showed it is alive) type."""

    def run() -> None:
        terminal.read_until(b"allow? [y/N]")
        if ticked is not None:
            ticked.wait(DEADLINE)
        terminal.type(keys)

    threading.Thread(target=run, daemon=True).start()


async def test_keys_typed_before_the_question_do_not_answer_it(
    pty_pair: tuple[Terminal, str], tmp_path: Path
) -> None:
    terminal, tty = pty_pair
    terminal.type("y\n")  # meant for something else, or a paste: sits in the terminal's queue
    answer_when_asked(terminal, "\n", None)

    answer = await asyncio.wait_for(TerminalApprover(tmp_path, tty_path=tty)(request("rm x")), 10)

    assert answer.decision is ApprovalDecision.DENY


async def test_the_loop_keeps_running_while_the_person_reads(
    pty_pair: tuple[Terminal, str], tmp_path: Path
) -> None:
    terminal, tty = pty_pair
    asked = asyncio.Event()
    ticked = threading.Event()

    async def ticker() -> None:
        while not ticked.is_set():
            if b"allow? [y/N]" in terminal.seen:
                asked.set()
                ticked.set()  # this ran while the approver waited for a key
            await asyncio.sleep(0.005)

    ticking = asyncio.ensure_future(ticker())
    answer_when_asked(terminal, "yes\n", ticked)
    answer = await asyncio.wait_for(TerminalApprover(tmp_path, tty_path=tty)(request("ls")), 10)
    ticking.cancel()

    assert answer.allowed
    assert asked.is_set(), "the event loop stood still while the question was open"


async def test_a_cancelled_question_leaves_nothing_waiting(
    pty_pair: tuple[Terminal, str], tmp_path: Path
) -> None:
    terminal, tty = pty_pair
    asking = asyncio.ensure_future(TerminalApprover(tmp_path, tty_path=tty)(request("ls")))
    await asyncio.to_thread(terminal.read_until, b"allow? [y/N]")
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    assert "cancelled" in await asyncio.to_thread(terminal.read_until, b"cancelled")


def test_answers_and_visible_text() -> None:
    assert parse_terminal_answer("y").allowed and parse_terminal_answer(" YES ").allowed
    for no in ("", "n", "no", "always", "a", "yy", "ok", "y es"):
        assert parse_terminal_answer(no).decision is ApprovalDecision.DENY, no
    with_reason = parse_terminal_answer("n: use git mv")
    assert with_reason.decision is ApprovalDecision.DENY_WITH_MESSAGE
    assert with_reason.message == "use git mv"
    assert visible("a\x1b[2K\rb\u202ec\nd\te") == "a\\x1b[2K\\x0db\\u202ec\nd\\x09e"
    shown = TerminalApprover(Path("/w"), "ask").describe(request("x"))
    assert "runs on: local, in /w" in shown and "asks because: approval mode ask" in shown


# -- a hostile model on a 24-line terminal ----------------------------------------------------


def screen_rows(shown: str, width: int = 80) -> list[str]:
    """The rows a ``width``-column terminal shows for text without escape sequences (each
    line wrapped by the terminal itself)."""
    rows: list[str] = []
    for line in shown.replace("\r\n", "\n").split("\n"):
        if "\r" in line:  # a bare carriage return would overwrite the row: never expected
            raise AssertionError(f"a carriage return inside a line: {line!r}")
        rows.extend(line[i : i + width] for i in range(0, max(len(line), 1), width))
    return rows


HOSTILE_WHY = (
    "routine check\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned title\x07\x9b2J"
    + "\n" * 30
    + "\x1b[2J\x1b[H── run_shell needs approval ──\n  command:\n    git status --short\n"
    "  risk: low\n" + "A" * 10_000
)


def test_a_hostile_model_cannot_move_the_command_off_a_24_line_terminal(
    cli: Cli,
    model_server: Callable[..., ServerProcess],
    in_terminal: Callable[..., tuple[subprocess.Popen[str], Terminal]],
) -> None:
    """Newlines, ANSI and OSC sequences and 10,000 characters in ``why``: the question's last
    24 rows still hold the real command, and nothing the model wrote reaches the terminal as
    an escape."""
    server = model_server(
        [
            tools_step(shell("call_1", "touch real.txt", why=HOSTILE_WHY, risk="low")),
            {"text": "done \x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;title\x07 ok"},
        ]
    )
    process, terminal = in_terminal(*headless(server, "go", "--approval-mode", "ask"), stdin="")
    shown = terminal.read_until(b"allow? [y/N]")
    last = screen_rows(shown.rstrip(" "))[-24:]
    terminal.type("n\n")
    stdout, stderr = process.communicate(timeout=DEADLINE)

    assert "    touch real.txt" in last, "\n".join(last)  # the real command, on screen
    question = "".join(last[-2:])  # the question wraps at 80 columns
    assert "computed risk MEDIUM" in question or "computed risk HIGH" in question, question
    # No fake command or risk drawn on a row of its own: the why's lines are one line.
    assert not any(row.strip() in ("git status --short", "risk: low") for row in last), last
    assert b"\x1b" not in terminal.seen and b"\x9b" not in terminal.seen.replace(b"\\x9b", b"")
    assert b"\x07" not in terminal.seen
    assert "\\x1b]52;" in shown  # spelled out, on the one line of the why
    assert "more characters)" in shown  # the 10,000 characters were cut, and it says so
    assert not (cli.workspace / "real.txt").exists()
    # The final answer and the progress lines reach a terminal (or a log) spelled out too.
    assert "\x1b" not in stdout and "\x07" not in stdout
    assert stdout == "done \\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b]0;title\\x07 ok\n"
    assert "\x1b" not in stderr and "\x9b" not in stderr

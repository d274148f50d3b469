"""The pieces under TmuxBackend: LocalBackend.spawn, the control-mode client, the marker
protocol's stream parsing, and the shared-shell guard.

The control client runs against real tmux servers on private sockets; the marker stream is fed
the byte sequences a real pane produces, split at every possible point.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tmux_helpers import SHELL, clean_env, kill_server, needs_tmux, new_socket_name
from tui.exec.backend import BackendError
from tui.exec.local import LocalBackend, LocalProcess
from tui.exec.tmux.control import (
    ControlClient,
    ControlClosed,
    TmuxCommandError,
    quote,
    unescape_output,
)
from tui.exec.tmux.guard import shared_shell_problem
from tui.exec.tmux.markers import (
    MARKER_PATTERN,
    CommandStream,
    ShellKind,
    bootstrap_line,
    command_text,
    find_markers,
    strip_markers,
    terminal_text,
)
from tui.exec.tmux_pane import canonical_session_name

DEADLINE = 10.0
NONCE = "0123abcd"


@pytest.fixture
def socket_name() -> Iterator[str]:
    name = new_socket_name()
    try:
        yield name
    finally:
        kill_server(name)


# -- LocalBackend.spawn --------------------------------------------------------------------------


async def test_spawn_pipes_both_ways_and_merges_stderr() -> None:
    backend = LocalBackend()
    assert backend.SUPPORTS_SPAWN
    process = await backend.spawn(["sh", "-c", "read line; echo out:$line; echo err >&2"])
    await process.write(b"hello\n")
    data = b""
    async with asyncio.timeout(DEADLINE):
        while chunk := await process.read():
            data += chunk
    assert b"out:hello" in data and b"err" in data
    await process.close()
    assert process.returncode == 0


async def test_spawn_close_stops_a_process_that_ignores_stdin() -> None:
    process = await LocalBackend().spawn(["sleep", "60"])
    async with asyncio.timeout(DEADLINE):
        await process.close()
    assert process.returncode is not None


async def test_spawn_write_after_exit_is_a_backend_error() -> None:
    process = await LocalBackend().spawn(["true"])
    assert isinstance(process, LocalProcess)
    async with asyncio.timeout(DEADLINE):
        assert await process.read() == b""
        await process.wait()
    with pytest.raises(BackendError):
        await process.write(b"x\n")
    await process.close()


async def test_spawn_of_a_missing_program_is_a_backend_error() -> None:
    with pytest.raises(BackendError, match="no-such-program"):
        await LocalBackend().spawn(["no-such-program-atui"])


# -- the control client ----------------------------------------------------------------------


def _argv(socket_name: str, *args: str) -> list[str]:
    return ["env", "-u", "TMUX", "tmux", "-L", socket_name, "-f", "/dev/null", "-C", *args]


async def _client(socket_name: str, **kwargs: object) -> ControlClient:
    return await ControlClient.connect(
        LocalBackend(),
        _argv(socket_name, "new-session", "-s", "t", "-x", "80", "-y", "24", SHELL),
        env=clean_env(),
        **kwargs,  # type: ignore[arg-type]
    )


@needs_tmux
async def test_replies_match_commands_in_order_and_errors_raise(socket_name: str) -> None:
    client = await _client(socket_name)
    try:
        replies = await client.commands(
            ["display-message -p one", "no-such-command", "display-message -p three"]
        )
        assert [r.lines for r in replies] == [["one"], replies[1].lines, ["three"]]
        assert [r.error for r in replies] == [False, True, False]
        with pytest.raises(TmuxCommandError, match="unknown command"):
            await client.command("no-such-command")
        with pytest.raises(ValueError):
            await client.command("display-message -p a\ndisplay-message -p b")
    finally:
        await client.close()


@needs_tmux
async def test_quote_passes_any_text_through_unchanged(socket_name: str, tmp_path: Path) -> None:
    client = await _client(socket_name)
    nasty = "a \"b\" 'c' $HOME ~ ~/x \\n \\ ; #{pane_id} ## {x} %1\ttab\nnewline é 😀 \x01 end"
    try:
        await client.command(f"set-buffer -b q {quote(nasty)}")
        await client.command(f"save-buffer -b q {quote(str(tmp_path / 'out'))}")
    finally:
        await client.close()
    assert (tmp_path / "out").read_text() == nasty


@needs_tmux
async def test_output_notifications_are_unescaped_per_pane(socket_name: str) -> None:
    seen: list[tuple[str, bytes]] = []
    got = asyncio.Event()

    def on_output(pane: str, data: bytes) -> None:
        seen.append((pane, data))
        if b"X\\Y\tZ" in b"".join(d for _, d in seen):
            got.set()

    client = await _client(socket_name, on_output=on_output)
    try:
        (pane,) = await client.command("display-message -p '#{pane_id}'")
        typed = "printf 'X\\\\Y\\tZ\\n'"  # the shell prints X, a backslash, Y, a tab, Z
        await client.command(f"send-keys -t {pane} -l {quote(typed)}")
        await client.command(f"send-keys -t {pane} Enter")
        async with asyncio.timeout(DEADLINE):
            await got.wait()
    finally:
        await client.close()
    assert all(name == pane for name, _ in seen)


@needs_tmux
async def test_client_end_fails_pending_commands_and_reports_exit(socket_name: str) -> None:
    events: list[tuple[str, str]] = []
    client = await _client(socket_name, on_notification=lambda n, a: events.append((n, a)))
    with pytest.raises(ControlClosed):
        await client.command("kill-server")
        await client.command("display-message -p never")
    async with asyncio.timeout(DEADLINE):
        await client.closed
    assert ("exit", "") in events or any(name == "exit" for name, _ in events)
    with pytest.raises(ControlClosed):
        await client.command("display-message -p late")
    await client.close()


@needs_tmux
async def test_connect_to_a_missing_session_says_why(socket_name: str) -> None:
    with pytest.raises(ControlClosed, match=r"no server running|no sessions|error connecting"):
        await ControlClient.connect(
            LocalBackend(), _argv(socket_name, "attach-session", "-t", "=nope"), env=clean_env()
        )


def test_unescape_output() -> None:
    assert unescape_output(b"a\\015\\012b\\134c") == b"a\r\nb\\c"
    assert unescape_output(b"plain") == b"plain"


# -- markers -------------------------------------------------------------------------------------


def _marker(marker_id: int, tail: str) -> bytes:
    return f"\x1b]6973;__ATUI_{NONCE}_{marker_id}_{tail}__\x07".encode()


PANE_BYTES = (
    b"\x1b[?2004l\recho hi\r\n"  # the echo: before the start marker, never output
    + _marker(5, "go")
    + b"hi\r\n\x1b[31mred\x1b[0m\r\n50%\r100%\r\nno newline"
    + _marker(5, "0")
    + b"bash-5.2# "
)


@pytest.mark.parametrize("split", range(0, len(PANE_BYTES) + 1, 3))
def test_command_stream_finds_output_between_markers_at_any_split(split: int) -> None:
    stream = CommandStream(NONCE)
    stream.feed(PANE_BYTES[:split])
    stream.feed(PANE_BYTES[split:])
    assert stream.done and stream.exit_code == 0
    assert stream.output() == "hi\nred\n100%\nno newline"


def test_command_stream_ignores_other_ids_other_nonces_and_streams_lines() -> None:
    stream = CommandStream(NONCE)
    stream.feed(_marker(3, "0"))  # an earlier prompt
    stream.feed(_marker(4, "go") + b"a\r\n" + _marker(4, "1"))  # someone else's command?
    assert stream.done  # the first start marker after typing is ours
    stream = CommandStream(NONCE)
    live: list[str] = []
    stream.feed(_marker(7, "go") + b"one\r\n__ATUI_deadbeef_7_0__\r\ntw")
    live.append(stream.take_live())
    assert not stream.done
    stream.feed(b"o\r\n" + _marker(6, "0") + _marker(7, "2"))
    live.append(stream.take_live())
    assert stream.exit_code == 2
    assert "".join(live) == stream.output() == "one\n__ATUI_deadbeef_7_0__\ntwo\n"


def test_command_stream_past_its_cap_still_finds_the_end() -> None:
    stream = CommandStream(NONCE, keep_limit=100)
    stream.feed(_marker(1, "go"))
    for _ in range(50):
        stream.feed(b"x" * 37 + b"\r\n")
    stream.feed(_marker(1, "0")[:10])
    stream.feed(_marker(1, "0")[10:])
    assert stream.done and stream.capped and stream.exit_code == 0


def test_bootstrap_and_command_text_never_contain_a_marker() -> None:
    for kind in ShellKind:
        line = bootstrap_line(kind, NONCE)
        assert "\n" not in line
        assert not find_markers(line.encode(), NONCE)
        assert not re.search(MARKER_PATTERN, line.encode())
    assert command_text(ShellKind.BASH, "echo a\necho b\n") == "{ echo a\necho b\n}"
    assert command_text(ShellKind.SH, "true") == "__atui_go; true"


def test_terminal_text_applies_carriage_returns_and_drops_escapes() -> None:
    raw = "\x1b[1mbold\x1b[0m\r\n10%\r\x1b[K50%\rdone\r\n\x1b]0;title\x07x\bY\ttab"
    assert terminal_text(raw) == "bold\ndone\nY\ttab"


def test_strip_markers_only_strips_the_given_pane() -> None:
    text = f"a\x1b]6973;__ATUI_{NONCE}_3_0_p2f746d70__\x07 b __ATUI_deadbeef_3_0__"
    assert strip_markers(text, NONCE) == "a b __ATUI_deadbeef_3_0__"
    assert strip_markers(text) == "a b "


# -- guard and names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "set -e",
        "set -euo pipefail; make",
        "set -o errexit",
        "exit",
        "make || exit 1",
        "logout",
        "exec bash",
        "exec >log 2>&1",
        "FOO=1 exec python",
        "tmux kill-server",
        "tmux -L other kill-session -t x",
        "sudo tmux new-session -d",
        "tmux",
    ],
)
def test_guard_refuses_what_breaks_the_shared_shell(command: str) -> None:
    problem = shared_shell_problem(command)
    assert problem is not None
    assert "bash -lc" in problem or "tmux_" in problem or "bash -c" in problem


@pytest.mark.parametrize(
    "command",
    [
        "bash -lc 'set -e; false; exit 3'",
        "set +e",
        "set -x",
        "set -- -e",
        "echo exit",
        "tmux ls",
        "tmux capture-pane -p",
        "grep -e exit file",
    ],
)
def test_guard_allows_harmless_commands(command: str) -> None:
    assert shared_shell_problem(command) is None


def test_session_names_are_canonical() -> None:
    assert canonical_session_name("build") == "atui-build"
    assert canonical_session_name("atui-build") == "atui-build"
    assert canonical_session_name("my.proj:1") == "atui-my-proj-1"
    with pytest.raises(ValueError):
        canonical_session_name("  ")

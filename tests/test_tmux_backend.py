"""TmuxBackend against real tmux servers: what a person watching the pane and the model rely on.

Every test gets a private socket whose server is killed afterwards. Nothing sleeps to
synchronise: completion is the backend's own end-marker event, and the mirror test waits for
the frame it expects with a deadline.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tests.tmux_helpers import (
    SHELL,
    OutputWatch,
    kill_server,
    needs_tmux,
    new_socket_name,
    tmux,
    tmux_backends,
)
from tests.waiting import until
from tui.events import Event, PaneSnapshot
from tui.exec.backend import BackendError
from tui.exec.tmux.backend import TmuxBackend
from tui.exec.tmux.mirror import PaneMirror
from tui.exec.tmux_pane import LimitReached, NotOurs, ShellGuardError

pytestmark = needs_tmux

DEADLINE = 10.0
OWNER = "atui-test"
SGR = re.compile(r"\x1b\[[0-9;]*m")

MakeBackend = Callable[..., TmuxBackend]

SHELLS = [
    pytest.param(SHELL, id="bash"),
    pytest.param(
        "dash", id="dash", marks=pytest.mark.skipif(not shutil.which("dash"), reason="no dash")
    ),
    pytest.param("sh", id="sh"),
    pytest.param(
        "zsh -f", id="zsh", marks=pytest.mark.skipif(not shutil.which("zsh"), reason="no zsh")
    ),
]


@pytest.fixture
def socket_name() -> Iterator[str]:
    name = new_socket_name()
    try:
        yield name
    finally:
        kill_server(name)


@pytest.fixture
async def make_backend(socket_name: str, tmp_path: Path) -> AsyncIterator[MakeBackend]:
    async with tmux_backends(socket_name, tmp_path, OWNER) as make:
        yield make


async def pane_format(socket_name: str, pane: str, fmt: str) -> str:
    return (await tmux(socket_name, "display-message", "-p", "-t", pane, fmt)).strip()


# -- commands, shells, markers -------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
async def test_exit_codes_and_output_between_markers(make_backend: MakeBackend, shell: str) -> None:
    backend = make_backend(shell=shell)
    ok = await backend.run("echo hello", timeout=DEADLINE)
    assert (ok.exit_code, ok.stdout, ok.merged_output) == (0, "hello\n", True)
    failed = await backend.run("ls /no/such/dir", timeout=DEADLINE)
    assert failed.exit_code not in (0, None)
    assert "No such file" in failed.stdout  # stderr arrives in the same stream
    code = await backend.run("sh -c 'exit 7'", timeout=DEADLINE)
    assert code.exit_code == 7 and code.stdout == ""
    partial = await backend.run("printf 'no newline'", timeout=DEADLINE)
    assert partial.stdout == "no newline"
    multi = await backend.run("for i in 1 2; do\n  echo line$i\ndone", timeout=DEADLINE)
    assert (multi.exit_code, multi.stdout) == (0, "line1\nline2\n")
    tabs = await backend.run("printf 'a\\tb\\n'", timeout=DEADLINE)
    assert tabs.stdout == "a\tb\n"


@pytest.mark.skipif(not shutil.which("zsh"), reason="no zsh")
async def test_zsh_reads_a_hash_as_a_comment_as_bash_does(make_backend: MakeBackend) -> None:
    """The rater reads ``# ; x`` as a comment; a zsh pane must too, even after a command
    switched ``interactive_comments`` off."""
    backend = make_backend(shell="zsh -f")
    result = await backend.run("echo hi # ; echo INJECTED", timeout=DEADLINE)
    assert result.stdout == "hi\n"
    await backend.run("unsetopt interactive_comments", timeout=DEADLINE)
    again = await backend.run("echo hi # ; echo INJECTED", timeout=DEADLINE)
    assert again.stdout == "hi\n"


async def test_output_never_contains_the_typed_command(make_backend: MakeBackend) -> None:
    backend = make_backend()
    result = await backend.run("echo 'typed-text'  |  tr a-z A-Z", timeout=DEADLINE)
    assert result.stdout == "TYPED-TEXT\n"


async def test_marker_like_text_in_the_command_and_output(make_backend: MakeBackend) -> None:
    backend = make_backend()
    fake = "__ATUI_deadbeef_1_0__ __ATUI_0000aaaa_2_go__"
    result = await backend.run(
        f"echo '{fake}'; printf '__ATUI_%s_%s_%s__\\n' cafe0000 9 0", timeout=DEADLINE
    )
    assert result.exit_code == 0
    assert result.stdout == f"{fake}\n__ATUI_cafe0000_9_0__\n"
    after = await backend.run("echo next", timeout=DEADLINE)
    assert after.stdout == "next\n"


async def test_bootstrap_is_idempotent_across_backends(make_backend: MakeBackend) -> None:
    first = make_backend()
    await first.run("export KEEP=1", timeout=DEADLINE)
    pane = first.default_pane
    await first.close()
    second = make_backend()  # adopts the session and sets the same pane up again
    result = await second.run('echo "$KEEP:$PROMPT_COMMAND"', timeout=DEADLINE)
    assert second.default_pane == pane
    keep, prompt_command = result.stdout.strip().split(":", 1)
    assert keep == "1"  # the same shell, not a new one
    assert prompt_command.count("__atui_p") == 1


async def test_flood_with_the_start_scrolled_out_of_history(make_backend: MakeBackend) -> None:
    backend = make_backend(history_limit=100)
    result = await backend.run("seq 1 200000", timeout=60)
    lines = result.stdout.splitlines()
    assert result.exit_code == 0
    assert len(lines) == 200000 and lines[0] == "1" and lines[-1] == "200000"
    history = await pane_format(backend.socket_name, backend.default_pane or "", "#{history_limit}")
    assert history == "100"


async def test_pane_left_in_copy_mode(make_backend: MakeBackend, socket_name: str) -> None:
    backend = make_backend()
    await backend.start()
    pane = backend.default_pane or ""
    await tmux(socket_name, "copy-mode", "-t", pane)
    assert await pane_format(socket_name, pane, "#{pane_in_mode}") == "1"
    result = await backend.run("echo out-of-copy-mode", timeout=DEADLINE)
    assert result.stdout == "out-of-copy-mode\n"
    assert await pane_format(socket_name, pane, "#{pane_in_mode}") == "0"


async def test_commands_typed_while_output_floods(make_backend: MakeBackend) -> None:
    backend = make_backend()
    await backend.start()
    flooding = OutputWatch(b"\n1000\r\n")
    remove = backend.add_output_listener(backend.default_pane or "", flooding)
    pane, _ = await backend.dispatch("seq 1 50000000")
    async with asyncio.timeout(DEADLINE):
        await flooding.wait()
    remove()
    # Keys sent into the flood: Ctrl-C must arrive and stop it.
    await backend.send_keys(pane, ["C-c"])
    async with asyncio.timeout(DEADLINE):
        code = await backend.wait_for_prompt(pane, DEADLINE)
    assert code not in (0, None)
    # A background job floods the pane while a long command line is being typed.
    flooding = OutputWatch(b"\n5000\r\n")
    remove = backend.add_output_listener(pane, flooding)
    await backend.run("(seq 1 1000000 >/dev/tty &)", timeout=DEADLINE)
    async with asyncio.timeout(DEADLINE):
        await flooding.wait()
    remove()
    # A long line (1600+ keystrokes): one lost or reordered key breaks the sum or the syntax.
    long_sum = "sleep 0.3; echo sum=$((" + "+".join(str(i) for i in range(400)) + "))"
    result = await backend.run(long_sum, timeout=30)
    assert result.exit_code == 0
    assert f"sum={sum(range(400))}\n" in result.stdout
    assert re.search(r"^[0-9]+$", result.stdout, re.MULTILINE)  # it was flooding meanwhile


async def test_cwd_is_typed_once_and_then_persists(
    make_backend: MakeBackend, tmp_path: Path
) -> None:
    backend = make_backend()
    target = tmp_path / "sub dir"
    target.mkdir()
    first = await backend.run("pwd", cwd=str(target), timeout=DEADLINE)
    assert first.stdout == f"{target}\n"
    second = await backend.run("pwd", timeout=DEADLINE)
    assert second.stdout == f"{target}\n"
    with pytest.raises(BackendError, match="cannot cd"):
        await backend.run("pwd", cwd=str(tmp_path / "missing"), timeout=DEADLINE)


async def test_live_output_reaches_the_chunk_sink(make_backend: MakeBackend) -> None:
    backend = make_backend()
    chunks: list[tuple[str, str]] = []
    result = await backend.run(
        "echo one; echo two", timeout=DEADLINE, on_chunk=lambda s, t: chunks.append((s, t))
    )
    assert "".join(t for s, t in chunks if s == "stdout") == result.stdout == "one\ntwo\n"


# -- timeouts, dispatch, cancel ------------------------------------------------------------------


async def test_timeout_leaves_the_command_running_and_says_how_to_recover(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend()
    result = await backend.run("echo started; sleep 30", timeout=0.5)
    pane = backend.default_pane or ""
    assert result.timed_out and result.exit_code is None
    assert result.stdout == "started\n"
    assert any(f"still running in pane {pane}" in n and "C-c" in n for n in result.notices)
    assert backend.running_command(pane) == "echo started; sleep 30"
    with pytest.raises(BackendError, match="still running"):
        await backend.run("echo blocked", timeout=DEADLINE)
    await backend.send_keys(pane, "C-c")
    assert await backend.wait_for_prompt(pane, DEADLINE) not in (0, None)
    assert (await backend.run("echo free", timeout=DEADLINE)).stdout == "free\n"


async def test_cancel_sends_ctrl_c_and_frees_the_pane(make_backend: MakeBackend) -> None:
    backend = make_backend()
    cancel = asyncio.Event()

    def sink(stream: str, text: str) -> None:
        if "waiting" in text:
            cancel.set()

    result = await backend.run(
        "echo waiting; sleep 30", timeout=DEADLINE, cancel=cancel, on_chunk=sink
    )
    assert result.cancelled and not result.timed_out
    assert backend.running_command(backend.default_pane or "") is None


async def test_a_cancel_before_the_start_types_nothing(
    make_backend: MakeBackend, tmp_path: Path
) -> None:
    backend = make_backend()
    await backend.start()
    cancel = asyncio.Event()
    cancel.set()
    marker = tmp_path / "typed"
    result = await backend.run(f"touch '{marker}'", timeout=DEADLINE, cancel=cancel)
    assert result.cancelled and result.exit_code is None and result.merged_output
    assert (await backend.run("echo next", timeout=DEADLINE)).stdout == "next\n"
    assert not marker.exists()


async def test_dispatch_returns_at_once_and_capture_sees_the_output(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend()
    await backend.start()
    pane, notices = await backend.dispatch("sleep 0.3; echo dispatched-done")
    assert pane == backend.default_pane and notices == []
    assert backend.running_command(pane) is not None
    assert await backend.wait_for_prompt(pane, DEADLINE) == 0
    capture = await backend.capture(pane)
    assert "dispatched-done" in capture.text
    assert "__ATUI_" not in capture.text


# -- guardrails ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["set -e", "exit", "exec bash", "tmux kill-server"])
async def test_guardrails_refuse_before_typing(make_backend: MakeBackend, command: str) -> None:
    backend = make_backend()
    with pytest.raises(ShellGuardError, match=r"bash -lc|bash -c|tmux_"):
        await backend.run(command, timeout=DEADLINE)
    fine = await backend.run("bash -lc 'set -e; false; echo unreachable'", timeout=DEADLINE)
    assert fine.exit_code == 1 and fine.stdout == ""


# -- recovery --------------------------------------------------------------------------------


async def test_a_killed_shared_pane_is_recreated_with_a_notice(
    make_backend: MakeBackend, socket_name: str
) -> None:
    backend = make_backend()
    await backend.run("export LOST=1", timeout=DEADLINE)
    old = backend.default_pane or ""
    await tmux(socket_name, "new-window", "-d", "-t", f"={backend.default_session}:", "cat")
    await tmux(socket_name, "kill-pane", "-t", old)
    result = await backend.run('echo "[$LOST]"', timeout=DEADLINE)
    assert result.stdout == "[]\n"
    assert backend.default_pane != old
    assert any("shared pane" in n and "was gone" in n for n in result.notices), result.notices


async def test_a_killed_server_is_recreated_with_a_notice(
    make_backend: MakeBackend, socket_name: str
) -> None:
    backend = make_backend()
    await backend.run("true", timeout=DEADLINE)
    await tmux(socket_name, "kill-server")
    result = await backend.run("echo back", timeout=DEADLINE)
    assert result.stdout == "back\n"
    assert any("tmux server" in n and "had stopped" in n for n in result.notices)
    quiet = await backend.run("echo again", timeout=DEADLINE)
    assert quiet.notices == []


# -- sessions, panes, ownership, limits ------------------------------------------------------------


async def test_only_our_tagged_sessions_are_listed_and_killed(
    make_backend: MakeBackend, socket_name: str
) -> None:
    backend = make_backend()
    await backend.start()
    await tmux(socket_name, "new-session", "-d", "-s", "foreign", "cat")
    await tmux(socket_name, "new-session", "-d", "-s", "atui-impostor", "cat")
    session, pane = await backend.create_session("work")
    assert session == "atui-work"
    names = {info.name for info in await backend.list_sessions()}
    assert names == {"atui-agent", "atui-work"}
    assert pane in {p.pane_id for p in await backend.list_panes("work")}
    for name in ("foreign", "impostor", "atui-impostor"):
        with pytest.raises(NotOurs):
            await backend.kill_session(name)
    with pytest.raises(NotOurs):
        await backend.send_keys("foreign", "C-c")
    assert await backend.kill_session("work") == "atui-work"
    listing = await tmux(socket_name, "list-sessions", "-F", "#{session_name}")
    assert set(listing.split()) == {"atui-agent", "foreign", "atui-impostor"}


async def test_commands_run_in_created_panes_and_sessions(make_backend: MakeBackend) -> None:
    backend = make_backend(shell="dash" if shutil.which("dash") else SHELL)
    pane = await backend.create_pane(direction="right")
    result = await backend.run("echo in-pane", target=pane, timeout=DEADLINE)
    assert result.stdout == "in-pane\n"
    _, session_pane = await backend.create_session("side")
    result = await backend.run("echo in-session", target="side", timeout=DEADLINE)
    assert result.stdout == "in-session\n" and backend.last_pane == session_pane
    assert await backend.kill_pane(pane) == pane
    with pytest.raises(NotOurs):
        await backend.run("echo gone", target=pane, timeout=DEADLINE)


async def test_limits_and_the_undeletable_default(make_backend: MakeBackend) -> None:
    backend = make_backend(max_sessions=2, max_panes=3)
    await backend.create_session("one")
    with pytest.raises(LimitReached, match="max_sessions=2"):
        await backend.create_session("two")
    await backend.create_pane()
    with pytest.raises(LimitReached, match="max_panes=3"):
        await backend.create_pane()
    with pytest.raises(BackendError, match="shared session"):
        await backend.kill_session("agent")
    with pytest.raises(BackendError, match="shared pane"):
        await backend.kill_pane(backend.default_pane or "")


async def test_send_keys_to_a_missing_target_is_an_error(make_backend: MakeBackend) -> None:
    backend = make_backend()
    await backend.start()
    with pytest.raises(NotOurs):
        await backend.send_keys("%999", "C-c")
    with pytest.raises(NotOurs):
        await backend.send_keys("nosuchsession", "hello", literal=True)
    with pytest.raises(BackendError, match="not a tmux key name"):
        await backend.send_keys(backend.default_pane or "", ["Ctrl-C"])


async def test_files_go_to_the_host_not_the_pane(make_backend: MakeBackend, tmp_path: Path) -> None:
    backend = make_backend()
    await backend.write_file(str(tmp_path / "f.txt"), b"data\n")
    assert await backend.read_file(str(tmp_path / "f.txt")) == b"data\n"
    assert backend.default_pane is None  # no pane was even started for it


# -- the mirror ------------------------------------------------------------------------------


async def test_mirror_publishes_coloured_frames_of_the_last_used_pane(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend()
    frames: list[PaneSnapshot] = []
    red = asyncio.Event()
    second = asyncio.Event()

    def publish(event: Event) -> None:
        assert isinstance(event, PaneSnapshot)
        frames.append(event)
        screen = "\n".join(event.lines)
        if "\x1b[31m" in screen and "red" in screen:
            red.set()
        if event.pane_id != backend.default_pane and "other-pane" in screen:
            second.set()

    mirror = PaneMirror(backend, publish)
    await mirror.start()
    try:
        await backend.run("printf '\\033[31mred\\033[0m\\n'", timeout=DEADLINE)
        async with asyncio.timeout(DEADLINE):
            await red.wait()
        frame = frames[-1]
        assert frame.actor == f"local/tmux:{frame.pane_id}"
        assert frame.width == backend.width and frame.height == backend.height
        assert len(frame.lines) == frame.height and 0 <= frame.cursor_y < frame.height
        assert not any("__ATUI_" in line for line in frame.lines)
        other = await backend.create_pane(direction="window")
        await backend.run("echo other-pane", target=other, timeout=DEADLINE)
        async with asyncio.timeout(DEADLINE):
            await second.wait()
        assert mirror.pane_id == other
        # The person types into the mirrored pane: text and a key, then raw terminal bytes.
        pane_id = mirror.pane_id
        assert pane_id is not None
        for typed, shown in (("echo person-$((6*7))", "person-42"), ("echo raw-$((2*3))", "raw-6")):
            seen = asyncio.Event()
            watch = shown

            def check(event: Event, watch: str = watch, seen: asyncio.Event = seen) -> None:
                lines = [SGR.sub("", line) for line in getattr(event, "lines", [])]
                if any(line.startswith(watch) for line in lines):
                    seen.set()

            def both(event: Event, check: Callable[[Event], None] = check) -> None:
                publish(event)
                check(event)

            mirror.publish = both
            if typed.startswith("echo person"):
                await backend.send_typed(pane_id, "text", typed)
                await backend.send_typed(pane_id, "key", "Enter")
            else:
                await backend.send_input(pane_id, typed.encode() + b"\r")
            async with asyncio.timeout(DEADLINE):
                await seen.wait()
    finally:
        await mirror.close()


async def test_mirror_says_when_its_pane_went_with_the_tmux_server(
    make_backend: MakeBackend, socket_name: str
) -> None:
    """The server killed under the agent: the mirror is told its pane is gone (and why), and
    the agent's next command's fresh pane is mirrored again."""
    backend = make_backend()
    frames: list[PaneSnapshot] = []

    def publish(event: Event) -> None:
        assert isinstance(event, PaneSnapshot)
        frames.append(event)

    mirror = PaneMirror(backend, publish)
    await mirror.start()
    try:
        await backend.run("echo before", timeout=DEADLINE)
        pane = mirror.pane_id
        await tmux(socket_name, "kill-server")
        gone = await until(lambda: [f for f in frames if f.gone], "the gone frame", DEADLINE)
        assert gone[0].pane_id == pane and "tmux session or server ended" in (gone[0].gone or "")
        assert gone[0].lines == []
        frames.clear()
        await backend.run("echo after", timeout=DEADLINE)
        await until(
            lambda: any("after" in line for f in frames if not f.gone for line in f.lines),
            "a frame of the fresh pane",
            DEADLINE,
        )
    finally:
        await mirror.close()


async def test_mirror_coalesces_a_flood(make_backend: MakeBackend) -> None:
    backend = make_backend()
    frames: list[PaneSnapshot] = []
    done = asyncio.Event()

    def publish(event: Event) -> None:
        assert isinstance(event, PaneSnapshot)
        frames.append(event)
        if any(line.strip() == "100000" for line in event.lines):
            done.set()

    mirror = PaneMirror(backend, publish, max_rate=20)
    await mirror.start()
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await backend.run("seq 1 100000", timeout=30)
        async with asyncio.timeout(DEADLINE):
            await done.wait()
        elapsed = loop.time() - started
    finally:
        await mirror.close()
    assert len(frames) <= 20 * elapsed + 3

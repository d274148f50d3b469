"""The watched shell runs exactly what was approved, where the approval said, and shows nothing
of the machinery: real tmux servers on private sockets, bash and zsh panes.

A person may take the pane over between two calls: leave text at the prompt, start a program,
begin a multi-line command, ``cd`` elsewhere. Each test does that with the tmux CLI, as a
take-over would, then checks from the shell itself (its history, its screen) what happened.
Waits are on conditions (the pane's own output, tmux's answers) with a deadline.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Harness, make_harness
from tests.tmux_helpers import (
    SHELL,
    OutputWatch,
    clean_env,
    kill_server,
    needs_tmux,
    new_socket_name,
    tmux,
    tmux_backends,
)
from tests.waiting import until
from tui.events import (
    ApprovalAnswer,
    ApprovalDecision,
    ApprovalRequested,
    ToolCallCompleted,
    ToolCallStarted,
)
from tui.exec.backend import BackendError
from tui.exec.tmux.backend import TmuxBackend
from tui.exec.tmux.jobs import CANCEL_GRACE
from tui.exec.tmux.markers import find_markers
from tui.exec.tmux.panes import CTRL_C_TRIES, PromptHeld
from tui.security.permissions import ApprovalMode
from tui.ui.cwd import printable

pytestmark = needs_tmux

DEADLINE = 10.0
MakeBackend = Callable[..., TmuxBackend]
SHELLS = [
    pytest.param(SHELL, id="bash"),
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
    async with tmux_backends(socket_name, tmp_path) as make:
        yield make


async def screen(socket_name: str, pane: str) -> list[str]:
    text = await tmux(socket_name, "capture-pane", "-p", "-t", pane)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


async def take_over_typing(
    backend: TmuxBackend, socket_name: str, pane: str, text: str, *, enter: bool = False
) -> None:
    """Type as a person would through the mirror, and wait until the shell echoed it."""
    watch = OutputWatch(text.split()[-1].encode())
    remove = backend.add_output_listener(pane, watch)
    try:
        await tmux(socket_name, "send-keys", "-t", pane, "-l", text)
        if enter:
            await tmux(socket_name, "send-keys", "-t", pane, "Enter")
        await asyncio.wait_for(watch.wait(), DEADLINE)
    finally:
        remove()


# -- what you approve is what runs ---------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
async def test_text_left_at_the_prompt_is_not_glued_onto_the_command(
    make_backend: MakeBackend, socket_name: str, shell: str
) -> None:
    backend = make_backend(shell=shell)
    await backend.run("true", timeout=DEADLINE)
    pane = backend.default_pane
    assert pane
    await take_over_typing(backend, socket_name, pane, "echo leftover")
    approved = "echo approved-$((6 * 7))"
    result = await backend.run(approved, timeout=DEADLINE)
    assert result.stdout == "approved-42\n"
    history = await backend.run("fc -ln -1", timeout=DEADLINE)
    assert history.stdout.strip() == approved  # the shell's own record of what ran


async def test_text_ctrl_c_cannot_drop_holds_the_prompt_and_nothing_is_typed(
    make_backend: MakeBackend, socket_name: str
) -> None:
    """A shell that ignores Ctrl-C keeps the text someone left: after its tries the call is
    refused with why, and the approved command is never glued onto that text."""
    backend = make_backend()
    await backend.run("trap '' INT", timeout=DEADLINE)
    pane = backend.default_pane
    assert pane
    await take_over_typing(backend, socket_name, pane, "echo leftover")
    started = asyncio.get_running_loop().time()
    with pytest.raises(PromptHeld, match="Ctrl-C brought no fresh prompt"):
        await backend.run("echo approved", timeout=DEADLINE * 3)
    waited = asyncio.get_running_loop().time() - started
    assert waited >= CTRL_C_TRIES * CANCEL_GRACE - 0.5  # every try was given its wait
    screen = await tmux(socket_name, "capture-pane", "-p", "-t", pane)
    assert "echo leftover" in screen and "approved" not in screen


@pytest.mark.parametrize("shell", SHELLS)
async def test_text_left_in_vi_command_mode_is_dropped_too(
    make_backend: MakeBackend, socket_name: str, shell: str
) -> None:
    backend = make_backend(shell=shell)
    await backend.run("set -o vi" if shell == SHELL else "bindkey -v", timeout=DEADLINE)
    pane = backend.default_pane
    assert pane

    async def cursor_x() -> int:
        return int(await tmux(socket_name, "display-message", "-p", "-t", pane, "#{cursor_x}"))

    home = await cursor_x()
    await take_over_typing(backend, socket_name, pane, "echo leftover")
    # Escape to command mode and back to the line's start: the emacs keys do nothing here.
    await tmux(socket_name, "send-keys", "-t", pane, "Escape")
    await tmux(socket_name, "send-keys", "-t", pane, "-l", "0")

    async def at_start() -> bool:
        return await cursor_x() == home

    await until(at_start, "the cursor at the start of the left text", DEADLINE)
    approved = "echo approved-$((6 * 7))"
    result = await backend.run(approved, timeout=DEADLINE)
    assert result.stdout == "approved-42\n"
    history = await backend.run("fc -ln -1", timeout=DEADLINE)
    assert history.stdout.strip() == approved


@pytest.mark.parametrize("shell", SHELLS)
async def test_a_program_in_the_pane_is_never_typed_into(
    make_backend: MakeBackend, socket_name: str, shell: str
) -> None:
    backend = make_backend(shell=shell)
    await backend.run("true", timeout=DEADLINE)
    pane = backend.default_pane
    assert pane
    await tmux(socket_name, "send-keys", "-t", pane, "-l", "cat")
    await tmux(socket_name, "send-keys", "-t", pane, "Enter")

    async def cat_runs() -> bool:
        return (
            await tmux(socket_name, "display-message", "-p", "-t", pane, "#{pane_current_command}")
        ).strip() == "cat"

    await until(cat_runs, "cat to hold the pane", DEADLINE)
    with pytest.raises(BackendError, match="running `cat`"):
        await backend.run("echo must-not-reach-cat", timeout=DEADLINE)
    await tmux(socket_name, "send-keys", "-t", pane, "C-d")

    async def cat_gone() -> bool:
        return not await cat_runs()

    await until(cat_gone, "cat to end", DEADLINE)
    after = await backend.run("echo free-again", timeout=DEADLINE)
    assert after.stdout == "free-again\n"
    assert not any("must-not-reach-cat" in line for line in await screen(socket_name, pane))


@pytest.mark.parametrize("shell", SHELLS)
async def test_a_half_typed_command_or_a_busy_shell_refuses_the_call(
    make_backend: MakeBackend, socket_name: str, shell: str
) -> None:
    backend = make_backend(shell=shell)
    await backend.run("true", timeout=DEADLINE)
    pane = backend.default_pane
    assert pane
    # A person starts a loop and presses Enter: the shell waits for the rest of it.
    await take_over_typing(backend, socket_name, pane, "for i in 1 2; do", enter=True)

    async def continuing() -> bool:
        return backend.prompt_state(pane) == "continuation"

    await until(continuing, "the continuation prompt", DEADLINE)
    with pytest.raises(BackendError, match="half-typed command"):
        await backend.run("echo glued-$((1 + 1))", timeout=2)
    await tmux(socket_name, "send-keys", "-t", pane, "C-c")

    async def at_prompt() -> bool:
        return backend.prompt_state(pane) == "prompt"

    await until(at_prompt, "the prompt after Ctrl-C", DEADLINE)
    # A builtin the person started holds the shell though tmux names the shell itself.
    await take_over_typing(backend, socket_name, pane, "read held_by_person", enter=True)

    async def busy() -> bool:
        return backend.prompt_state(pane) == "running"

    await until(busy, "the shell to run `read`", DEADLINE)
    with pytest.raises(BackendError, match="busy"):
        await backend.run("echo glued-$((2 + 2))", timeout=2)
    await take_over_typing(backend, socket_name, pane, "typed-by-person", enter=True)
    await until(at_prompt, "the prompt after `read`", DEADLINE)
    result = await backend.run("echo ran-$((3 + 3)); echo $held_by_person", timeout=DEADLINE)
    assert result.stdout == "ran-6\ntyped-by-person\n"
    shown = "\n".join(await screen(socket_name, pane))
    assert "glued-2" not in shown and "glued-4" not in shown


# -- where it runs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shell",
    [
        *SHELLS,
        pytest.param(
            "dash", id="dash", marks=pytest.mark.skipif(not shutil.which("dash"), reason="no dash")
        ),
    ],
)
async def test_the_directory_is_reported_even_when_its_name_is_hostile(
    make_backend: MakeBackend, tmp_path: Path, shell: str
) -> None:
    backend = make_backend(shell=shell)
    first = await backend.run("true", timeout=DEADLINE)
    assert first.cwd == str(tmp_path) == backend.shell_cwd()
    pane = backend.default_pane
    moved = await backend.run("cd /tmp", timeout=DEADLINE)
    assert moved.cwd == "/tmp" == backend.shell_cwd()
    # A name with a newline, an escape sequence, a BEL and a forged marker of another nonce.
    hostile = tmp_path / "a\nb\x1b[31mred\x07\t__ATUI_deadbeef_9_0_p2f__ é"
    hostile.mkdir()
    quoted = "'" + str(hostile).replace("'", "'\\''") + "'"
    result = await backend.run(f"cd {quoted} && echo in", timeout=DEADLINE)
    assert (result.exit_code, result.stdout) == (0, "in\n")
    assert result.cwd == str(hostile) == backend.shell_cwd()
    assert not result.notices and backend.default_pane == pane  # the pane was not "lost"
    assert "\n" not in printable(str(hostile)) and "\x1b" not in printable(str(hostile))
    back = await backend.run("cd .. && echo out", timeout=DEADLINE)
    assert (back.stdout, back.cwd) == ("out\n", str(tmp_path))
    assert not back.notices and backend.default_pane == pane


def test_a_marker_cannot_carry_a_forged_or_oversized_directory() -> None:
    nonce = "0123abcd"
    good = f"\x1b]6973;__ATUI_{nonce}_3_0_p{b'/tmp'.hex()}__\x07".encode()
    assert find_markers(good, nonce)[0].cwd == "/tmp"
    relative = f"\x1b]6973;__ATUI_{nonce}_3_0_p{b'etc'.hex()}__\x07".encode()
    assert find_markers(relative, nonce)[0].cwd is None
    odd = f"\x1b]6973;__ATUI_{nonce}_3_0_p2f7__\x07".encode()
    assert find_markers(odd, nonce)[0].cwd is None
    huge = f"\x1b]6973;__ATUI_{nonce}_3_0_p{'2f' * 2000}__\x07".encode()
    assert find_markers(huge, nonce) == []


@pytest.fixture
async def tmux_harness(
    make_backend: MakeBackend, workspace: Path
) -> AsyncIterator[tuple[Harness, TmuxBackend]]:
    backend = make_backend(default_cwd=str(workspace))
    harness = make_harness(workspace, backend=backend)
    await backend.start()
    yield harness, backend


async def test_relative_paths_and_the_approval_follow_the_shell(
    tmux_harness: tuple[Harness, TmuxBackend], workspace: Path, socket_name: str
) -> None:
    harness, backend = tmux_harness
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "notes.txt").write_text("in sub\n")
    (workspace / "notes.txt").write_text("in workspace\n")
    result = await harness.call("run_shell", {"command": "cd sub"})
    assert not result.is_error
    done = [e for e in harness.events if isinstance(e, ToolCallCompleted)]
    assert done[-1].cwd == str(sub)  # the event the tool block shows
    read = await harness.call("read_file", {"path": "notes.txt"})
    assert "in sub" in read.text and "in workspace" not in read.text
    started = [e for e in harness.events if isinstance(e, ToolCallStarted)]
    assert (started[-1].cwd, started[-1].cwd_elsewhere) == (str(sub), True)
    write = await harness.call("write_file", {"path": "made.txt", "content": "x\n"})
    assert not write.is_error
    assert (sub / "made.txt").exists() and not (workspace / "made.txt").exists()
    # The approval says where; a person's cd while it waits must not move the command.
    harness.policy.approval_mode = ApprovalMode.ASK
    asked: list[ApprovalRequested] = []
    pane = backend.default_pane
    assert pane
    person_pane: str = pane

    class MovesThenApproves:
        async def __call__(self, request: ApprovalRequested) -> ApprovalAnswer:
            asked.append(request)
            await tmux(socket_name, "send-keys", "-t", person_pane, "-l", "cd /")
            await tmux(socket_name, "send-keys", "-t", person_pane, "Enter")

            async def moved() -> bool:
                return backend.shell_cwd() == "/"

            await until(moved, "the person's cd", DEADLINE)
            return ApprovalAnswer(decision=ApprovalDecision.ALLOW_ONCE)

    harness.policy.approver = MovesThenApproves()
    refused = await harness.call("run_shell", {"command": "rm -rf build", "why": "clean"})
    assert asked and (asked[0].cwd, asked[0].cwd_elsewhere) == (str(sub), True)
    assert refused.is_error and "moved from" in refused.text


async def test_a_write_is_judged_where_the_shell_stands(
    tmux_harness: tuple[Harness, TmuxBackend], tmp_path: Path, socket_name: str
) -> None:
    harness, backend = tmux_harness
    harness.policy.approval_mode = ApprovalMode.AUTO_EDIT  # edits inside the workspace run
    outside = tmp_path / "outside"
    outside.mkdir()
    pane = backend.default_pane
    assert pane
    await take_over_typing(backend, socket_name, pane, f"cd {outside}", enter=True)

    async def there() -> bool:
        return backend.shell_cwd() == str(outside)

    await until(there, "the person's cd", DEADLINE)
    asked: list[ApprovalRequested] = []

    async def deny(request: ApprovalRequested) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer(decision=ApprovalDecision.DENY)

    harness.policy.approver = deny
    result = await harness.call("write_file", {"path": "x.txt", "content": "x\n"})
    assert result.is_error and not (outside / "x.txt").exists()
    assert asked and asked[0].cwd == str(outside) and asked[0].cwd_elsewhere


# -- the machinery is invisible ------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
async def test_the_screen_shows_no_set_up_and_no_marker_lines(
    make_backend: MakeBackend, socket_name: str, tmp_path: Path, shell: str
) -> None:
    # A history of this shell alone (root's ~/.bash_history holds older runs).
    backend = make_backend(shell=shell, env={**clean_env(), "HISTFILE": str(tmp_path / "h")})
    await backend.start()
    pane = backend.default_pane
    assert pane
    await backend.run("echo hi", timeout=DEADLINE)
    await backend.run("echo there", timeout=DEADLINE)

    async def prompt_drawn() -> bool:  # the end marker comes just before the prompt
        return len(await screen(socket_name, pane)) >= 5

    await until(prompt_drawn, "the prompt after `echo there`", DEADLINE)
    lines = await screen(socket_name, pane)
    assert not any("atui" in line.lower() for line in lines), lines
    assert len(lines) == 5 and "" not in lines, lines  # prompt, hi, prompt, there, prompt
    assert lines[1] == "hi" and lines[3] == "there"
    if shell == SHELL:  # zsh keeps the set-up line in its history (it has no way to drop it)
        history = await backend.run("fc -ln 1", timeout=DEADLINE)
        assert history.stdout.split("\n")[:2] == ["\t echo hi", "\t echo there"]


async def test_an_existing_pane_keeps_its_screen_without_the_set_up_line(
    make_backend: MakeBackend, socket_name: str
) -> None:
    first = make_backend()
    await first.run("echo before", timeout=DEADLINE)
    pane = first.default_pane
    assert pane
    await first.close()
    second = make_backend()  # a new start re-attaches the same session and pane
    await second.start()
    assert second.default_pane == pane
    result = await second.run("echo after", timeout=DEADLINE)
    assert result.stdout == "after\n"
    lines = await screen(socket_name, pane)
    assert "before" in lines and "after" in lines
    assert not any("atui" in line.lower() for line in lines), lines


# -- shown where the person looks ----------------------------------------------------------------


async def test_the_block_and_the_approval_show_where_it_runs(
    socket_name: str, workspace: Path
) -> None:
    from tests.scripted_server import ScriptedServer
    from tests.test_ui_app import app_for, approval_ready, make_session, send, shell_step
    from tests.test_ui_app import until as ui_until
    from tui.ui.approval.modal import ApprovalScreen

    weird = workspace / "sub\nfake line"
    weird.mkdir()
    backend = make_backend_for_app(socket_name, workspace)
    with ScriptedServer() as server:
        server.add(
            shell_step("cd 'sub\nfake line'"),
            shell_step("touch made.txt", call_id="call_2"),
            {"text": "Done."},
        )
        app = app_for(make_session(workspace, server, backend=backend))
        try:
            async with app.run_test(size=(160, 40)) as pilot:
                await send(pilot, app, "go")
                # `cd` is read-only: it runs at once; the next call asks, from the new place.
                second = await approval_ready(pilot, app)
                assert isinstance(second, ApprovalScreen)
                assert second.request.tool_call_id == "call_2"
                assert (second.request.cwd, second.request.cwd_elsewhere) == (str(weird), True)
                first_line = second._header().plain.split("\n")[0]
                assert f"in {printable(str(weird))} (not the workspace)" in first_line
                done = app.tools.state("call_1")
                assert done is not None and done.cwd_after == str(weird)
                await pilot.press("y")
                await ui_until(
                    pilot, lambda: (s := app.tools.state("call_2")) and s.finished, "the command"
                )
                block = app.tools.blocks["call_2"]
                assert f"in {printable(str(weird))}" in block._title()
                assert (weird / "made.txt").exists()
        finally:
            await backend.close()


def make_backend_for_app(socket_name: str, workspace: Path) -> TmuxBackend:
    from tui.exec.local import LocalBackend

    return TmuxBackend(
        LocalBackend(default_cwd=str(workspace)),
        socket_name=socket_name,
        shell=SHELL,
        config="/dev/null",
        default_cwd=str(workspace),
        env=clean_env(),
    )


@pytest.mark.parametrize("split", range(1, 60, 7))
def test_the_prompt_watch_follows_markers_split_across_reads(split: int) -> None:
    from tui.exec.tmux.panes import PromptWatch

    nonce = "0123abcd"
    watch = PromptWatch(nonce)
    go = f"\x1b]6973;__ATUI_{nonce}_4_go__\x07".encode()
    end = f"\x1b]6973;__ATUI_{nonce}_4_0_p{b'/srv'.hex()}__\x07".encode()
    ps2 = f"\x1b]6973;__ATUI_{nonce}_0_ps2__\x07".encode()
    stream = b"echo x\r\n" + go + b"x\r\n" + end + b"$ for i in 1; do\r\n" + ps2 + b"> "
    watch.feed(stream[:split])
    watch.feed(stream[split:])
    assert watch.state == "continuation" and watch.cwd == "/srv" and watch.last_id == 4
    other = PromptWatch("ffffffff")
    other.feed(stream)  # another pane's nonce: nothing it says counts here
    assert other.state == "prompt" and other.cwd is None

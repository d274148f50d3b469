"""Buddy's tmux tool contracts, through the real registry and policy on a private tmux server.

Selectors for the agent's own sessions and panes (and nobody else's), every duration form,
``wait=true`` without a hidden ceiling, text-then-keys-then-Enter, named panes, the capture
flags, and the person's own pane only when they allow it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import tui.tools.builtin.shell.tools as shell_tool
from tests.conftest import Harness, make_harness
from tests.test_policy import ScriptedApprover
from tests.test_tmux_tools import pane_of, tmux_backend
from tests.tmux_helpers import OutputWatch, kill_server, needs_tmux, new_socket_name, tmux
from tui.events import ApprovalAnswer
from tui.exec.tmux.backend import TmuxBackend
from tui.security.permissions import ApprovalMode

pytestmark = needs_tmux

DEADLINE = 10.0


@pytest.fixture
def socket_name() -> Iterator[str]:
    name = new_socket_name()
    try:
        yield name
    finally:
        kill_server(name)


@pytest.fixture
async def tmux_harness(socket_name: str, workspace: Path) -> AsyncIterator[Harness]:
    backend = tmux_backend(socket_name, workspace)
    harness = make_harness(workspace, backend=backend)
    await backend.start()
    yield harness
    await backend.close()


def backend_of(harness: Harness) -> TmuxBackend:
    assert isinstance(harness.backend, TmuxBackend)
    return harness.backend


# -- run_shell ---------------------------------------------------------------------------------


async def test_wait_true_has_no_hidden_ceiling(
    tmux_harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The old default ceiling, shrunk so the test can outlast it: wait=true must not use it.
    monkeypatch.setattr(shell_tool, "DEFAULT_TIMEOUT", 0.2)
    result = await tmux_harness.call("run_shell", {"command": "sleep 0.8; echo done-late"})
    assert not result.is_error, result.text
    assert result.text.startswith("exit code: 0") and "done-late" in result.text
    bounded = await tmux_harness.call("run_shell", {"command": "sleep 30", "timeout": 0.3})
    assert bounded.is_error and "timed out after 0.3 s" in bounded.text


async def test_wait_takes_milliseconds(tmux_harness: Harness) -> None:
    result = await tmux_harness.call(
        "run_shell", {"command": "echo begun; sleep 30", "wait": "300ms"}
    )
    assert result.is_error, result.text
    assert "timed out waiting for command completion after 300ms" in result.text, result.text
    await tmux_harness.call("tmux_send_keys", {"keys": ["C-c"]})


async def test_run_shell_selects_our_sessions_and_named_panes(
    tmux_harness: Harness, socket_name: str
) -> None:
    made = await tmux_harness.call("tmux_create_session", {"name": "work", "pane": "Alpha"})
    assert not made.is_error and made.details["pane"] == "alpha"
    alpha = made.details["pane_id"]
    split = await tmux_harness.call(
        "tmux_create_pane", {"session": "work", "name": "Beta Worker", "why": "a second shell"}
    )
    assert not split.is_error and split.details["name"] == "beta-worker"
    beta = split.details["pane_id"]
    by_name = await tmux_harness.call(
        "run_shell", {"command": "echo $TMUX_PANE", "session": "work", "pane": "beta-worker"}
    )
    assert f"\n{beta}" in by_name.text, by_name.text
    by_session = await tmux_harness.call(
        "run_shell", {"command": "echo $TMUX_PANE", "session": "atui-work", "pane": "alpha"}
    )
    assert f"\n{alpha}" in by_session.text
    title = await tmux(socket_name, "display-message", "-p", "-t", beta, "#{pane_title}")
    assert title.strip() == "beta-worker"
    twice = await tmux_harness.call("tmux_create_pane", {"session": "work", "name": "beta worker"})
    assert twice.is_error and "already has a pane named" in twice.text


async def test_selectors_never_reach_a_foreign_session(
    tmux_harness: Harness, socket_name: str, workspace: Path
) -> None:
    await tmux_harness.call("run_shell", {"command": "true"})
    # A person's session on the same socket, named like ours and with a pane named like ours.
    await tmux(socket_name, "new-session", "-d", "-s", "atui-mine", "cat")
    foreign = await tmux(socket_name, "list-panes", "-t", "=atui-mine:", "-F", "#{pane_id}")
    foreign = foreign.strip()
    await tmux(socket_name, "set-option", "-p", "-t", foreign, "@agent_tui_pane_name", "own")
    marker = workspace / "typed-there"
    for selector in ({"session": "mine"}, {"session": "mine", "pane": "own"},
                     {"pane": foreign}, {"session": "mine", "pane": "0"}):  # fmt: skip
        result = await tmux_harness.call("run_shell", {"command": f"touch {marker}", **selector})
        assert result.is_error and "NotFound" in result.text, (selector, result.text)
        keys = await tmux_harness.call("tmux_send_keys", {"literal_text": "x", **selector})
        assert keys.is_error and "NotFound" in keys.text, (selector, keys.text)
    screen = await tmux(socket_name, "capture-pane", "-p", "-t", foreign)
    assert not marker.exists() and "x" not in screen


# -- tmux_send_keys ------------------------------------------------------------------------------


async def test_send_keys_types_text_then_keys_then_enter_in_the_agent_pane(
    tmux_harness: Harness,
) -> None:
    await tmux_harness.call("run_shell", {"command": "true"})
    backend = backend_of(tmux_harness)
    pane = pane_of(tmux_harness)
    seen = OutputWatch(b"aXb")
    remove = backend.add_output_listener(pane, seen)
    started = time.monotonic()
    result = await tmux_harness.call(
        "tmux_send_keys",
        {"literal_text": "echo ab", "keys": ["Left", "X"], "enter": True, "delay": "400ms",
         "screen_after": 0, "why": "order check", "risk": "low", "mutation": False,
         "privesc": False},
    )  # fmt: skip
    assert not result.is_error, result.text
    assert f"sent to pane {pane}: text 'echo ab'; keys Left X; Enter" in result.text
    async with asyncio.timeout(DEADLINE):
        await seen.wait()
    remove()
    assert time.monotonic() - started >= 0.4  # the delay came before the keys


async def test_keys_that_spell_a_command_are_judged_like_run_shell(
    socket_name: str, workspace: Path
) -> None:
    backend = tmux_backend(socket_name, workspace)
    approver = ScriptedApprover(ApprovalAnswer.deny(), ApprovalAnswer.deny())
    harness = make_harness(workspace, mode=ApprovalMode.ASK, backend=backend, approver=approver)
    try:
        await backend.start()
        (workspace / "keep").write_text("x")
        spelled = ["r", "m", "Space", "k", "e", "e", "p", "Enter"]
        refused = await harness.call("tmux_send_keys", {"keys": spelled})
        assert refused.is_error and "Command execution denied by user." in refused.text
        assert approver.requests and approver.requests[0].command == "rm keep"
        unsent = await harness.call("tmux_send_keys", {"literal_text": "rm keep"})
        assert unsent.is_error and approver.requests[1].command == "rm keep"
        assert (workspace / "keep").exists()
    finally:
        await backend.close()


# -- tmux_capture_pane ---------------------------------------------------------------------------


async def test_capture_history_start_trailing_spaces_and_escapes(tmux_harness: Harness) -> None:
    await tmux_harness.call("run_shell", {"command": "seq -f 'line-%g' 1 400"})
    visible = await tmux_harness.call("tmux_capture_pane", {})
    assert "line-1\n" not in visible.text
    everything = await tmux_harness.call("tmux_capture_pane", {"start": "-", "delay": "10ms"})
    assert not everything.is_error, everything.text
    assert "\nline-1\n" in everything.text and "line-400" in everything.text
    await tmux_harness.call("run_shell", {"command": "printf 'trail   |\\nend   \\n'"})
    plain = await tmux_harness.call("tmux_capture_pane", {})
    kept = await tmux_harness.call("tmux_capture_pane", {"preserve_trailing_spaces": True})
    assert "\nend\n" in plain.text + "\n" and "\nend   " in kept.text
    # Octal in the command line, so only the output (not the echoed command) holds a backslash.
    await tmux_harness.call("run_shell", {"command": "printf 'a\\134b\\n'"})
    escaped = await tmux_harness.call("tmux_capture_pane", {"escape_non_printable": True})
    assert "a\\\\b" in escaped.text
    bad = await tmux_harness.call("tmux_capture_pane", {"start": "-5; kill-server"})
    assert bad.is_error and "InvalidArguments" in bad.text


async def test_the_users_own_pane_only_when_allowed(
    socket_name: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_socket = new_socket_name()
    try:
        shown = f"printf 'users-own-text\\n'; tmux -L {user_socket} wait-for -S shown; cat"
        await tmux(user_socket, "-f", "/dev/null", "new-session", "-d", shown)
        pane = (await tmux(user_socket, "display-message", "-p", "#{pane_id}")).strip()
        path = (await tmux(user_socket, "display-message", "-p", "#{socket_path}")).strip()
        async with asyncio.timeout(DEADLINE):
            await tmux(user_socket, "wait-for", "shown")
        monkeypatch.setenv("TMUX", f"{path},1,0")
        monkeypatch.setenv("TMUX_PANE", pane)
        for allowed in (False, True):
            backend = tmux_backend(socket_name, workspace, allow_user_pane_capture=allowed)
            harness = make_harness(workspace, backend=backend)
            try:
                result = await harness.call("tmux_capture_pane", {"user_pane": True})
            finally:
                await backend.close()
            if allowed:
                assert not result.is_error and "users-own-text" in result.text
                assert f"the user's pane {pane}" in result.text
            else:
                assert result.is_error and "allow_user_pane_capture" in result.text
                assert "users-own-text" not in result.text
    finally:
        kill_server(user_socket)

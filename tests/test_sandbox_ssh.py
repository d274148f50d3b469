"""The sandbox on an SSH host: a real OpenSSH sshd on 127.0.0.1, a non-root login user, that
host's own bubblewrap (unprivileged there: user namespaces), its own secret places."""

from __future__ import annotations

import contextlib
import secrets
import shlex
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.container_image import Container, hostlike_container, podman_images
from tests.sandbox_support import SKIP_REASON, bwrap_works
from tests.sshd import SshServer
from tests.test_ssh_backend import make_backend, sshd
from tests.tmux_helpers import SHELL, needs_tmux
from tui.exec.sandbox import remote as remote_module
from tui.exec.sandbox.remote import RemoteSandbox
from tui.exec.ssh.backend import SSHBackend
from tui.exec.tmux.backend import TmuxBackend
from tui.exec.tmux.server import kill
from tui.security.confinement import OUTSIDE, READ_ONLY, WORKSPACE, WORKSPACE_NET
from tui.security.permissions import ApprovalMode
from tui.security.secrets import SECRET_PATHS

__all__ = ["hostlike_container", "podman_images", "sshd"]  # fixtures used by name

pytestmark = pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON)

CANARY = "REMOTE-CANARY-" + secrets.token_hex(6)


@dataclass
class RemoteMachine:
    probe: SSHBackend
    """Runs outside any sandbox: plants files and looks at the host as its user would."""
    home: str
    workspace: str


@pytest.fixture
async def remote(sshd: SshServer) -> AsyncIterator[RemoteMachine]:
    probe = make_backend(sshd)
    home = (await probe.run('printf %s "$HOME"', confinement=OUTSIDE)).stdout
    workspace = f"{home}/atui-sb-{secrets.token_hex(4)}"
    planted = await probe.run(
        f"mkdir -p {workspace}/.git/hooks ~/.ssh ~/.aws && "
        f"echo {CANARY} > ~/.ssh/id_rsa && echo {CANARY} > ~/.aws/credentials && "
        f"echo '# mine' > ~/.bashrc && echo readme > {workspace}/README.md",
        confinement=OUTSIDE,
    )
    assert planted.exit_code == 0, planted.stderr
    try:
        yield RemoteMachine(probe, home, workspace)
    finally:
        await probe.run(f"rm -rf {shlex.quote(workspace)}", confinement=OUTSIDE)
        await probe.close()


def host_sandbox(backend: SSHBackend, workspace: str, name: str) -> RemoteSandbox:
    return RemoteSandbox(
        workspace=workspace,  # type: ignore[arg-type]
        patterns=SECRET_PATHS,
        host=backend,
        host_name=name,
    )


async def sandboxed(sshd: SshServer, machine: RemoteMachine, mode: ApprovalMode) -> SSHBackend:
    backend = make_backend(sshd, default_cwd=machine.workspace)
    box = host_sandbox(backend, machine.workspace, "testhost")
    said = await box.start()
    assert said is not None and "sandbox on testhost" in said and box.active, said
    box.approval_mode = lambda: mode
    backend.sandbox = box
    return backend


async def test_commands_on_the_host_meet_the_same_walls(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    backend = await sandboxed(sshd, remote, ApprovalMode.AUTO_EDIT)
    try:
        read = await backend.run(
            "cat ~/.ssh/id_rsa ~/.aws/credentials; touch made-ro; echo x >> ~/.bashrc",
            confinement=READ_ONLY,
        )
        assert CANARY not in read.stdout + read.stderr
        assert "Read-only file system" in read.stderr
        wrote = await backend.run(
            "echo ok > made.txt && echo MADE; echo x > .git/hooks/pre-commit; "
            "echo x >> ~/.bashrc; curl -sS -m 3 http://127.0.0.1:1/ || echo NO-NET",
            confinement=WORKSPACE_NET,  # offline there: no proxy reaches the host
        )
        assert "MADE" in wrote.stdout and "NO-NET" in wrote.stdout

        async def outside(command: str) -> str:
            return (await remote.probe.run(command, confinement=OUTSIDE)).stdout

        assert await outside(f"cat {remote.workspace}/made.txt") == "ok\n"
        assert await outside(f"ls -A {remote.workspace}/.git/hooks") == ""
        assert await outside("cat ~/.bashrc") == "# mine\n"
        assert "made-ro" not in await outside(f"ls {remote.workspace}")
        assert backend.sandbox is not None
        facts = backend.sandbox.facts()
        assert facts.active and not facts.network
        assert facts.mode_confinement(ApprovalMode.FULL_AUTO) == WORKSPACE
    finally:
        await backend.close()


async def _box_hiding(sshd: SshServer, remote: RemoteMachine, *secret_places: str) -> SSHBackend:
    """A backend whose sandbox also hides ``secret_places`` (this test's own, not places in the
    host user's shared home, so tests beside it are not touched)."""
    backend = make_backend(sshd, default_cwd=remote.workspace)
    box = RemoteSandbox(
        workspace=remote.workspace,  # type: ignore[arg-type]
        patterns=(*SECRET_PATHS, *secret_places),
        host=backend,
        host_name="testhost",
    )
    said = await box.start()
    assert said is not None and box.active, said
    box.approval_mode = lambda: ApprovalMode.AUTO_EDIT
    backend.sandbox = box
    return backend


async def test_a_hidden_file_gone_since_the_last_look_costs_nothing(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    """The host's places are probed at most every 30 s. A socket or file hidden then and gone
    since (a socket with its folder: bwrap could not cover it) has nothing left to hide: the
    next command runs, while one still there stays covered."""
    gone, kept = f"{remote.workspace}/sockets/door.sock", f"{remote.workspace}/kept.key"
    made = await remote.probe.run(
        f"mkdir -p {remote.workspace}/sockets && echo {CANARY} > {gone} && echo {CANARY} > {kept}",
        confinement=OUTSIDE,
    )
    assert made.exit_code == 0, made.stderr
    backend = await _box_hiding(sshd, remote, gone, kept)
    try:
        await remote.probe.run(f"rm -r {remote.workspace}/sockets", confinement=OUTSIDE)
        # Read-only: the workspace is not writable, so bwrap could not make a cover's mount point.
        ran = await backend.run(f"echo ran; cat {kept}; echo done", confinement=READ_ONLY)
        assert ran.exit_code == 0 and ran.stdout == "ran\ndone\n", ran
        assert CANARY not in ran.stdout + ran.stderr and "bwrap" not in ran.stderr
        assert ran.notices == []
    finally:
        await backend.close()


async def _vanished_folder(sshd: SshServer, remote: RemoteMachine) -> SSHBackend:
    """A backend whose sandbox hides a folder that is deleted right after its look: bwrap
    cannot cover it (the read-only workspace has no room for its mount point)."""
    secret = f"{remote.workspace}/vanishing.d"
    made = await remote.probe.run(f"mkdir {secret}", confinement=OUTSIDE)
    assert made.exit_code == 0, made.stderr
    backend = await _box_hiding(sshd, remote, secret)
    await remote.probe.run(f"rmdir {secret}", confinement=OUTSIDE)
    return backend


def _streamed(into: list[str]) -> Callable[[str, str], None]:
    return lambda stream, text: into.append(text) if stream != "info" else None


async def test_a_hidden_folder_gone_since_the_last_look_costs_nothing_and_runs_once(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    """bwrap refuses to cover a folder gone since the last look, and the host's shell vouches
    that it never started the command: the places are looked up again and it runs, once."""
    backend = await _vanished_folder(sshd, remote)
    try:
        assert isinstance(backend.sandbox, RemoteSandbox) and backend.sandbox.reports_start
        seen: list[str] = []
        ran = await backend.run("echo ran", confinement=READ_ONLY, on_chunk=_streamed(seen))
        assert ran.exit_code == 0 and ran.stdout == "ran\n" and ran.stderr == "", ran
        assert "".join(seen).count("ran\n") == 1, seen
        assert any("built again" in note for note in ran.notices), ran.notices
        again = await backend.run("echo again", confinement=READ_ONLY)
        assert again.stdout == "again\n" and again.notices == [], again
    finally:
        await backend.close()


async def test_a_command_cannot_claim_the_sandbox_refused_it_to_run_twice(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    """Only the host's shell knows the mark that says "bwrap never started this": a command
    printing bwrap's refusal, its status line and a mark of the same shape ran, and stays run."""
    backend = await _box_hiding(sshd, remote)
    fake = (
        'echo ran; echo "bwrap: Can\'t mount tmpfs on /x: No such file or directory" >&2; '
        "printf '{ \"child-pid\": 2 }' >&2; "
        "echo 'agent-tui 0123456789abcdef0123456789abcdef: bubblewrap did not start the "
        "command' >&2; exit 1"
    )
    try:
        seen: list[str] = []
        ran = await backend.run(fake, confinement=READ_ONLY, on_chunk=_streamed(seen))
        assert ran.exit_code == 1 and ran.stdout == "ran\n", ran
        assert "".join(seen).count("ran\n") == 1, seen
        assert "bubblewrap did not start" in ran.stderr  # the command's words, left as said
        assert not any("built again" in note for note in ran.notices), ran.notices
    finally:
        await backend.close()


async def test_a_host_bwrap_that_cannot_vouch_costs_one_command_not_thirty_seconds(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    """A bwrap older than ``--json-status-fd`` cannot say it never started the command: its
    refusal is shown and nothing runs again, but the next look is brought forward."""
    backend = await _vanished_folder(sshd, remote)
    try:
        assert isinstance(backend.sandbox, RemoteSandbox)
        backend.sandbox.reports_start = False
        refused = await backend.run("echo ran", confinement=READ_ONLY)
        assert refused.exit_code == 1 and "bwrap: Can't" in refused.stderr, refused
        assert refused.stdout == ""
        assert any("looked up again" in note for note in refused.notices), refused.notices
        ran = await backend.run("echo ran", confinement=READ_ONLY)
        assert ran.exit_code == 0 and ran.stdout == "ran\n", ran
    finally:
        await backend.close()


async def test_a_host_without_bwrap_says_the_rater_decides(
    sshd: SshServer, remote: RemoteMachine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe looks for bwrap where none is (the host's own bwrap left out of its list)."""
    monkeypatch.setattr(remote_module, "TRUSTED_DIRS", ("/nonexistent-atui",))
    backend = make_backend(sshd, default_cwd=remote.workspace)
    box = host_sandbox(backend, remote.workspace, "bare")
    try:
        said = await box.start()
        assert said == (
            "no sandbox on bare: bubblewrap (bwrap) is not installed there. "
            "The rater alone decides there"
        )
        assert not box.active and box.facts().absent.startswith("no sandbox")
    finally:
        await backend.close()


@contextlib.asynccontextmanager
async def started_panes(
    host: SSHBackend, remote: RemoteMachine, shell: str = SHELL
) -> AsyncIterator[TmuxBackend]:
    """The host's tmux panes in ask mode, each shell started inside ``host``'s sandbox; the
    panes and the host closed afterwards."""
    if isinstance(host.sandbox, RemoteSandbox):
        host.sandbox.approval_mode = lambda: ApprovalMode.ASK
    backend = TmuxBackend(
        host,
        socket_name=f"atui-sb-{secrets.token_hex(3)}",
        shell=shell,
        owner="atui-test",
        config="/dev/null",
        default_cwd=remote.workspace,
    )
    try:
        await backend.start()
        yield backend
    finally:
        await backend.close()
        await kill(backend.place, [], everything=True)  # a named socket's server outlives close
        await host.close()


@needs_tmux
async def test_the_remote_panes_shell_starts_inside_the_hosts_sandbox(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    host = await sandboxed(sshd, remote, ApprovalMode.ASK)
    async with started_panes(host, remote) as backend:
        assert backend.sandbox_label() == "sandbox: read-only, no network"
        first = await backend.run("touch pane-made; cat ~/.ssh/id_rsa; echo done", timeout=30)
        assert "Read-only file system" in first.stdout and CANARY not in first.stdout
        approved = await backend.run(
            "touch pane-made && echo made", timeout=30, confinement=WORKSPACE
        )
        assert "made" in approved.stdout
        assert any("approved-ws" in note for note in approved.notices)


async def test_a_remote_pane_starts_though_a_hidden_file_went_since_the_last_look(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    """A pane's shell is started inside the walls too: a socket hidden at the last look and
    gone with its folder since has nothing to hide, and the pane still starts, read-only."""
    gone, kept = f"{remote.workspace}/sockets/door.sock", f"{remote.workspace}/kept.key"
    made = await remote.probe.run(
        f"mkdir -p {remote.workspace}/sockets && echo {CANARY} > {gone} && echo {CANARY} > {kept}",
        confinement=OUTSIDE,
    )
    assert made.exit_code == 0, made.stderr
    host = await _box_hiding(sshd, remote, gone, kept)
    await remote.probe.run(f"rm -r {remote.workspace}/sockets", confinement=OUTSIDE)
    async with started_panes(host, remote) as backend:
        ran = await backend.run(f"cat {kept}; touch made; echo done", timeout=30)
        assert "done" in ran.stdout and CANARY not in ran.stdout, ran
        assert "Read-only file system" in ran.stdout


async def test_a_remote_pane_starts_though_a_hidden_folder_went_since_the_last_look(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    """A folder gone since the last look makes bwrap refuse to start the pane's shell; the
    host's shell says so with its start's nonce and holds the pane, and the pane's shell is
    started again with the places looked up afresh, inside the same walls."""
    host = await _vanished_folder(sshd, remote)
    assert isinstance(host.sandbox, RemoteSandbox) and host.sandbox.reports_start
    async with started_panes(host, remote) as backend:
        ran = await backend.run("touch made; echo done", timeout=30)
        assert "done" in ran.stdout and "Read-only file system" in ran.stdout, ran


async def test_a_remote_pane_whose_shell_prints_a_refusal_is_not_started_again(
    sshd: SshServer, remote: RemoteMachine
) -> None:
    """A mark of the right shape from the shell itself (its nonce unknown to it) is words,
    not a refusal: the pane is set up as it is, once."""
    host = await _box_hiding(sshd, remote)
    fake = "agent-tui 0123456789abcdef0123456789abcdef: bubblewrap did not start the command"
    shell = f"sh -c {shlex.quote(f'echo {shlex.quote(fake)}; exec {SHELL}')}"
    async with started_panes(host, remote, shell) as backend:
        ran = await backend.run("echo done", timeout=30)
        assert "done" in ran.stdout, ran
        assert not any("again" in note for note in ran.notices), ran.notices


# -- a container target -------------------------------------------------------------------


async def test_a_container_says_plainly_what_holds(hostlike_container: Container) -> None:
    """The host-like container has /usr from this machine, bwrap included; whether bwrap can
    make namespaces inside depends on the engine, and either answer is said plainly."""
    from tui.config import Settings
    from tui.targets import TargetChoice, open_target

    target = await open_target(
        TargetChoice(container=hostlike_container.name, tmux=False),
        Settings(),
        Path("/tmp"),
        interactive=False,
    )
    try:
        said = " ".join(target.notices)
        if target.commands is not None:
            assert "sandbox on container" in said and "container's own boundary holds" in said
            result = await target.backend.run("touch /root/atui-inside; echo $?", timeout=30)
            assert "Read-only file system" in result.stderr
        else:
            assert target.unsandboxed is not None
            assert "no sandbox inside container" in said
            assert "the container's own boundary holds" in said
    finally:
        await target.backend.close()
        if target.sandbox is not None:
            await target.sandbox.close()

"""``agent-tui --ssh/--container/--tmux tool …`` runs on that target, or refuses saying why,
and ``tools`` lists that target's tools; the rater judges the same command the same way there
as here.

The installed command in a subprocess against a real sshd on 127.0.0.1, a real podman
container and a real tmux server on a private socket: what the tool printed shows where it ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import with_metadata
from tests.container_image import Container
from tests.sshd import SshServer, free_port
from tests.test_headless_cli import Cli, cli
from tests.test_targets_cli import ssh_env, sshd
from tui.security.risk.assess import assess_command
from tui.security.risk.context import RiskContext
from tui.security.settings import SecuritySettings

__all__ = ["cli", "sshd"]  # fixtures used here by name


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    name = f"atui-tool-{uuid.uuid4().hex[:8]}"
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, check=False)


def listed(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def test_tmux_tools_are_offered_and_run_on_a_tmux_target(cli: Cli, tmux_socket: str) -> None:
    cli.env["AGENT_TUI_TMUX__SOCKET_NAME"] = tmux_socket
    assert "tmux_capture_pane" not in listed(cli.run("tools"))
    assert "tmux_capture_pane" in listed(cli.run("--tmux", "tools"))

    done = cli.run(
        "--tmux",
        "tool",
        "run_shell",
        json.dumps(with_metadata("run_shell", {"command": "echo in-$TMUX_PANE"})),
    )
    assert done.returncode == 0, done.stderr
    assert "in-%" in done.stdout  # typed into a tmux pane
    captured = cli.run("--tmux", "tool", "tmux_capture_pane", "{}")
    assert captured.returncode == 0, captured.stderr
    assert "NotFound" not in captured.stderr


def test_ssh_tool_runs_on_the_host(cli: Cli, sshd: SshServer) -> None:
    ssh_env(cli, sshd)
    target = f"{sshd.user}@127.0.0.1:{sshd.port}"
    command = json.dumps(
        with_metadata("run_shell", {"command": "echo via=$SSH_CONNECTION; id -un"})
    )
    done = cli.run("--ssh", target, "tool", "run_shell", command)
    # Read-only by default: `echo $SSH_CONNECTION` is low there as here (its shell starts at
    # the remote home, where a variable once read as "any file here": a secret read).
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("via=") and f"\n{sshd.user}\n" in done.stdout  # their user
    assert "tools on ssh:" in cli.run("--ssh", target, "tools").stderr


def test_an_unreachable_target_refuses_saying_why(cli: Cli) -> None:
    marker = cli.workspace / "ran-here"
    command = json.dumps(with_metadata("run_shell", {"command": f"touch {marker}"}))
    done = cli.run("--ssh", f"nobody@127.0.0.1:{free_port()}", "tool", "run_shell", command)
    assert done.returncode == 1
    assert "cannot run run_shell there" in done.stderr and "cannot reach" in done.stderr
    assert not marker.exists()  # never run here instead


def test_container_tool_runs_inside(cli: Cli, busybox_container: Container) -> None:
    done = cli.run(
        "--container",
        busybox_container.name,
        "--workspace",
        "/tmp",
        "tool",
        "run_shell",
        json.dumps(with_metadata("run_shell", {"command": "ls /bin/busybox"})),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "/bin/busybox" in done.stdout
    assert not os.path.exists("/bin/busybox") or "busybox" in done.stdout


@pytest.mark.parametrize(
    "command",
    ["echo $SSH_CONNECTION", 'echo "${SSH_CLIENT}"', "printf '%s\\n' $USER", "echo $TERM"],
)
def test_a_variable_is_judged_the_same_here_and_there(command: str) -> None:
    """A shell over SSH starts at home, this machine's in the workspace: a lone variable must
    not read as "any file here", a secret read only where "here" is a home."""
    secrets = tuple(SecuritySettings().forbidden_paths)
    here = RiskContext(cwd="/srv/project", home="/root", local=True, secrets=secrets)
    home_here = RiskContext(cwd="/root", home="/root", local=True, secrets=secrets)
    there = RiskContext(cwd="/home/deploy", home="/home/deploy", local=False, secrets=secrets)
    verdicts = {assess_command(command, ctx).risk for ctx in (here, home_here, there)}
    assert verdicts == {"low"}
    # A variable inside a path still stands for any name there.
    assert assess_command("cat /proc/$PPID/environ", there).risk == "high"
    assert assess_command("cat $HOME/.ssh/id_rsa", there).risk == "high"


def test_tool_output_to_a_terminal_has_its_escapes_spelled_out(cli: Cli) -> None:
    """A command's output printed to a person's terminal cannot set their clipboard or title;
    piped, it stays byte for byte."""
    command = json.dumps(
        with_metadata(
            "run_shell", {"command": "printf 'a\\033]52;c;cm0gLXJm\\007b\\033]0;t\\007c\\n'"}
        )
    )
    master, slave = os.openpty()
    try:
        done = subprocess.run(
            cli.command("tool", "run_shell", command),
            cwd=cli.workspace,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=subprocess.PIPE,
            timeout=30,
            start_new_session=True,
        )
        os.close(slave)
        slave = -1
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert done.returncode == 0, done.stderr
    assert b"\x1b" not in shown and b"\x07" not in shown
    assert b"a\\x1b]52;c;cm0gLXJm\\x07b" in shown
    piped = cli.run("tool", "run_shell", command)
    assert "\x1b]52;" in piped.stdout  # not a terminal: the bytes as they are

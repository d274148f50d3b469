"""``--ssh``, ``--container`` and ``--tmux`` end to end: the real CLI, the real targets.

Each test runs ``agent-tui -p`` in a subprocess against the scripted model server and checks,
in the tool result the model received back, that the command really ran where the flag said.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import with_metadata
from tests.container_image import Container
from tests.sshd import SshdUnavailable, SshServer, free_port
from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server
from tests.tmux_helpers import kill_server
from tui.events import ToolCallStarted, parse_event

__all__ = ["cli", "model_server"]  # fixtures used here by name


def shell_step(command: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": "call_1",
                "name": "run_shell",
                "arguments": json.dumps(with_metadata("run_shell", {"command": command})),
            }
        ]
    }


def tool_results(server: ServerProcess) -> list[str]:
    """The text of every tool result the model was sent (OpenAI wire format); an object
    result (run_shell's exit_code/stdout/stderr) as its JSON."""
    found = []
    for request in server.requests():
        for message in request.body.get("messages", []):
            if message.get("role") == "tool":
                result = json.loads(message["content"])["result"]
                if isinstance(result, dict):  # stdout, stderr and notices, as a person reads them
                    words = [result["stdout"], result["stderr"], *result.get("notices", [])]
                    result = "\n".join(word for word in words if word)
                found.append(result)
    return found


def started_actors(stdout: str) -> list[str]:
    events = [parse_event(line) for line in stdout.splitlines() if line.strip()]
    return [e.actor for e in events if isinstance(e, ToolCallStarted)]


@pytest.fixture(scope="module")
def sshd() -> Iterator[SshServer]:
    try:
        server = SshServer.start()
    except SshdUnavailable as exc:
        pytest.skip(f"no test sshd: {exc}")
    yield server
    server.cleanup()


def ssh_env(cli: Cli, sshd: SshServer) -> None:
    cli.env["AGENT_TUI_SSH__IDENTITY_FILE"] = str(sshd.client_key)
    cli.env["AGENT_TUI_SSH__KNOWN_HOSTS"] = str(sshd.known_hosts)


def test_ssh_runs_on_the_host_in_its_home(cli: Cli, model_server: Any, sshd: SshServer) -> None:
    ssh_env(cli, sshd)
    server = model_server([shell_step("id -un; pwd"), {"text": "done"}])
    done = cli.run(
        *headless(server, "who am I there?", "--approval-mode", "full-auto"),
        "--ssh",
        f"{sshd.user}@127.0.0.1:{sshd.port}",
        "--output-format",
        "agent-tui-json",
    )
    assert done.returncode == 0, done.stderr
    (result,) = tool_results(server)
    assert f"{sshd.user}\n" in result
    assert f"/home/{sshd.user}" in result or f"{sshd.user}" in result.split("\n")[-1]
    assert started_actors(done.stdout) == [f"ssh:{sshd.user}@127.0.0.1"]


def test_a_dead_ssh_host_is_one_clear_line(cli: Cli, model_server: Any) -> None:
    server = model_server([{"text": "never asked"}])
    done = cli.run(*headless(server, "hi"), "--ssh", f"nobody@127.0.0.1:{free_port()}")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "cannot reach" in done.stderr
    assert server.requests() == []


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    name = f"atui-cli-{uuid.uuid4().hex[:8]}"
    yield name
    kill_server(name)  # and the run's own server beside it, should the run not close it


def test_tmux_runs_the_command_in_a_pane(cli: Cli, model_server: Any, tmux_socket: str) -> None:
    cli.env["AGENT_TUI_TMUX__SOCKET_NAME"] = tmux_socket
    command = 'echo "pane=$TMUX_PANE key=${OPENAI_API_KEY:-unset}"; echo oops >&2'
    server = model_server([shell_step(command), {"text": "ok"}])
    done = cli.run(
        *headless(server, "run it in tmux", "--approval-mode", "full-auto"),
        "--tmux",
        "--output-format",
        "agent-tui-json",
    )
    assert done.returncode == 0, done.stderr
    (result,) = tool_results(server)
    assert "pane=%" in result and "oops" in result
    assert "merged" in result
    # The shared shell was started with the reduced environment, not the CLI's own.
    assert "key=unset" in result
    (actor,) = started_actors(done.stdout)
    assert actor.startswith("local/tmux:%")
    # The run's own session was closed at its end (kept only when asked: [tmux] keep_session).
    pane = result.split("pane=", 1)[1].split()[0]
    assert pane.startswith("%")
    panes = subprocess.run(
        ["tmux", "-L", tmux_socket, "list-panes", "-a", "-F", "#{pane_id}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert pane not in panes.stdout.split()


def test_container_runs_the_command_inside(
    cli: Cli, model_server: Any, busybox_container: Container
) -> None:
    server = model_server([shell_step("cat /etc/hostname; ls /bin/busybox"), {"text": "ok"}])
    done = cli.run(
        *headless(server, "look inside", "--approval-mode", "full-auto"),
        "--container",
        busybox_container.name,
        "--workspace",
        "/tmp",
        "--output-format",
        "agent-tui-json",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (result,) = tool_results(server)
    assert "/bin/busybox" in result
    assert started_actors(done.stdout) == [f"container:{busybox_container.name}"]

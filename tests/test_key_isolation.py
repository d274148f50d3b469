"""The model's API key cannot be read by anything agent-tui starts.

A command is a child of agent-tui (or of the tmux server it started), and a child can read its
parent's ``/proc/<pid>/environ``: the bytes the process was started with, which ``unsetenv``
does not change. So the real ``agent-tui -p`` runs here with a random key in its environment,
against the scripted model server, while a command, a hook and an MCP server look everywhere a
child could look; and the test itself reads ``/proc/<agent pid>/environ`` while the agent is
alive. The one place the key must still reach is the model server's ``Authorization`` header.

The commands read ``/proc`` through a script file as well as directly, so these tests hold even
where the risk rater refuses a command that names ``/proc/*/environ``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_headless_cli import DEADLINE, Cli, ServerProcess, cli, headless, model_server
from tests.test_loop import shell, tools_step
from tests.test_targets_cli import tool_results
from tests.tmux_helpers import instance_sockets, kill_server
from tests.waiting import until_blocking
from tui.agent.hooks import run_hook_command
from tui.agent.providers.factory import ENV_VARS, make_provider
from tui.config.sections.hooks import HookCommand
from tui.security import own_environ
from tui.security.environment import reduced_environment
from tui.security.own_environ import PROVIDER_KEY_VARIABLES, hold_provider_keys
from tui.security.settings import DEFAULT_ENV_ALLOWLIST

__all__ = ["cli", "model_server"]  # fixtures used here by name

DIRECT = "cat /proc/$PPID/environ; tr '\\0' '\\n' < /proc/$PPID/environ; env"
"""What a curious command would type, word for word."""

PEEK = """\
printf '%s' "$PPID" > {out}/ppid
cat /proc/$PPID/environ > {out}/parent-environ
env > {out}/env
: > {out}/ready
read go < {out}/go
tr '\\0' '\\n' < /proc/$PPID/environ
"""
"""Sourced by the command's own shell (so ``$PPID`` is that shell's parent): records what it
sees, then waits on a FIFO so the test can read the agent's ``/proc`` entry meanwhile."""


def new_key() -> str:
    return f"sk-test-{uuid.uuid4().hex}"


@pytest.fixture
def peek(cli: Cli) -> Path:
    """The folder the peek script writes to, with the script and its FIFO in place."""
    out = cli.workspace / "peek"
    out.mkdir()
    os.mkfifo(out / "go")
    (cli.workspace / "peek.sh").write_text(PEEK.format(out=out), encoding="utf-8")
    return out


def allow_direct_reads(cli: Cli) -> None:
    """The person allows the direct reads in their own config: secret reads always ask
    otherwise, and this test is about what such a read finds once it runs.

    The sandbox is off here, by the person's own config: inside it a command has its own PID
    namespace and cannot see the agent's ``/proc`` entry at all (``test_sandbox_corpus``
    holds that). These tests hold the layer below it: the key is wiped from the agent's
    environment block, for the machines where no sandbox can be made.
    """
    config = Path(cli.env["AGENT_TUI_CONFIG_DIR"])
    config.mkdir(exist_ok=True)
    rules = ["run_shell(cat /proc/$PPID/environ)", "run_shell(tr:*)", "run_shell(env)"]
    (config / "config.toml").write_text(
        f'[security]\nallow = {json.dumps(rules)}\n[sandbox]\nmode = "off"\n',
        encoding="utf-8",
    )


def environ_of(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


def run_peeking(
    cli: Cli,
    server: ServerProcess,
    peek: Path,
    *extra: str,
    during: Callable[[], None] = lambda: None,
) -> tuple[bytes, str]:
    """Run the agent while the peek script holds its command open; returns what the test read
    from ``/proc/<agent pid>/environ`` then, and the agent's stderr once it finished.
    ``during`` looks at anything else that lives only while the agent runs."""
    process = cli.start(*headless(server, "look around", "--approval-mode", "full-auto"), *extra)
    try:
        until_blocking(
            lambda: (peek / "ready").exists() or process.poll() is not None, "the peek", DEADLINE
        )
        assert process.poll() is None, process.communicate()[1]
        seen = environ_of(process.pid)
        during()
        with (peek / "go").open("w") as go:
            go.write("go\n")
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()
    assert process.returncode == 0, stderr
    return seen, stderr


def assert_auth_carried(server: ServerProcess, key: str) -> None:
    requests = server.requests()
    assert requests and all(r.headers["authorization"] == f"Bearer {key}" for r in requests)


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "AGENT_TUI_PROVIDER__API_KEY"])
def test_a_command_cannot_read_the_key_from_the_agent(
    variable: str, cli: Cli, model_server: Any, peek: Path
) -> None:
    key = new_key()
    cli.env.pop("OPENAI_API_KEY")
    cli.env[variable] = key
    anthropic_key = cli.env["ANTHROPIC_API_KEY"]
    server = model_server(
        [
            tools_step(shell("call_peek", ". ./peek.sh")),
            tools_step(shell("call_direct", DIRECT)),
            {"text": "done"},
        ]
    )

    allow_direct_reads(cli)
    seen, stderr = run_peeking(cli, server, peek)

    # The test's own look, while the agent was alive: the right process, and no key in it.
    assert b"AGENT_TUI_CONFIG_DIR=" in seen
    assert key.encode() not in seen and anthropic_key.encode() not in seen
    assert int((peek / "ppid").read_text()) > 1
    parent = (peek / "parent-environ").read_bytes()
    assert b"AGENT_TUI_CONFIG_DIR=" in parent  # the command really read the agent's block
    for found in (parent, (peek / "env").read_bytes(), *(r.encode() for r in tool_results(server))):
        assert key.encode() not in found
        assert anthropic_key.encode() not in found
    assert len(set(tool_results(server))) == 2
    assert all("PATH=" in result for result in tool_results(server))  # both commands ran
    assert "warning" not in stderr
    assert_auth_carried(server, key)


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    name = f"atui-key-{uuid.uuid4().hex[:8]}"
    yield name
    kill_server(name)  # and the run's own server beside it


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=True
    ).stdout


def test_the_tmux_server_and_its_panes_never_see_the_key(
    cli: Cli, model_server: Any, peek: Path, tmux_socket: str
) -> None:
    key = new_key()
    cli.env["OPENAI_API_KEY"] = key
    cli.env["AGENT_TUI_TMUX__SOCKET_NAME"] = tmux_socket
    server = model_server(
        [
            tools_step(shell("call_peek", ". ./peek.sh")),
            tools_step(shell("call_direct", DIRECT)),
            {"text": "done"},
        ]
    )

    allow_direct_reads(cli)
    server_side: dict[str, Any] = {}

    def look_at_the_tmux_server() -> None:
        # The run's own session (and with it the server) is gone once the run ends. The run
        # has a server of its own, beside the base socket.
        (own,) = [name for name in instance_sockets(tmux_socket) if name != tmux_socket]
        pid = int(tmux(own, "display-message", "-p", "#{pid}"))
        server_side.update(
            pid=pid,
            environ=environ_of(pid),
            global_env=tmux(own, "show-environment", "-g").encode(),
        )

    seen, _ = run_peeking(cli, server, peek, "--tmux", during=look_at_the_tmux_server)

    assert b"AGENT_TUI_TMUX__SOCKET_NAME=" in seen and key.encode() not in seen
    assert int((peek / "ppid").read_text()) == server_side["pid"]  # the pane shell's parent
    for found in (
        server_side["environ"],
        server_side["global_env"],
        (peek / "parent-environ").read_bytes(),
        (peek / "env").read_bytes(),
        *(r.encode() for r in tool_results(server)),
    ):
        assert b"PATH=" in found
        assert key.encode() not in found
    assert_auth_carried(server, key)


def test_hooks_and_mcp_servers_get_only_their_own_environment(
    cli: Cli, model_server: Any, tmp_path: Path
) -> None:
    key = new_key()
    cli.env["OPENAI_API_KEY"] = key
    out = tmp_path / "dumps"
    out.mkdir()
    config = Path(cli.env["AGENT_TUI_CONFIG_DIR"])
    config.mkdir()
    dump_server = Path(__file__).parent / "mcp_servers" / "env_dump.py"
    hook = f"env > {out}/hook-env; cat /proc/$PPID/environ > {out}/hook-parent-environ"
    (config / "config.toml").write_text(
        f"[[hooks.pre_tool_use]]\ncommand = {json.dumps(hook)}\n\n"
        "[mcp.servers.dump]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(dump_server))}, {json.dumps(str(out))}]\n"
        'env = { SET_BY_CONFIG = "yes" }\n'
        # The layer below the sandbox (see allow_direct_reads); test_sandbox holds them inside.
        '[sandbox]\nmode = "off"\n',
        encoding="utf-8",
    )
    server = model_server([tools_step(shell("call_1", "true")), {"text": "done"}])

    done = cli.run(*headless(server, "go", "--approval-mode", "full-auto"))

    assert done.returncode == 0, done.stderr
    mcp_env = json.loads((out / "mcp-env.json").read_text(encoding="utf-8"))
    assert mcp_env["SET_BY_CONFIG"] == "yes" and "PATH" in mcp_env
    assert "AGENT_TUI_CONFIG_DIR" not in mcp_env  # the reduced environment, not the agent's
    hook_env = (out / "hook-env").read_text(encoding="utf-8")
    assert "PATH=" in hook_env and "AGENT_TUI_CONFIG_DIR" not in hook_env
    for name in ("mcp-parent-environ", "hook-parent-environ"):
        parent = (out / name).read_bytes()
        assert b"AGENT_TUI_CONFIG_DIR=" in parent  # the agent's own block
        assert key.encode() not in parent
    assert key not in json.dumps(mcp_env) and key not in hook_env
    assert_auth_carried(server, key)


# -- the parts, in process ----------------------------------------------------------------------


@pytest.fixture
def fresh_store(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An empty key store for this test alone (holding keys mutates module state)."""
    store: dict[str, str] = {}
    monkeypatch.setattr(own_environ, "_held", store)
    return store


def test_every_provider_key_variable_is_held() -> None:
    assert {key_var for key_var, _ in ENV_VARS.values()} <= set(PROVIDER_KEY_VARIABLES)


def test_without_proc_the_key_still_leaves_the_environment_with_one_warning(
    fresh_store: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = new_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    warning = hold_provider_keys(proc=tmp_path / "no-proc")

    assert warning is not None and "\n" not in warning and key not in warning
    assert "OPENAI_API_KEY" not in os.environ
    assert fresh_store == {"OPENAI_API_KEY": key}
    # Switching provider later still finds the held key; commands still never see it.
    provider = make_provider("openai", "m")
    assert provider._api_key == key  # type: ignore[attr-defined]
    assert "OPENAI_API_KEY" not in reduced_environment(DEFAULT_ENV_ALLOWLIST, [])


def test_a_provider_key_passes_only_when_named_in_passthrough(
    fresh_store: dict[str, str],
) -> None:
    fresh_store["ANTHROPIC_API_KEY"] = "held"
    allowlist = [*DEFAULT_ENV_ALLOWLIST, *PROVIDER_KEY_VARIABLES]
    source = {"OPENAI_API_KEY": "k", "PATH": "/bin"}
    assert reduced_environment(allowlist, [], source) == {"PATH": "/bin"}
    assert reduced_environment([], ["OPENAI_API_KEY"], source) == {"OPENAI_API_KEY": "k"}
    assert reduced_environment([], ["ANTHROPIC_API_KEY"])["ANTHROPIC_API_KEY"] == "held"


async def test_a_hook_with_no_environment_given_gets_the_reduced_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = new_key()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("SOME_TOKEN", "t0ken")
    outcome = await run_hook_command(HookCommand(command="env"), b"{}", cwd=str(tmp_path), env=None)
    assert outcome.exit_code == 0 and "PATH=" in outcome.stdout
    assert key not in outcome.stdout and "t0ken" not in outcome.stdout

"""The real ``agent-tui -p`` in the sandbox: what it says about where commands run, going
outside refused with nobody to ask, and hooks and MCP servers inside the walls too."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox_support import SKIP_REASON, bwrap_works
from tests.test_headless_cli import Cli, cli, headless, model_server
from tests.test_loop import result_text, shell, tools_step

__all__ = ["cli", "model_server"]  # fixtures used here by name

pytestmark = pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON)


def test_each_command_line_says_which_sandbox_it_ran_in(cli: Cli, model_server: Any) -> None:
    server = model_server(
        [
            tools_step(shell("call_ls", "ls")),
            tools_step(shell("call_touch", "touch made.txt && echo made")),
            {"text": "done"},
        ]
    )
    done = cli.run(*headless(server, "go", "--approval-mode", "auto-edit"))
    assert done.returncode == 0, done.stderr
    assert "▶ run_shell [local · sandbox: workspace, no network] ls" in done.stderr
    # auto-edit runs a command that acts only with a yes; with no terminal it was refused.
    assert not (cli.workspace / "made.txt").exists()

    fetch = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9))' || true"
    server = model_server(
        [
            tools_step(shell("call_touch", "touch made.txt")),
            tools_step(shell("call_fetch", fetch)),
            {"text": "ok"},
        ]
    )
    done = cli.run(*headless(server, "go", "--approval-mode", "full-auto"))
    assert done.returncode == 0, done.stderr
    # Full-auto gives the network through the host policy to what may use it, and none to a
    # command that cannot: ``touch`` opens no connection (``tui.security.offline``).
    assert "▶ run_shell [local · sandbox: workspace, no network] touch made.txt" in done.stderr
    lines = [line for line in done.stderr.splitlines() if "python3" in line]
    assert lines and "[local · sandbox: workspace, network through the host policy]" in lines[0]
    assert (cli.workspace / "made.txt").exists()


def test_going_outside_is_refused_headless_without_a_terminal(
    cli: Cli, model_server: Any, tmp_path: Path
) -> None:
    outside = tmp_path / "outside-proof"
    server = model_server(
        [
            tools_step(
                shell(
                    "call_out",
                    f"touch {outside}",
                    outside_sandbox=True,
                    why="needs to write outside",
                )
            ),
            {"text": "could not"},
        ]
    )
    done = cli.run(*headless(server, "go", "--approval-mode", "full-auto"))
    assert done.returncode == 0, done.stderr
    assert not outside.exists()
    refusal = result_text(server.requests()[1], "call_out")
    assert refusal.startswith("Error (PermissionDenied)")
    assert "outside the sandbox needs a person's yes" in refusal


def test_hooks_and_mcp_servers_run_inside_the_workspace_walls(cli: Cli, model_server: Any) -> None:
    out = cli.workspace / "dumps"
    out.mkdir()
    config = Path(cli.env["AGENT_TUI_CONFIG_DIR"])
    config.mkdir()
    (config / "config.toml").write_text("[security]\n", encoding="utf-8")
    dump_server = Path(__file__).parent / "mcp_servers" / "env_dump.py"
    home_probe = Path(cli.env.get("HOME", "/root")) / f".atui-hook-{out.stat().st_ino}"
    hook = (
        f"env > {out}/hook-env; cat /proc/$PPID/environ > {out}/hook-parent-environ; "
        f"cat {config}/config.toml > {out}/hook-config 2>&1; touch {home_probe}"
    )
    (config / "config.toml").write_text(
        f"[[hooks.pre_tool_use]]\ncommand = {json.dumps(hook)}\n\n"
        "[mcp.servers.dump]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(dump_server))}, {json.dumps(str(out))}]\n",
        encoding="utf-8",
    )
    server = model_server([tools_step(shell("call_1", "true")), {"text": "done"}])

    done = cli.run(*headless(server, "go", "--approval-mode", "full-auto"))

    assert done.returncode == 0, done.stderr
    assert (out / "hook-env").exists() and (out / "mcp-env.json").exists()  # both ran
    for name in ("mcp-parent-environ", "hook-parent-environ"):
        parent = (out / name).read_bytes()
        assert b"AGENT_TUI_CONFIG_DIR=" not in parent  # its own PID namespace: not the agent
    assert "[hooks" not in (out / "hook-config").read_text()  # agent-tui's config is hidden
    assert not home_probe.exists()

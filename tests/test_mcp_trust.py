"""A project's ``.mcp.json`` reads nothing of the person's environment until the workspace is
trusted, and no MCP log ever holds a model provider's key.

Through ``build_session`` and real stdio server processes: untrusted, the listed servers keep
``${OPENAI_API_KEY}`` as written; trusted, the server gets the key (the person said so), but
the log file — our header quoting its arguments and the server's own stderr — has it replaced.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_extensions import DEADLINE, make_session
from tui.locations import data_dir
from tui.session import trust_workspace
from tui.tools.adapters.mcp.server_log import REDACTED

KEY = "sk-provider-key-that-must-stay-home-0123456789"
ECHO = str(Path(__file__).parent / "mcp_servers" / "stderr_echo.py")


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def write_mcp_json(workspace: Path) -> None:
    server = {
        "command": sys.executable,
        "args": [ECHO, "--api-key", "${OPENAI_API_KEY}"],
        "env": {"TOKEN": "${OPENAI_API_KEY}"},
        "startup_timeout": 10,
    }
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"echo": server}}))


async def test_untrusted_servers_keep_their_variables_unread(
    workspace: Path, model: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_mcp_json(workspace)
    session, _ = make_session(workspace, model)
    try:
        assert session._extensions is not None and session._extensions.mcp is not None
        held = session._extensions.mcp._untrusted["echo"]
        assert held.args[-1] == "${OPENAI_API_KEY}" and held.env == {"TOKEN": "${OPENAI_API_KEY}"}
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        assert not (data_dir() / "mcp-logs" / "echo.log").exists()  # never started
    finally:
        await session.aclose()
    # The trust screen shows the server as the file writes it: command, arguments, env.
    (change,) = [c for c in session._loaded.trust.held if c.key == ".mcp.json servers.echo"]
    assert "  arg: ${OPENAI_API_KEY}" in change.details
    assert "env: TOKEN=${OPENAI_API_KEY}" in change.details


async def test_a_trusted_servers_log_never_holds_the_provider_key(
    workspace: Path, model: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_mcp_json(workspace)
    session, _ = make_session(workspace, model)
    await session.aclose()
    trust_workspace(session._loaded)
    session, _ = make_session(workspace, model)
    try:
        await asyncio.wait_for(session.start_extensions(), DEADLINE)
        assert session._extensions is not None and session._extensions.mcp is not None
        tail = await session._extensions.mcp.stderr_tail("echo")
    finally:
        await session.aclose()
    log = (data_dir() / "mcp-logs" / "echo.log").read_text()
    assert KEY not in log
    assert f"--api-key {REDACTED}" in log  # our header, quoting its arguments
    assert f"TOKEN={REDACTED}" in log  # the server's own stderr, split across two writes
    assert any(REDACTED in line for line in tail) and not any(KEY in line for line in tail)

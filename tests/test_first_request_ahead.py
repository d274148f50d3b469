"""A ``-p`` run sends its remembered first request before start-up, and uses the answer only
when the real first request is the same bytes (``tui.agent.providers.ahead``).

Real processes on both sides: ``tests/ahead_driver.py`` starts agent-tui as its console script
does and says whether the request went ahead (and that pydantic was not loaded yet); the model
is the scripted server on loopback, whose log shows every request that arrived.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.scripted_server import ScriptedServer
from tui.agent.providers.ahead import _signature
from tui.agent.providers.ahead_memory import FOLDER, KEY_MARK

DRIVER = Path(__file__).with_name("ahead_driver.py")
KEY = "sk-test-ahead-0123456789abcdef"
DEADLINE = 60


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def ahead(self) -> dict[str, Any]:
        line = next(x for x in self.err.splitlines() if x.startswith("ahead: "))
        facts: dict[str, Any] = json.loads(line.removeprefix("ahead: "))
        return facts


@dataclass
class Place:
    home: Path
    workspace: Path
    server: ScriptedServer

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC"))}
        env.update(
            OPENAI_API_KEY=KEY,
            AGENT_TUI_CONFIG_DIR=str(self.home / "config"),
            AGENT_TUI_DATA_DIR=str(self.home / "data"),
        )
        env.pop("AGENT_TUI_PROVIDER__API_KEY", None)
        return env

    @property
    def memories(self) -> list[Path]:
        return sorted((self.home / "data" / FOLDER).glob("*.json"))

    def run(self, prompt: str, *extra: str, stdin: str | None = None) -> Run:
        command = [
            sys.executable,
            str(DRIVER),
            "-p",
            prompt,
            "--base-url",
            self.server.openai_base_url,
            "--model",
            "scripted",
            "--approval-mode",
            "full-auto",
            *extra,
        ]
        done = subprocess.run(
            command,
            cwd=self.workspace,
            env=self.env,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
        return Run(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with ScriptedServer() as server:
        yield Place(tmp_path, workspace, server)


def prompts_sent(server: ScriptedServer) -> list[str]:
    return [request.body["messages"][-1]["content"] for request in server.requests]


def test_the_second_run_sends_its_first_request_ahead_and_uses_its_answer(place: Place) -> None:
    place.server.add({"text": "first answer"}, {"text": "second answer"})
    first = place.run("say hello")
    assert (first.code, first.out.strip()) == (0, "first answer"), first.err
    assert first.ahead["sent"] is False
    assert len(place.memories) == 1

    second = place.run("now say goodbye")
    assert (second.code, second.out.strip()) == (0, "second answer"), second.err
    assert second.ahead == {"sent": True, "loaded": []}  # before pydantic or the CLI loaded
    assert prompts_sent(place.server) == ["say hello", "now say goodbye"]  # one each
    first_body, second_body = (request.body for request in place.server.requests)
    assert first_body["messages"][:-1] == second_body["messages"][:-1]
    assert first_body["tools"] == second_body["tools"]


def test_the_memory_is_private_and_never_holds_the_key(place: Place) -> None:
    place.server.add({"text": "ok"})
    assert place.run("hello there").code == 0
    [memory] = place.memories
    assert stat.S_IMODE(memory.stat().st_mode) == 0o600
    assert stat.S_IMODE(memory.parent.stat().st_mode) == 0o700
    text = memory.read_text(encoding="utf-8")
    assert KEY not in text
    saved = json.loads(text)
    assert saved["key_variable"] == "OPENAI_API_KEY"
    assert any(KEY_MARK in value for value in saved["headers"].values())
    assert "hello there" not in text  # the prompt is the run's, not the memory's


def test_a_changed_instruction_file_stops_the_request_going_ahead(place: Place) -> None:
    place.server.add({"text": "one"}, {"text": "two"})
    assert place.run("first").code == 0
    (place.workspace / "AGENTS.md").write_text("Always answer in French.\n", encoding="utf-8")
    second = place.run("second")
    assert second.code == 0, second.err
    assert second.ahead["sent"] is False
    assert len(place.server.requests) == 2
    assert "Always answer in French." in json.dumps(place.server.requests[1].body)


def test_a_stale_memory_is_closed_unread_and_the_real_request_answers(place: Place) -> None:
    place.server.add({"text": "one"})
    assert place.run("first").code == 0
    [memory] = place.memories
    saved = json.loads(memory.read_text(encoding="utf-8"))
    saved["body"]["messages"][0]["content"] += "\nA line the settings no longer give."
    memory.write_text(json.dumps(saved), encoding="utf-8")  # keeps its 0600

    place.server.add({"text": "stale answer"}, {"text": "real answer"})
    second = place.run("second")
    assert second.code == 0, second.err
    assert second.ahead["sent"] is True
    assert second.out.strip() == "real answer"
    stale, real = place.server.requests[1:]
    assert "no longer give" in stale.body["messages"][0]["content"]
    assert "no longer give" not in real.body["messages"][0]["content"]
    log = (place.home / "data" / "logs" / "agent-tui.log").read_text(encoding="utf-8")
    assert "closed unread" in log


def test_a_piped_prompt_is_never_remembered_nor_sent_ahead(place: Place) -> None:
    place.server.add({"text": "one"}, {"text": "two"})
    assert place.run("summarize", stdin="some piped text\n").code == 0
    assert place.memories == []
    assert place.run("summarize").code == 0  # remembered now
    piped = place.run("summarize", stdin="other piped text\n")
    assert piped.ahead["sent"] is False
    assert piped.code == 0, piped.err


def test_a_memory_others_could_write_is_ignored(place: Place) -> None:
    place.server.add({"text": "one"}, {"text": "two"})
    assert place.run("first").code == 0
    [memory] = place.memories
    memory.chmod(0o666)
    second = place.run("second")
    assert second.ahead["sent"] is False
    assert (second.code, second.out.strip()) == (0, "two"), second.err
    assert len(place.server.requests) == 2


def test_commands_and_mentions_are_not_sent_ahead(place: Place) -> None:
    place.server.add({"text": "one"})
    assert place.run("first").code == 0
    (place.workspace / "notes.txt").write_text("hello\n", encoding="utf-8")
    for prompt in ("/help", "!ls", "read @notes.txt"):
        assert place.run(prompt).ahead["sent"] is False, prompt


def test_runs_with_mcp_servers_are_not_remembered(place: Place) -> None:
    config = place.home / "config"
    config.mkdir()
    (config / "config.toml").write_text(
        "[mcp.servers.time]\n"
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n',
        encoding="utf-8",
    )
    place.server.add({"text": "one"}, {"text": "two"})
    assert place.run("first").code == 0
    assert place.memories == []


def test_the_early_and_the_real_client_build_the_same_bytes() -> None:
    """The match is byte for byte: a sync and an async client must build identical requests
    from the same arguments, or nothing would ever be answered from memory."""
    body = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "stream": True}
    headers = {"Authorization": "Bearer x", "Accept": "text/event-stream"}
    url = "http://127.0.0.1:9/v1/chat/completions"
    with httpx.Client() as sync:
        early = sync.build_request("POST", url, json=body, headers=headers)
    real = httpx.AsyncClient().build_request("POST", url, json=body, headers=headers)
    assert _signature(early) == _signature(real)
    changed = httpx.AsyncClient().build_request(
        "POST", url, json={**body, "stream": False}, headers=headers
    )
    assert _signature(early) != _signature(changed)


def test_a_changed_file_the_command_line_names_stops_the_request_going_ahead(
    place: Place,
) -> None:
    """Files found by what start-up opened, not by a list: here ``--json-schema FILE``."""
    schema = place.workspace / "answer.schema.json"
    schema.write_text('{"type": "object", "properties": {"a": {"type": "integer"}}}\n')
    place.server.add({"text": '{"a": 1}'}, {"text": '{"a": 2}'}, {"text": '{"a": 3}'})
    assert place.run("answer", "--json-schema", str(schema)).ahead["sent"] is False
    assert place.run("answer", "--json-schema", str(schema)).ahead["sent"] is True
    schema.write_text('{"type": "object", "properties": {"b": {"type": "integer"}}}\n')
    changed = place.run("answer", "--json-schema", str(schema))
    assert changed.ahead["sent"] is False
    assert '"b"' in json.dumps(place.server.requests[-1].body)

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
        command = [sys.executable, str(DRIVER), *self.server.headless_args(prompt, *extra)]
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


def remembered(place: Place, prompt: str = "first", *extra: str) -> None:
    """Two runs of the command: the first remembers its request, the second confirms it (it
    built the same), so the third may send it ahead."""
    place.server.add({"text": "one"}, {"text": "two"})
    for _ in range(2):
        run = place.run(prompt, *extra)
        assert (run.code, run.ahead["sent"]) == (0, False), run.err


def prompts_sent(server: ScriptedServer) -> list[str]:
    return [request.body["messages"][-1]["content"] for request in server.requests]


def test_a_confirmed_run_sends_its_first_request_ahead_and_uses_its_answer(
    place: Place,
) -> None:
    place.server.add({"text": "first answer"}, {"text": "second answer"}, {"text": "third"})
    first = place.run("say hello")
    assert (first.code, first.out.strip()) == (0, "first answer"), first.err
    assert first.ahead["sent"] is False
    assert len(place.memories) == 1
    second = place.run("say hello again")  # builds the remembered request: confirmed
    assert (second.code, second.ahead["sent"]) == (0, False), second.err

    third = place.run("now say goodbye")
    assert (third.code, third.out.strip()) == (0, "third"), third.err
    assert third.ahead == {"sent": True, "loaded": []}  # before pydantic or the CLI loaded
    assert prompts_sent(place.server) == ["say hello", "say hello again", "now say goodbye"]
    bodies = [request.body for request in place.server.requests]
    assert bodies[0]["messages"][:-1] == bodies[2]["messages"][:-1]
    assert bodies[0]["tools"] == bodies[2]["tools"]


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
    remembered(place)
    (place.workspace / "AGENTS.md").write_text("Always answer in French.\n", encoding="utf-8")
    place.server.add({"text": "three"})
    third = place.run("third")
    assert third.code == 0, third.err
    assert third.ahead["sent"] is False
    assert len(place.server.requests) == 3
    assert "Always answer in French." in json.dumps(place.server.requests[2].body)


def stale(memory: Path) -> None:
    """The remembered system prompt, changed: as if the settings had changed unseen."""
    saved = json.loads(memory.read_text(encoding="utf-8"))
    saved["body"]["messages"][0]["content"] += "\nA line the settings no longer give."
    memory.write_text(json.dumps(saved), encoding="utf-8")  # keeps its 0600


def test_a_stale_memory_is_closed_unread_and_the_real_request_answers(place: Place) -> None:
    remembered(place)
    [memory] = place.memories
    stale(memory)
    place.server.add({"text": "stale answer"}, {"text": "real answer"}, {"text": "again"})
    third = place.run("third")
    assert third.code == 0, third.err
    assert third.ahead["sent"] is True
    assert third.out.strip() == "real answer"
    early, real = place.server.requests[2:]
    assert "no longer give" in early.body["messages"][0]["content"]
    assert "no longer give" not in real.body["messages"][0]["content"]
    log = (place.home / "data" / "logs" / "agent-tui.log").read_text(encoding="utf-8")
    assert "closed unread" in log
    again = place.run("fourth")  # the memory is the real request now, not yet confirmed
    assert (again.code, again.ahead["sent"], again.out.strip()) == (0, False, "again")
    assert len(place.server.requests) == 5


def test_a_request_that_differs_each_run_is_never_sent_ahead(place: Place) -> None:
    place.server.add({"text": "one"}, {"text": "two"}, {"text": "three"})
    assert place.run("first").code == 0
    for prompt in ("second", "third"):
        [memory] = place.memories
        stale(memory)  # what the next run builds differs from what was remembered
        run = place.run(prompt)
        assert (run.code, run.ahead["sent"]) == (0, False), run.err
    assert prompts_sent(place.server) == ["first", "second", "third"]


def test_a_piped_prompt_is_never_remembered_nor_sent_ahead(place: Place) -> None:
    place.server.add({"text": "piped"})
    assert place.run("summarize", stdin="some piped text\n").code == 0
    assert place.memories == []
    remembered(place, "summarize")
    place.server.add({"text": "piped again"})
    piped = place.run("summarize", stdin="other piped text\n")
    assert piped.ahead["sent"] is False
    assert piped.code == 0, piped.err


def test_a_memory_others_could_write_is_ignored(place: Place) -> None:
    remembered(place)
    [memory] = place.memories
    memory.chmod(0o666)
    place.server.add({"text": "three"})
    third = place.run("third")
    assert third.ahead["sent"] is False
    assert (third.code, third.out.strip()) == (0, "three"), third.err
    assert len(place.server.requests) == 3


def test_commands_and_mentions_are_not_sent_ahead(place: Place) -> None:
    remembered(place)
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
    place.server.add(*({"text": f'{{"a": {n}}}'} for n in range(4)))
    assert place.run("answer", "--json-schema", str(schema)).ahead["sent"] is False
    assert place.run("answer", "--json-schema", str(schema)).ahead["sent"] is False
    assert place.run("answer", "--json-schema", str(schema)).ahead["sent"] is True
    schema.write_text('{"type": "object", "properties": {"b": {"type": "integer"}}}\n')
    changed = place.run("answer", "--json-schema", str(schema))
    assert changed.ahead["sent"] is False
    assert '"b"' in json.dumps(place.server.requests[-1].body)


def test_send_ahead_off_in_the_config_forgets_and_stops_it(place: Place) -> None:
    remembered(place)
    assert len(place.memories) == 1
    (place.home / "config").mkdir(exist_ok=True)
    (place.home / "config" / "config.toml").write_text("[agent]\nsend_ahead = false\n")
    place.server.add({"text": "three"}, {"text": "four"}, {"text": "five"})
    for prompt in ("third", "fourth", "fifth"):
        run = place.run(prompt)
        assert (run.code, run.ahead["sent"]) == (0, False), run.err
        assert place.memories == []
    assert len(place.server.requests) == 5


def test_send_ahead_off_in_the_environment_stops_it_before_anything_is_read(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TUI_AGENT__SEND_AHEAD", "false")
    remembered(place)
    assert place.memories == []
    place.server.add({"text": "three"})
    run = place.run("third")
    assert (run.code, run.ahead["sent"]) == (0, False), run.err

"""The headless contract, held by the real ``agent-tui`` command against a real model server.

Why subprocesses on both sides: scripts use ``agent-tui -p`` through its exit code, stdout and
stderr, so that is what is tested — the installed console script, started with no controlling
terminal (as under CI or cron), talking HTTP to ``python -m tests.scripted_server`` on
127.0.0.1. What the model was sent is read back from the server's request log, and every logged
request gets the same call/result pairing check as the in-process loop tests.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_server import RecordedRequest
from tests.test_loop import (
    call as tool_call,
)
from tests.test_loop import (
    check_request,
    live_in_group,
    live_with,
    result_text,
    shell,
    tools_step,
    user_texts,
    wire_results,
)
from tests.waiting import until_blocking
from tui.events import parse_event

REPO = Path(__file__).resolve().parents[1]
AGENT_TUI = Path(sys.executable).with_name("agent-tui")
"""The console script pip installed next to this interpreter: the command users run."""
OPENAI_KEY = "sk-dummy-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-dummy-0123456789abcdef"
DEADLINE = 20.0


# -- the model server as a subprocess ----------------------------------------------------------


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, provider: str) -> str:
        return self.openai_url if provider.startswith("openai") else self.anthropic_url

    def requests(self) -> list[RecordedRequest]:
        if not self.log.exists():
            return []
        text = self.log.read_text(encoding="utf-8")
        # A line still being written is not a request yet: only whole lines count.
        lines = text[: text.rfind("\n") + 1].splitlines()
        return [RecordedRequest(**json.loads(line)) for line in lines if line.strip()]


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], ServerProcess]]:
    """Starts ``python -m tests.scripted_server`` with a script; stops it afterwards and checks
    that every request it received answered each tool call exactly once."""
    started: list[ServerProcess] = []

    def start(steps: list[dict[str, Any]]) -> ServerProcess:
        folder = tmp_path / f"server-{len(started)}"
        folder.mkdir()
        script = folder / "script.json"
        script.write_text(json.dumps(steps), encoding="utf-8")
        port_file = folder / "port"
        log = folder / "requests.jsonl"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.scripted_server",
                "--script",
                str(script),
                "--port-file",
                str(port_file),
                "--log",
                str(log),
            ],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        server = ServerProcess(process, 0, log)
        started.append(server)

        def ready() -> bool:
            assert process.poll() is None, f"the scripted server exited ({process.returncode})"
            return port_file.exists()

        until_blocking(ready, "the scripted server to listen", DEADLINE)
        server.port = int(port_file.read_text(encoding="utf-8"))
        return server

    yield start
    for server in started:
        server.process.terminate()
        server.process.wait(timeout=10)
    for server in started:
        for request in server.requests():
            check_request(request)


# -- the CLI ---------------------------------------------------------------------------------


@dataclass
class Cli:
    """One user's machine: a workspace, private config and data folders, an environment."""

    workspace: Path
    env: dict[str, str] = field(default_factory=dict)

    def command(self, *args: str) -> list[str]:
        return [str(AGENT_TUI), *args]

    def run(
        self,
        *args: str,
        timeout: float = DEADLINE,
        input: str | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run to the end with no controlling terminal, ``input`` (else nothing) on stdin."""
        return subprocess.run(
            self.command(*args),
            cwd=self.workspace,
            env=self.env if env is None else env,
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*args),
            cwd=self.workspace,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    workspace = tmp_path / "project"
    workspace.mkdir()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "ANTHROPIC_", "AGENT_TUI_"))
    }
    env.update(
        AGENT_TUI_CONFIG_DIR=str(tmp_path / "config"),
        AGENT_TUI_DATA_DIR=str(tmp_path / "data"),
        OPENAI_API_KEY=OPENAI_KEY,
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        # Each test's own runs stay ordinary starts (tests/test_warm_start.py is about warm
        # ones): a test running a command three times would leave a warm process behind.
        AGENT_TUI_AGENT__WARM_START="false",
    )
    return Cli(workspace.resolve(), env)


def headless(
    server: ServerProcess, prompt: str, *extra: str, provider: str = "openai"
) -> list[str]:
    return [
        "-p",
        prompt,
        "--provider",
        provider,
        "--model",
        "scripted-model",
        "--base-url",
        server.url(provider),
        *extra,
    ]


def reason_lines(stderr: str) -> list[str]:
    """The contract's failure lines (progress notes on stderr are not failures)."""
    return [line for line in stderr.splitlines() if line.startswith("agent-tui: ")]


def read_lines_until(
    process: subprocess.Popen[str], predicate: Callable[[str], bool], timeout: float = DEADLINE
) -> list[str]:
    """Lines of a running process's stdout up to the first that matches, with a deadline.

    Read a byte at a time from the pipe itself: the stream's own buffer would take in lines
    that arrived together, hide them from the selector (a wait for a line already read) and
    from ``communicate`` afterwards."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    lines: list[str] = []
    pending = bytearray()
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise AssertionError(f"no matching line within {timeout} s; got {lines}")
            byte = os.read(fd, 1)
            if not byte:
                raise AssertionError(f"stdout closed first; got {lines}")
            pending += byte
            if byte != b"\n":
                continue
            line = pending.decode("utf-8", errors="replace")
            pending.clear()
            lines.append(line)
            if predicate(line):
                return lines


# -- output formats ------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_text_output_is_the_answer_alone_after_a_real_tool_call(
    provider: str, cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    server = model_server(
        [
            tools_step(shell("call_write", "echo made-by-tool > out.txt; cat out.txt")),
            {"text": "I wrote out.txt.", "usage": {"input_tokens": 40, "output_tokens": 9}},
        ]
    )
    done = cli.run(
        *headless(server, "write a file", "--approval-mode", "full-auto", provider=provider)
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "I wrote out.txt.\n"
    assert "▶ run_shell" in done.stderr  # progress goes to stderr, never stdout
    assert (cli.workspace / "out.txt").read_text(encoding="utf-8") == "made-by-tool\n"
    first, second = server.requests()
    expected_path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
    assert first.path == second.path == expected_path
    if provider == "openai":
        assert first.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    else:
        assert first.headers["x-api-key"] == ANTHROPIC_KEY
    assert first.body["model"] == "scripted-model"
    assert "made-by-tool" in result_text(second, "call_write")


def test_json_output_is_one_object(cli: Cli, model_server: Callable[..., ServerProcess]) -> None:
    server = model_server(
        [
            {
                **tools_step(shell("call_1", "echo x")),
                "usage": {"input_tokens": 10, "output_tokens": 3},
            },
            {"text": "done.", "usage": {"input_tokens": 20, "output_tokens": 4}},
        ]
    )
    done = cli.run(
        *headless(server, "go", "--approval-mode", "full-auto", "--output-format", "json")
    )

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    result = json.loads(lines[0])
    assert result["result"] == "done."
    assert result["stop_reason"] == "completed" and result["is_error"] is False
    assert result["turns"] == 2
    assert result["usage"] == {
        "input_tokens": 30,
        "output_tokens": 7,
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
        "cost_usd": None,  # the scripted model has no price
        # The same counts under Claude Code's names, for scripts written for it.
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    assert result["session_id"] and isinstance(result["session_id"], str)
    assert done.stderr == ""


def test_openai_responses_provider_end_to_end(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    """The same headless contract over the Responses API: the call runs, its output goes
    back as a function_call_output with the encrypted reasoning before the call, and the
    json usage carries cached and reasoning tokens."""
    reasoning = {
        "type": "reasoning",
        "id": "rs_headless",
        "summary": [],
        "encrypted_content": "gAAAAABheadless==",
    }
    server = model_server(
        [
            {
                **tools_step(shell("call_1", "echo via-responses")),
                "reasoning": [reasoning],
                "usage": {"input_tokens": 10, "output_tokens": 3, "reasoning_tokens": 2},
            },
            {
                "text": "done.",
                "usage": {"input_tokens": 20, "output_tokens": 4, "cached_tokens": 8},
            },
        ]
    )
    done = cli.run(
        *headless(
            server,
            "go",
            "--approval-mode",
            "full-auto",
            "--output-format",
            "json",
            provider="openai-responses",
        )
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "done." and result["turns"] == 2
    assert result["usage"] == {
        "input_tokens": 30,
        "output_tokens": 7,
        "cached_tokens": 8,
        "cache_write_tokens": 0,
        "reasoning_tokens": 2,
        "cost_usd": None,
        "cache_read_input_tokens": 8,
        "cache_creation_input_tokens": 0,
    }
    first, second = server.requests()
    assert first.path == second.path == "/v1/responses"
    items = second.body["input"]
    assert [item["type"] for item in items[1:]] == [
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert items[1] == reasoning
    assert json.loads(items[3]["output"])["result"]["stdout"] == "via-responses\n"


def test_stream_json_is_every_event_in_order(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    server = model_server([tools_step(shell("call_1", "echo streamed")), {"text": "fin"}])
    done = cli.run(
        *headless(server, "go", "--approval-mode", "full-auto", "--output-format", "agent-tui-json")
    )

    assert done.returncode == 0, done.stderr
    events = [parse_event(line) for line in done.stdout.splitlines()]
    kinds = [event.kind for event in events]
    assert kinds[0] == "user_message" and kinds[-1] == "turn_ended"
    assert kinds.count("turn_ended") == 1
    order = ["user_message", "turn_started", "tool_requested", "tool_started", "tool_output"]
    order += ["tool_completed", "turn_started", "assistant_message", "turn_ended"]
    cursor = 0
    for kind in order:  # these appear as a subsequence, in this order
        assert kind in kinds[cursor:], f"{kind} missing after position {cursor}: {kinds}"
        cursor = kinds.index(kind, cursor) + 1
    ended = events[-1]
    assert ended.kind == "turn_ended" and ended.reason == "completed" and ended.final_text == "fin"
    output = [e for e in events if e.kind == "tool_output"]
    assert "".join(e.text for e in output) == "streamed\n"
    assert "call_1" in wire_results(server.requests()[1])


# -- approvals and limits ------------------------------------------------------------------------


def test_ask_mode_without_a_terminal_refuses_and_says_which_flag(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    server = model_server(
        [tools_step(shell("call_touch", "touch asked.txt")), {"text": "I was not allowed."}]
    )
    done = cli.run(*headless(server, "make a file", "--approval-mode", "ask"))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "I was not allowed.\n"
    assert not (cli.workspace / "asked.txt").exists()
    refusal = result_text(server.requests()[1], "call_touch")
    assert refusal.startswith("Error (PermissionDenied)")
    assert "no TTY" in refusal and "--approval-mode" in refusal
    assert "--approval-mode" in done.stderr  # the person running the script sees it too


def test_max_turns_exits_3_with_a_one_line_reason(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    server = model_server(
        [tools_step(shell("call_1", "echo 1")), tools_step(shell("c2", "echo 2"))]
    )
    done = cli.run(*headless(server, "go", "--approval-mode", "full-auto", "--max-turns", "1"))

    assert done.returncode == 3, done.stderr
    assert reason_lines(done.stderr) == ["agent-tui: stopped after 1 turns (--max-turns)"]
    assert done.stderr.splitlines()[-1] == reason_lines(done.stderr)[0]
    assert len(server.requests()) == 1


def test_provider_failing_for_good_exits_non_zero_without_the_key(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    echoed = {"status": 500, "message": f"internal error for key {OPENAI_KEY}", "retry_after": 0}
    server = model_server([echoed] * 6)
    done = cli.run(*headless(server, "hi", "--output-format", "text"))

    assert done.returncode == 1, done.stderr
    reasons = reason_lines(done.stderr)
    assert len(reasons) == 1 and done.stderr.splitlines()[-1] == reasons[0]
    assert "500" in reasons[0] and "4 attempts" in reasons[0], reasons[0]
    assert OPENAI_KEY not in done.stderr and OPENAI_KEY not in done.stdout
    assert "[redacted]" in reasons[0]
    assert done.stdout == ""
    assert len(server.requests()) == 4  # retried, then gave up


def test_invalid_config_exits_2_naming_file_line_and_key(cli: Cli) -> None:
    config = cli.workspace / ".agent-tui.toml"
    config.write_text('[provider]\nname = "openai"\n\n[agent]\nmax_turn = 5\n', encoding="utf-8")
    done = cli.run("-p", "hi")

    assert done.returncode == 2
    reasons = reason_lines(done.stderr)
    assert len(reasons) == 1 and done.stderr.strip() == reasons[0]
    assert f"{config} line 5" in reasons[0] and "max_turn" in reasons[0], reasons[0]
    assert done.stdout == ""


def test_no_key_and_no_base_url_exits_2_saying_what_to_set(cli: Cli) -> None:
    env = {k: v for k, v in cli.env.items() if k != "OPENAI_API_KEY"}
    done = Cli(cli.workspace, env).run("-p", "hi", "--provider", "openai")

    assert done.returncode == 2
    config = Path(cli.env["AGENT_TUI_CONFIG_DIR"]) / "config.toml"
    assert done.stderr.strip() == (
        "agent-tui: OPENAI_API_KEY is not set. Export it, or set OPENAI_BASE_URL to a server "
        f"that needs no key. Or configure the [provider] section of {config}."
    )


def test_workspace_config_that_adds_hooks_is_announced_and_ignored(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    """A cloned repository's ``.agent-tui.toml`` adding hook commands must never go unseen,
    and its hooks never run before the workspace is trusted."""
    (cli.workspace / ".agent-tui.toml").write_text(
        '[[hooks.pre_tool_use]]\nmatcher = "*"\ncommand = "touch hook-ran"\n', encoding="utf-8"
    )
    server = model_server([tools_step(shell("c1", "true")), {"text": "hi"}])
    done = cli.run(*headless(server, "hi", "--approval-mode", "full-auto"))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi\n"
    said = [line for line in done.stderr.splitlines() if "until this workspace is trusted" in line]
    assert len(said) == 1, done.stderr
    assert ".agent-tui.toml" in said[0] and "hooks.pre_tool_use" in said[0], said
    assert "--trust-workspace" in said[0]
    assert not (cli.workspace / "hook-ran").exists()


# -- interrupting --------------------------------------------------------------------------------


def test_sigint_while_a_tool_runs_exits_130_and_leaves_no_process(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    marker = f"{300 + (uuid.uuid4().int % 10**6) / 10**7:.7f}"
    server = model_server(
        [tools_step(shell("call_long", f"sleep 1{marker} & sleep {marker}; wait")), {"text": "x"}]
    )
    process = cli.start(
        *headless(server, "go", "--approval-mode", "full-auto", "--output-format", "agent-tui-json")
    )
    try:
        read_lines_until(process, lambda line: '"kind":"tool_started"' in line)
        running = until_blocking(
            lambda: (
                (found := live_with(marker))
                and sum(info[2].startswith("sleep ") for info in found.values()) == 2
                and found
            ),
            "both sleeps to run",
            DEADLINE,
        )
        groups = {info[1] for info in running.values()}
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=10)
        took = time.monotonic() - interrupted
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 130, stderr
    assert took < 5, f"took {took:.1f} s to stop"
    assert reason_lines(stderr) == ["agent-tui: cancelled"]
    assert not live_with(marker), "a sleep outlived the CLI"
    for pgid in groups:
        assert not live_in_group(pgid), f"process group {pgid} survived"
    events = [parse_event(line) for line in stdout.splitlines()]
    completed = [e for e in events if e.kind == "tool_completed"]
    assert [(e.tool_call_id, e.error_type) for e in completed] == [("call_long", "Cancelled")]
    assert events[-1].kind == "turn_ended" and events[-1].reason == "cancelled"


# -- sessions ------------------------------------------------------------------------------------


def test_continue_resume_and_sessions_list(
    cli: Cli, model_server: Callable[..., ServerProcess]
) -> None:
    server = model_server(
        [{"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}]
    )
    first = cli.run(*headless(server, "first question", "--output-format", "json"))
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]

    second = cli.run(*headless(server, "second question", "--continue", "--output-format", "json"))
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["session_id"] == session_id
    continued = server.requests()[1]
    assert user_texts(continued) == ["first question", "second question"]
    assistant = [m for m in continued.body["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in assistant] == ["first answer"]

    third = cli.run(*headless(server, "third question", "--resume", session_id))
    assert third.returncode == 0, third.stderr
    assert third.stdout == "third answer\n"
    resumed = server.requests()[2]
    assert user_texts(resumed) == ["first question", "second question", "third question"]

    listing = cli.run("sessions")
    assert listing.returncode == 0, listing.stderr
    rows = [line for line in listing.stdout.splitlines() if line.startswith(session_id)]
    assert len(rows) == 1 and "first question" in rows[0], listing.stdout

    missing = cli.run(*headless(server, "hi", "--resume", "no-such-session"))
    assert missing.returncode == 2
    assert reason_lines(missing.stderr) and "no-such-session" in missing.stderr
    assert len(server.requests()) == 3  # nothing was sent for a session that does not exist


# -- --json-schema -------------------------------------------------------------------------


def test_headless_json_schema_flag(
    cli: Cli, model_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    schema_file = tmp_path / "answer.json"
    schema_file.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
                "required": ["city", "temp_c"],
            }
        )
    )
    server = model_server(
        [tools_step(tool_call("s1", "structured_output", {"city": "Rome", "temp_c": 21}))]
    )
    args = headless(server, "weather", "--json-schema", str(schema_file))
    done = cli.run(*args, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structured_output"] == {"city": "Rome", "temp_c": 21}
    assert json.loads(result["result"]) == result["structured_output"]

    server = model_server(
        [tools_step(tool_call("s1", "structured_output", {"city": "Rome", "temp_c": 21}))]
    )
    text = cli.run(*headless(server, "weather", "--json-schema", str(schema_file)))
    assert json.loads(text.stdout) == {"city": "Rome", "temp_c": 21}

    missing = cli.run(*headless(server, "x", "--json-schema", str(tmp_path / "nope.json")))
    assert missing.returncode == 2
    assert reason_lines(missing.stderr) == [
        f"agent-tui: JSON schema file {tmp_path / 'nope.json'} does not exist"
    ]

"""Scripts and hooks written for Claude Code work with agent-tui unchanged.

``tests/data/claude_stream_json.jsonl`` holds the lines ``claude -p --output-format
stream-json`` writes, in the shapes Claude Code's headless documentation and its Agent SDK's
message types give (``system``/``init``, ``assistant``, ``user`` with ``tool_result``, then
``result``; values invented). A consumer written the way such scripts are written reads that
file, and then the real ``agent-tui -p`` (a subprocess, against the scripted model server): it
must find everything it found there, every key the documented lines carry, in the same types.

The hooks are real Claude Code hook scripts — shell and ``jq`` reading ``.tool_input.file_path``
and ``.tool_input.command``, matchers ``Edit|Write`` and ``Bash`` — run by the real loop.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_server import ScriptedServer
from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server  # noqa: F401
from tests.test_loop import answer, call, open_session, result_text, shell, submit, tools_step
from tui.agent.claude_names import as_claude, claude_name, from_claude, our_name

FIXTURE = Path(__file__).parent / "data" / "claude_stream_json.jsonl"


def fixture_lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def consume(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """What a script for ``claude -p --output-format stream-json`` takes from the stream: the
    session, every shell command and every tool_result matched to its call, the answer, the
    cost and turn count, and whether it failed. Asserts what such scripts rely on."""
    init = lines[0]
    assert init["type"] == "system" and init["subtype"] == "init"
    session = init["session_id"]
    assert isinstance(session, str) and session
    assert isinstance(init["tools"], list) and "Bash" in init["tools"]
    uses: dict[str, dict[str, Any]] = {}
    commands: list[str] = []
    results: dict[str, str] = {}
    texts: list[str] = []
    for line in lines[1:-1]:
        assert line["type"] in ("assistant", "user"), line
        assert line["session_id"] == session and line["parent_tool_use_id"] is None
        message = line["message"]
        if line["type"] == "assistant":
            assert message["role"] == "assistant" and isinstance(message["usage"], dict)
            for block in message["content"]:
                if block["type"] == "text":
                    texts.append(block["text"])
                elif block["type"] == "tool_use":
                    uses[block["id"]] = block
                    if block["name"] == "Bash":
                        commands.append(block["input"]["command"])
        else:
            assert message["role"] == "user"
            for block in message["content"]:
                assert block["type"] == "tool_result" and block["tool_use_id"] in uses
                assert isinstance(block["is_error"], bool)
                results[block["tool_use_id"]] = block["content"]
    result = lines[-1]
    assert result["type"] == "result" and result["session_id"] == session
    assert result["subtype"] in ("success", "error_max_turns", "error_during_execution")
    assert isinstance(result["total_cost_usd"], float | int)
    assert isinstance(result["num_turns"], int) and isinstance(result["duration_ms"], int)
    assert isinstance(result["usage"]["input_tokens"], int)
    return {
        "commands": commands,
        "results": results,
        "texts": texts,
        "answer": result["result"],
        "is_error": result["is_error"],
        "turns": result["num_turns"],
    }


def keys_of(lines: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Every key a line type carries, its message's and its content blocks' too."""
    found: dict[str, set[str]] = {}
    for line in lines:
        kind = f"{line['type']}/{line.get('subtype', '')}" if line["type"] == "system" else ""
        kind = kind or line["type"]
        found.setdefault(kind, set()).update(line)
        message = line.get("message")
        if isinstance(message, dict):
            found.setdefault(f"{line['type']}.message", set()).update(message)
            for block in message.get("content") or []:
                found.setdefault(f"{line['type']}.{block['type']}", set()).update(block)
        if isinstance(line.get("usage"), dict):
            found.setdefault("result.usage", set()).update(
                k for k in line["usage"] if k.endswith("tokens")
            )
    return found


def test_the_documented_lines_read_as_a_script_expects() -> None:
    seen = consume(fixture_lines())
    assert seen["commands"] == ["pytest -q"] and seen["answer"] == "All 3 tests pass."


def test_stream_json_speaks_claude_codes_lines(
    cli: Cli,  # noqa: F811
    model_server: Any,  # noqa: F811
) -> None:
    server: ServerProcess = model_server(
        [
            tools_step(
                shell("call_1", "echo three passed"),
                call("call_2", "write_file", {"path": "notes.txt", "content": "hi\n"}),
                text="I'll run the tests first.",
            ),
            {"text": "All tests pass.", "usage": {"input_tokens": 50, "output_tokens": 7}},
        ]
    )
    done = cli.run(
        *headless(server, "run the tests", "--approval-mode", "full-auto"),
        "--output-format",
        "stream-json",
    )
    assert done.returncode == 0, done.stderr
    ours = [json.loads(line) for line in done.stdout.splitlines()]
    seen = consume(ours)
    assert seen["commands"] == ["echo three passed"]
    assert "three passed" in seen["results"]["call_1"]  # the output, as the model read it
    assert seen["results"]["call_2"].startswith("Created notes.txt")
    assert seen["texts"] == ["I'll run the tests first.", "All tests pass."]
    assert seen["answer"] == "All tests pass." and seen["is_error"] is False
    assert seen["turns"] == 2
    # Every key the documented lines carry is there (ours may add more).
    documented, written = keys_of(fixture_lines()), keys_of(ours)
    for kind, keys in documented.items():
        assert kind in written, f"no {kind} line"
        assert keys <= written[kind], f"{kind} lacks {sorted(keys - written[kind])}"
    write = next(
        block
        for line in ours
        if line["type"] == "assistant"
        for block in line["message"]["content"]
        if block.get("name") == "Write"
    )
    assert write["input"]["file_path"] == str(cli.workspace / "notes.txt")
    assert write["agent_tui_name"] == "write_file"
    init = ours[0]
    assert init["permissionMode"] == "bypassPermissions"
    assert init["agent_tui"]["approval_mode"] == "full-auto"
    assert {"Bash", "Read", "Edit", "Write"} <= set(init["tools"])


def test_json_is_the_result_object_alone(
    cli: Cli,  # noqa: F811
    model_server: Any,  # noqa: F811
) -> None:
    server: ServerProcess = model_server([{"text": "answer", "usage": {"input_tokens": 9}}])
    done = cli.run(*headless(server, "hi"), "--output-format", "json")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    result = json.loads(line)
    documented = fixture_lines()[-1]
    assert set(documented) <= set(result), sorted(set(documented) - set(result))
    assert result["type"] == "result" and result["subtype"] == "success"
    assert result["result"] == "answer" and result["num_turns"] == 1
    assert result["total_cost_usd"] == 0.0 and result["total_cost_known"] is False
    # What agent-tui's json said before stays: outcome, turns, our token counts.
    assert result["stop_reason"] == "completed" and result["turns"] == 1
    assert result["usage"]["input_tokens"] == 9 and result["usage"]["cost_usd"] is None


def test_max_turns_is_claude_codes_error_subtype(
    cli: Cli,  # noqa: F811
    model_server: Any,  # noqa: F811
) -> None:
    server: ServerProcess = model_server([tools_step(shell("c1", "true")), {"text": "x"}])
    done = cli.run(
        *headless(server, "go", "--approval-mode", "full-auto", "--max-turns", "1"),
        "--output",
        "stream-json",
    )
    assert done.returncode == 3
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["subtype"] == "error_max_turns" and result["is_error"] is True


def test_names_and_inputs_both_ways(tmp_path: Path) -> None:
    assert [claude_name(n) for n in ("run_shell", "edit_file", "github__create_issue")] == [
        "Bash",
        "Edit",
        "mcp__github__create_issue",
    ]
    assert our_name("Edit") == "edit_file" and our_name("mcp__github__x") == "github__x"
    claude = as_claude("edit_file", {"path": "a/b.py", "old_string": "x", "new_string": "y"}, "/w")
    assert claude == {"file_path": "/w/a/b.py", "old_string": "x", "new_string": "y"}
    bash = as_claude("run_shell", {"command": "ls", "why": "look", "timeout": 2.5}, "/w")
    assert bash == {"command": "ls", "description": "look", "timeout": 2500}
    assert from_claude("run_shell", bash) == {"command": "ls", "why": "look", "timeout": 2.5}
    assert from_claude("write_file", {"file_path": "/w/x", "content": "c"}) == {
        "path": "/w/x",
        "content": "c",
    }
    assert as_claude("time", {"timezone": "UTC"}, "/w") == {"timezone": "UTC"}


FORMAT_AFTER_EDIT = """#!/bin/bash
# A Claude Code PostToolUse hook, as its documentation writes one: the edited file's path from
# .tool_input.file_path, then a formatter run on it (here: strip trailing blanks).
file_path=$(jq -r '.tool_input.file_path')
echo "$file_path" >> "$CLAUDE_PROJECT_DIR/formatted.log"
sed -i 's/[[:space:]]*$//' "$file_path"
"""

BLOCK_RM = """#!/bin/bash
# A Claude Code PreToolUse hook on Bash: refuse rm -rf, exit 2 with the reason on stderr.
payload=$(cat)
# Written whole and renamed: the two Bash calls' hooks run at the same time.
echo "$payload" > "$CLAUDE_PROJECT_DIR/last-bash.json.$$"
mv "$CLAUDE_PROJECT_DIR/last-bash.json.$$" "$CLAUDE_PROJECT_DIR/last-bash.json"
command=$(echo "$payload" | jq -r '.tool_input.command')
if echo "$command" | grep -q 'rm -rf'; then
  echo "rm -rf is not allowed here" >&2
  exit 2
fi
exit 0
"""


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
async def test_claude_code_hook_scripts_run_unchanged(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name, text in (("format.sh", FORMAT_AFTER_EDIT), ("block.sh", BLOCK_RM)):
        (hooks / name).write_text(text)
        (hooks / name).chmod(0o755)
    (workspace / ".agent-tui.toml").write_text(
        "[[hooks.post_tool_use]]\n"
        'matcher = "Edit|MultiEdit|Write"\n'
        f'command = "{hooks / "format.sh"}"\n\n'
        "[[hooks.pre_tool_use]]\n"
        'matcher = "Bash"\n'
        f'command = "{hooks / "block.sh"}"\n'
    )
    (workspace / "app.py").write_text("x = 1\n")
    with ScriptedServer() as server:
        server.add(
            tools_step(
                call(
                    "c_edit",
                    "edit_file",
                    {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2   "},
                ),
                call("c_write", "write_file", {"path": "sub/new.py", "content": "y = 3  \n"}),
                call("c_read", "read_file", {"path": "app.py"}),
                shell("c_rm", "rm -rf sub"),
                shell("c_ls", "ls"),
            ),
            answer("done"),
        )
        async with open_session("anthropic", server, workspace, trust=True) as (session, _):
            outcome = await submit(session, "go")
        assert outcome.reason == "completed"
        second = server.requests[1]
        assert "rm -rf is not allowed here" in result_text(second, "c_rm")
        assert "PermissionDenied" in result_text(second, "c_rm")
        assert "PermissionDenied" not in result_text(second, "c_ls")
    # The formatter got absolute paths, for the edit and the write only (not the read).
    logged = (workspace / "formatted.log").read_text().splitlines()
    assert sorted(logged) == [str(workspace / "app.py"), str(workspace / "sub" / "new.py")]
    assert (workspace / "app.py").read_text() == "x = 2\n"
    assert (workspace / "sub" / "new.py").read_text() == "y = 3\n"
    assert (workspace / "sub").is_dir()  # the rm never ran
    payload = json.loads((workspace / "last-bash.json").read_text())
    assert payload["tool_name"] == "Bash" and payload["agent_tui_tool_name"] == "run_shell"
    assert payload["permission_mode"] == "bypassPermissions"  # full-auto
    assert Path(payload["transcript_path"]).is_file()
    assert payload["cwd"] == str(workspace)

"""The command line as Claude Code and Codex users type it, held by the real ``agent-tui``
(a subprocess with no terminal, against ``python -m tests.scripted_server``): piped input, -c and
-r, the provider a key picks, ``agent-tui config``, shell completion, a help line for every
flag, the error log, and the instruction files (CLAUDE.md, the global one)."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.test_headless_cli import (  # noqa: F401
    AGENT_TUI,
    Cli,
    ServerProcess,
    cli,
    headless,
    model_server,
)
from tests.test_prompt_files import run_once
from tui.app_log import LOG_NAME, log_error, start_log
from tui.cli_config import check_every_flag_has_help
from tui.locations import config_dir


def user_text(request: Any) -> str:
    messages = request.body.get("messages") or []
    users = [m for m in messages if m.get("role") == "user"]
    content = users[-1]["content"]
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content)
    return str(content)


# -- piped input, -c, -r -------------------------------------------------------------------------


def test_piped_input_joins_the_prompt(
    cli: Cli,  # noqa: F811
    model_server: Callable[..., ServerProcess],  # noqa: F811
) -> None:
    server = model_server([{"text": "It failed on line 3."}, {"text": "ok"}])
    done = subprocess.run(
        cli.command(*headless(server, "why did this fail?")),
        cwd=cli.workspace,
        env=cli.env,
        input="Traceback: line 3\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "It failed on line 3.\n"
    assert user_text(server.requests()[0]) == "why did this fail?\n\nTraceback: line 3\n"
    args = headless(server, "x")
    args.remove("x")  # -p alone: the prompt is stdin
    done = subprocess.run(
        cli.command(*args),
        cwd=cli.workspace,
        env=cli.env,
        input="just stdin",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert user_text(server.requests()[1]) == "just stdin"


def test_p_with_nothing_to_say_is_a_usage_error(cli: Cli) -> None:  # noqa: F811
    done = cli.run("-p")
    assert done.returncode == 2 and "-p needs a prompt" in done.stderr


def test_c_continues_and_r_resumes_and_r_alone_needs_the_app(
    cli: Cli,  # noqa: F811
    model_server: Callable[..., ServerProcess],  # noqa: F811
) -> None:
    server = model_server([{"text": "1"}, {"text": "2"}, {"text": "3"}, {"text": "4"}])
    assert cli.run(*headless(server, "remember 7")).returncode == 0
    done = cli.run(*headless(server, "what was it?"), "-c")
    assert done.returncode == 0, done.stderr
    assert any(m.get("content") == "remember 7" for m in server.requests()[1].body["messages"])
    (first,) = [line.split()[0] for line in cli.run("sessions").stdout.splitlines()[1:]]
    assert cli.run(*headless(server, "unrelated")).returncode == 0  # a new session
    done = cli.run(*headless(server, "and now?"), "-r", first)
    assert done.returncode == 0, done.stderr
    fourth = [m.get("content") for m in server.requests()[3].body["messages"]]
    assert "remember 7" in fourth and "what was it?" in fourth and "unrelated" not in fourth
    picker = cli.run(*headless(server, "x"), "-r")
    assert picker.returncode == 2 and "--resume needs a session id with -p" in picker.stderr


# -- the provider a key picks, and where settings come from --------------------------------------


def test_anthropic_key_alone_picks_anthropic(
    cli: Cli,  # noqa: F811
    model_server: Callable[..., ServerProcess],  # noqa: F811
) -> None:
    server = model_server([{"text": "from claude"}])
    env = {k: v for k, v in cli.env.items() if k != "OPENAI_API_KEY"}
    env["ANTHROPIC_BASE_URL"] = server.anthropic_url
    done = Cli(cli.workspace, env).run("-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "from claude\n"
    assert server.requests()[0].path == "/v1/messages"
    assert server.requests()[0].body["model"] == "claude-sonnet-4-5"
    shown = Cli(cli.workspace, env).run("config")
    assert shown.returncode == 0, shown.stderr
    assert 'name = "anthropic"  # ANTHROPIC_API_KEY is set and OPENAI_API_KEY is not' in (
        shown.stdout
    )
    assert "# API key:          ANTHROPIC_API_KEY (set)" in shown.stdout
    # With both keys (or a provider named anywhere) OpenAI stays the default.
    both = cli.run("config")
    assert 'name = "openai"  # built-in default' in both.stdout


def test_config_says_where_each_setting_came_from(cli: Cli) -> None:  # noqa: F811
    config = Path(cli.env["AGENT_TUI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[provider]\nmodel = "gpt-5"\n\n[agent]\nbatch_size = 3\n')
    (cli.workspace / ".agent-tui.toml").write_text('[approval]\nmode = "read-only"\n')
    env = dict(cli.env, AGENT_TUI_TOOLS__SLEEP="false")
    done = Cli(cli.workspace, env).run("--approval-mode", "ask", "config")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"# user config:      {config / 'config.toml'}" in out
    assert f"# workspace config: {cli.workspace / '.agent-tui.toml'}" in out
    assert f'model = "gpt-5"  # {config / "config.toml"}' in out
    assert f"batch_size = 3  # {config / 'config.toml'}" in out
    assert 'mode = "ask"  # command-line options' in out
    assert "sleep = false  # environment" in out
    assert "sk-dummy" not in out  # keys are never printed
    everything = Cli(cli.workspace, env).run("config", "--all")
    assert "strategy = " in everything.stdout and "strategy = " not in out


def test_no_provider_names_the_config_file(cli: Cli) -> None:  # noqa: F811
    env = {k: v for k, v in cli.env.items() if not k.endswith("_API_KEY")}
    done = Cli(cli.workspace, env).run("-p", "hi")
    assert done.returncode == 2
    assert str(Path(env["AGENT_TUI_CONFIG_DIR"]) / "config.toml") in done.stderr


# -- help and completion ------------------------------------------------------------------------


def test_every_flag_has_a_help_line() -> None:
    assert check_every_flag_has_help() == []
    out = subprocess.run(
        [str(AGENT_TUI), "--help"], capture_output=True, text=True, check=True
    ).stdout
    for flag in ("--continue", "--resume", "--output-format", "completion", "config"):
        assert flag in out


def complete_bash(words: list[str]) -> list[str]:
    script = subprocess.run(
        [str(AGENT_TUI), "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    line = " ".join(json.dumps(word) for word in words)
    probe = (
        f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _agent_tui; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "--norc", "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_flags_choices_and_commands() -> None:
    assert complete_bash(["agent-tui", "--approval-mode", ""]) == [
        "read-only",
        "ask",
        "auto-edit",
        "full-auto",
    ]
    assert "--continue" in complete_bash(["agent-tui", "--con"])
    assert complete_bash(["agent-tui", "comp"]) == ["completion"]
    assert {"bash", "zsh", "fish"} <= set(complete_bash(["agent-tui", "completion", ""]))
    assert "--revoke" in complete_bash(["agent-tui", "trust", "--"])


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_loads_the_completion(tmp_path: Path) -> None:
    script = subprocess.run(
        [str(AGENT_TUI), "completion", "zsh"], capture_output=True, text=True, check=True
    ).stdout
    (tmp_path / "_agent-tui").write_text(script)
    # As zsh's bashcompinit calls it: words and CURRENT, then its compgen -F.
    probe = (
        f"autoload -U compinit && compinit -u -d {tmp_path}/zcompdump; "
        f"source {tmp_path}/_agent-tui; "
        "words=(agent-tui --output-format ''); CURRENT=3; "
        "COMP_WORDS=(\"${words[@]}\"); COMP_CWORD=2; compgen -F _agent_tui -- ''"
    )
    done = subprocess.run(
        ["zsh", "-f", "-c", probe],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["text", "json", "stream-json", "agent-tui-json"]


def test_fish_script_names_every_flag() -> None:
    script = subprocess.run(
        [str(AGENT_TUI), "completion", "fish"], capture_output=True, text=True, check=True
    ).stdout
    assert "complete -c agent-tui -s c -l continue" in script
    assert "-l approval-mode -xa 'read-only ask auto-edit full-auto'" in script
    if shutil.which("fish"):
        done = subprocess.run(["fish", "-n"], input=script, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


# -- the app's own error log --------------------------------------------------------------------


def test_the_log_keeps_tracebacks_and_never_a_key(tmp_path: Path) -> None:
    secret = "sk-test-0123456789abcdef"
    root = logging.getLogger()
    before = list(root.handlers)
    path = start_log(tmp_path / "logs", lambda: [secret])
    try:
        assert path == tmp_path / "logs" / LOG_NAME
        try:
            raise RuntimeError(f"the request with {secret} failed")
        except RuntimeError as error:
            log_error("worker 'one agent turn' failed", error)
        logging.getLogger("httpx2").info("chatter below the level is not kept")
    finally:
        for handler in root.handlers[len(before) :]:
            handler.close()
            root.removeHandler(handler)
    text = path.read_text()
    assert "worker 'one agent turn' failed" in text and "RuntimeError" in text
    assert "Traceback" in text and secret not in text and "[key]" in text
    assert "chatter" not in text


# -- instructions ----------------------------------------------------------------------------------


async def test_claude_md_is_read_where_there_is_no_agents_md(workspace: Path) -> None:
    (workspace / "CLAUDE.md").write_text("Use make test.")
    prompt, _ = await run_once(workspace)
    assert "Use make test." in prompt
    (workspace / "AGENTS.md").write_text("Use tox.")
    prompt, _ = await run_once(workspace)
    assert "Use tox." in prompt and "Use make test." not in prompt  # one file a folder


async def test_the_global_instructions_come_first(workspace: Path) -> None:
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "AGENTS.md").write_text("Always answer in British English.")
    (workspace / "AGENTS.md").write_text("Use tox.")
    prompt, warnings = await run_once(workspace)
    assert "Your own instructions from" in prompt and "British English" in prompt
    assert prompt.index("British English") < prompt.index("Use tox.")
    assert not warnings

"""Bad config files, made by the hundred: every one is a ``file line N`` error, never a
traceback, and ``agent-tui -p`` exits 2 on it.

The bad files come from the settings' own schema (every section and key given values of the
wrong kind, out of range, a table where a value goes and a value where a table goes, unknown
keys) and from broken TOML (a valid default config with characters cut, doubled or added),
placed in the user's config or the workspace's.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server, reason_lines
from tests.test_loop import answer
from tui.config import ConfigError, Settings, load_settings
from tui.config.dump import dump_default_config

__all__ = ["cli", "model_server"]  # fixtures, used by name

BAD_VALUES = [
    '"x"',
    '""',
    "-1",
    "0",
    "99999999999999999999",
    "1.5",
    "inf",
    "nan",
    "-inf",
    "true",
    "[]",
    "[1, 2]",
    '["a", 3]',
    "{}",
    "{ a = 1 }",
    '"a\\u0000b"',
    "1979-05-27T07:32:00Z",
    '"' + "y" * 5000 + '"',
]
SCALARS_FOR_SECTIONS = ['"anthropic"', '"yes"', "3", "true", "[]", '["a"]']
MAP_SECTIONS = {"openapi": "spec", "subagents": "description", "mcp.servers": "command"}


def schema() -> dict[str, list[str]]:
    """Section → its keys (empty for sections that are maps of named tables)."""
    sections: dict[str, list[str]] = {}
    for name, field in Settings.model_fields.items():
        fields = getattr(field.annotation, "model_fields", None)
        sections[name] = list(fields) if fields else []
    return sections


def bad_configs(seed: int = 22) -> Iterator[tuple[str, str]]:
    """(what it is, TOML text) pairs."""
    rng = random.Random(seed)
    sections = schema()
    for section in sections:
        for scalar in SCALARS_FOR_SECTIONS:
            yield f"{section} as a value", f"# a comment\n{section} = {scalar}\n"
        yield f"[{section}] unknown key", f"[{section}]\nno_such_key_here = 1\n"
    for section, keys in sections.items():
        for key in keys:
            for value in rng.sample(BAD_VALUES, 6):
                yield f"[{section}].{key} = {value[:20]}", f"\n[{section}]\n{key} = {value}\n"
            yield f"[{section}.{key}] as a table", f"[{section}.{key}]\nx = 1\n"
    for section, key in MAP_SECTIONS.items():
        for value in rng.sample(BAD_VALUES, 6):
            yield f"[{section}.one].{key} = {value[:20]}", f"[{section}.one]\n{key} = {value}\n"
        yield f"[{section}.one] as a value", f"[{section}]\none = 3\n"
    for event in ("pre_tool_use", "post_tool_use", "post_tool_use_failure"):
        for value in rng.sample(BAD_VALUES, 4):
            yield f"hook {event} {value[:20]}", f"[[hooks.{event}]]\ncommand = {value}\n"
        yield f"hook {event} as a value", f"[hooks]\n{event} = 3\n"
    for host in ("u@h:99999", "u@h:0", "u@h:x", "u@", "a b", "[::1]:70000", ""):
        yield f"ssh host {host}", f'[ssh]\nhost = "{host}"\n'
    text = dump_default_config()
    for index in range(60):
        cut = rng.randrange(len(text))
        broken = {
            0: text[:cut] + text[cut + 1 :],
            1: text[:cut] + '"' + text[cut:],
            2: text[:cut] + "[" + text[cut:],
            3: text[:cut] + "\n= 1\n" + text[cut:],
        }[index % 4]
        yield f"broken TOML #{index}", broken
    yield "a key twice", "[agent]\nmax_turns = 3\nmax_turns = 4\n"
    yield "a table twice", "[agent]\nmax_turns = 3\n[agent]\nstrategy = 'parallel'\n"


def place(text: str, index: int, ws: Path, user: Path) -> Path:
    path = user if index % 2 else ws / ".agent-tui.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_every_bad_config_is_an_error_at_its_file_and_line(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    user = Path(str(tmp_path / "user-config" / "config.toml"))
    errors, loaded = 0, 0
    for index, (what, text) in enumerate(bad_configs()):
        for stale in (user, ws / ".agent-tui.toml"):
            stale.unlink(missing_ok=True)
        path = place(text, index, ws, user)
        try:
            load_settings(ws, env={"AGENT_TUI_CONFIG_DIR": str(user.parent)}, trust=True)
        except ConfigError as error:
            errors += 1
            for issue in error.issues:
                assert issue.source == str(path), (what, str(error))
                assert issue.line is not None and issue.line >= 1, (what, str(error))
        except Exception as error:  # anything else is a crash
            raise AssertionError(f"{what}: {type(error).__name__}: {error}") from error
        else:
            loaded += 1
    print(f"{errors} bad configs refused with file:line, {loaded} valid after all")
    assert errors >= 250


@pytest.fixture
def user_config_dir(cli: Cli) -> Path:
    folder = Path(cli.env["AGENT_TUI_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.slow
@pytest.mark.timeout(360)  # dozens of real starts of the command
def test_the_command_exits_2_with_file_and_line_and_no_traceback(
    cli: Cli,
    model_server: Callable[[list[dict[str, Any]]], ServerProcess],
    user_config_dir: Path,
) -> None:
    server = model_server([answer("fine")] * 200)
    rng = random.Random(7)
    cases = [case for case in bad_configs() if not case[0].startswith("broken TOML")]
    named = {
        "provider as a value",
        "approval as a value",
        "ssh host u@h:99999",
        "[tmux.socket_name] as a table",
        "broken TOML #3",
        "broken TOML #7",
    }
    sample = rng.sample(cases, 30) + [case for case in bad_configs() if case[0] in named]
    sample += [
        case
        for case in cases
        if case[0].startswith(("[agent].json_schema", "[tmux].socket_name", "[provider].base_url"))
    ][::2]
    user = user_config_dir / "config.toml"
    outcomes: dict[int, int] = {}
    for index, (what, text) in enumerate(sample):
        for stale in (user, cli.workspace / ".agent-tui.toml"):
            stale.unlink(missing_ok=True)
        path = place(text, index, cli.workspace, user)
        run = cli.run(*headless(server, "hi", "--trust-workspace"))
        outcomes[run.returncode] = outcomes.get(run.returncode, 0) + 1
        assert "Traceback" not in run.stderr, (what, run.stderr[-2000:])
        if run.returncode == 2:
            (reason,) = reason_lines(run.stderr)
            assert f"config error in {path} line " in reason, (what, reason)
        else:
            assert run.returncode == 0, (what, run.returncode, run.stderr[-2000:])
    print("exit codes:", outcomes)
    assert outcomes.get(2, 0) >= 30 and outcomes.get(0, 0) >= 5


def test_ssh_flag_with_a_bad_port_is_a_usage_error(cli: Cli) -> None:
    run = subprocess.run(
        cli.command("-p", "hi", "--ssh", "user@127.0.0.1:99999"),
        cwd=cli.workspace,
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert reason_lines(run.stderr) == [
        "agent-tui: --ssh: bad port '99999' in SSH target 'user@127.0.0.1:99999'"
    ]

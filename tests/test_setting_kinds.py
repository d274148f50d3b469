"""Workspace settings are deny by default: one table classifies every key, and this fails on a
key it does not know.

The keys are read from the settings models themselves, so a field added to any section — or a
whole new section — fails here until someone writes in ``tui.security.setting_kinds`` what a
cloned repository's ``.agent-tui.toml`` may do with it. Then the cases the table got wrong once:
``[agent] json_schema`` (a file read and sent with every request) and ``loop_ping_pong_cycles =
0`` (a guard turned off) applied untrusted, because the whole ``[agent]`` table counted as
harmless.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, RootModel

from tui.config import Settings, load_settings
from tui.security.setting_kinds import LEAF_TABLES, SETTING_KINDS, kind_of

WHOLE_SECTIONS = {"trust"}
"""Table entries that stand for a whole section (nothing in it comes from a workspace)."""


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def settings_keys(model: type[BaseModel] = Settings, prefix: str = "") -> list[str]:
    """Every key a config file can set, ``*`` for a name the person chooses."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        annotation = field.annotation
        nested = _model_of(annotation)
        if nested is not None and issubclass(nested, RootModel):
            keys.append(f"{path}.*")  # [tools]: NAME = bool
            continue
        if nested is not None:
            keys.extend(settings_keys(nested, f"{path}."))
            continue
        if typing.get_origin(annotation) is dict:
            _, value = typing.get_args(annotation)
            inner = _model_of(value)
            if inner is not None and f"{path}.*" not in LEAF_TABLES:
                keys.extend(settings_keys(inner, f"{path}.*."))
            else:
                keys.append(f"{path}.*")
            continue
        keys.append(path)
    return keys


def test_every_settings_key_is_classified() -> None:
    keys = settings_keys()
    assert "agent.json_schema" in keys and "subagents.*.base_url" in keys  # the walk works
    unclassified = [key for key in keys if kind_of(tuple(key.split("."))) is None]
    assert unclassified == [], (
        f"classify {unclassified} in tui/security/setting_kinds.py SETTING_KINDS: "
        "harmless, tightening, trust or never"
    )


def test_the_table_names_only_keys_that_exist_and_no_section_wholesale() -> None:
    keys = set(settings_keys())
    stale = [key for key in SETTING_KINDS if key not in keys and key not in WHOLE_SECTIONS]
    assert stale == []
    # A section-wide entry would make every future key of it harmless: only "never" may.
    assert all(SETTING_KINDS[key] == "never" for key in WHOLE_SECTIONS)


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[agent]\njson_schema = "~/.docker/config.json"\n', "agent.json_schema"),
        ("[agent]\nloop_ping_pong_cycles = 0\n", "agent.loop_ping_pong_cycles"),
        ("[agent]\nloop_no_progress_repeats = 50\n", "agent.loop_no_progress_repeats"),
        ("[agent]\nsubagent_max_turns = 500\n", "agent.subagent_max_turns"),
        ('[tmux]\nsocket_name = "default"\n', "tmux.socket_name"),
        ('[ssh]\nknown_hosts = "/dev/null"\n', "ssh.known_hosts"),
        ("[cron]\nenabled = true\n", None),  # the default already: nothing changes
    ],
)
def test_what_loosens_or_sends_waits_for_trust(
    tmp_path: Path, config_home: Path, text: str, key: str | None
) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / ".agent-tui.toml").write_text(text)
    loaded = load_settings(workspace, env={})
    held = [change.key for change in loaded.trust.held]
    assert held == ([key] if key else [])
    default = Settings().agent
    assert loaded.settings.agent.json_schema is None
    assert loaded.settings.agent.loop_ping_pong_cycles == default.loop_ping_pong_cycles
    assert loaded.settings.agent.subagent_max_turns == default.subagent_max_turns
    assert loaded.settings.tmux.socket_name is None


def test_a_guard_made_stricter_applies_untrusted(tmp_path: Path, config_home: Path) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / ".agent-tui.toml").write_text(
        '[agent]\nloop_ping_pong_cycles = 2\nmax_turns = 5\nstrategy = "sequential"\n'
        "[cron]\nenabled = false\n"
    )
    loaded = load_settings(workspace, env={})
    assert loaded.trust.held == ()
    agent = loaded.settings.agent
    assert (agent.loop_ping_pong_cycles, agent.max_turns, agent.strategy) == (2, 5, "sequential")
    assert loaded.settings.cron.enabled is False

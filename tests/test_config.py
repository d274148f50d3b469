"""Config layering and error reporting, against real files in a temporary tree."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.config import (
    ConfigError,
    LoadedSettings,
    Settings,
    default_model,
    find_workspace_config,
    key_lines,
    load_settings,
)
from tui.config.dump import dump_default_config
from tui.locations import config_dir
from tui.security.grants import Grant, load_saved_grants, save_grants
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.rules import Rule


@pytest.fixture(autouse=True)
def own_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Independent of conftest: never read the real user's config."""
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(tmp_path / "user-data"))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def user_file(text: str) -> Path:
    return write(config_dir() / "config.toml", text)


def load(ws: Path, **kwargs: object) -> LoadedSettings:
    kwargs.setdefault("env", {})
    return load_settings(ws, **kwargs)  # type: ignore[arg-type]


def error_of(ws: Path, **kwargs: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load(ws, **kwargs)
    return caught.value


# ------------------------------------------------------------------ defaults and layering


def test_defaults_with_no_files(ws: Path) -> None:
    loaded = load(ws)
    s = loaded.settings
    assert s.provider.name == "openai" and s.provider.model == "gpt-4.1"
    assert s.provider.stream is True and s.provider.request_timeout == 600
    assert s.agent.max_turns is None and s.agent.strategy == "parallel"
    assert s.approval.mode is ApprovalMode.ASK and s.approval.timeout is None
    assert s.security.permission_ceiling is PermissionMode.DANGER_FULL_ACCESS
    assert s.tmux.session is None and s.ssh.connect_timeout == 10
    assert s.hooks.pre_tool_use == [] and s.tools.enabled("run_shell")
    assert loaded.sources == []
    assert loaded.user_config_path == config_dir() / "config.toml"
    assert loaded.origin("agent.max_turns") == "built-in default"


def test_model_default_follows_provider(ws: Path) -> None:
    user_file('[provider]\nname = "anthropic"\n')
    assert load(ws).settings.provider.model == default_model("anthropic") == "claude-sonnet-4-5"


LAYERS = ["user", "workspace", "env", "overrides"]


@pytest.mark.parametrize("present", [LAYERS[:n] for n in range(1, 5)], ids=lambda p: p[-1])
def test_each_layer_beats_the_ones_below(ws: Path, present: list[str]) -> None:
    # A harmless key: one a workspace file may set untrusted (a turn cap only tightens).
    env: dict[str, str] = {}
    overrides: dict[str, object] = {}
    if "user" in present:
        user_file("[agent]\nbatch_size = 10\n")
    if "workspace" in present:
        write(ws / ".agent-tui.toml", "[agent]\nbatch_size = 20\n")
    if "env" in present:
        env["AGENT_TUI_AGENT__BATCH_SIZE"] = "30"
    if "overrides" in present:
        overrides = {"agent": {"batch_size": 40}}
    loaded = load(ws, env=env, overrides=overrides)
    assert loaded.settings.agent.batch_size == {1: 10, 2: 20, 3: 30, 4: 40}[len(present)]
    expected_origin = {
        "user": str(config_dir() / "config.toml"),
        "workspace": str(ws / ".agent-tui.toml"),
        "env": "environment",
        "overrides": "command-line options",
    }[present[-1]]
    assert loaded.origin("agent.batch_size") == expected_origin


def test_deep_merge_keeps_keys_a_higher_layer_does_not_set(ws: Path) -> None:
    user_file(
        """
        [provider]
        name = "anthropic"
        base_url = "http://proxy.local"
        [security]
        allow = ["read_file", "run_shell(git status)"]
        [tools]
        run_shell = false
        """
    )
    write(ws / ".agent-tui.toml", '[provider]\nmodel = "claude-opus-4"\n[security]\nallow = []\n')
    loaded = load(ws, env={"AGENT_TUI_TOOLS__WRITE_FILE": "false"})
    s = loaded.settings
    assert s.provider.name == "anthropic" and s.provider.model == "claude-opus-4"
    assert s.provider.base_url == "http://proxy.local"
    assert s.security.allow == [], "lists are replaced, never concatenated"
    assert not s.tools.enabled("run_shell") and not s.tools.enabled("write_file")
    assert s.tools.enabled("read_file")
    assert s.tools.disabled() == ["run_shell", "write_file"]
    assert loaded.sources == [config_dir() / "config.toml", ws / ".agent-tui.toml"]
    assert loaded.origin("provider.name") == str(config_dir() / "config.toml")
    assert loaded.origin("provider.model") == str(ws / ".agent-tui.toml")


def test_overrides_none_means_flag_not_given(ws: Path) -> None:
    user_file('[provider]\nmodel = "from-file"\n')
    s = load(ws, overrides={"provider": {"model": None}, "approval": {"mode": "full-auto"}})
    assert s.settings.provider.model == "from-file"
    assert s.settings.approval.mode is ApprovalMode.FULL_AUTO


def test_env_values_json_lists_and_unrelated_vars(ws: Path) -> None:
    env = {
        "AGENT_TUI_SECURITY__ALLOW": '["read_file", "run_shell(ls:*)"]',
        "AGENT_TUI_PROVIDER__STREAM": "false",
        "AGENT_TUI_APPROVAL__TIMEOUT": "12.5",
        "AGENT_TUI_CONFIG_DIR": "/elsewhere",  # read by tui.locations, not a setting
        "AGENT_TUI_DEBUG": "1",
        "OTHER__THING": "x",
    }
    s = load(ws, env=env).settings
    assert s.security.allow == ["read_file", "run_shell(ls:*)"]
    assert s.provider.stream is False and s.approval.timeout == 12.5


def test_env_defaults_to_process_environment(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TUI_TMUX__SESSION", "from-env")
    assert load_settings(ws).settings.tmux.session == "from-env"


def test_nearest_parent_workspace_file(tmp_path: Path) -> None:
    outer = write(tmp_path / "a" / ".agent-tui.toml", '[tmux]\nsession = "outer"\n')
    inner = write(tmp_path / "a" / "b" / ".agent-tui.toml", '[tmux]\nsession = "inner"\n')
    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    assert find_workspace_config(deep) == inner.resolve()
    loaded = load(deep, trust=True)  # where commands run waits for trust
    assert loaded.settings.tmux.session == "inner"
    assert loaded.workspace_config_path == inner.resolve()
    assert outer.resolve() not in loaded.sources, "only the nearest file is a layer"
    assert find_workspace_config(tmp_path / "a") == outer.resolve()
    lonely = tmp_path / "z"
    lonely.mkdir()
    found = find_workspace_config(lonely)
    assert found is None or tmp_path not in found.parents, "siblings' files are not parents"


def test_saved_grants_are_accepted(ws: Path) -> None:
    path = config_dir() / "config.toml"
    user_file('[approval]\nmode = "auto-edit"\n')
    save_grants(
        path,
        [
            Grant(Rule.parse("run_shell(git status)"), "saved", str(ws), 1700000000.5),
            Grant(Rule.parse("read_file"), "saved", "*", 1700000001.0),
        ],
    )
    s = load(ws).settings
    assert s.approval.mode is ApprovalMode.AUTO_EDIT
    assert [(g.rule, g.workspace) for g in s.approval.grants] == [
        ("run_shell(git status)", str(ws)),
        ("read_file", "*"),
    ]
    assert len(load_saved_grants(path)) == 2


def test_hooks_and_matchers(ws: Path) -> None:
    write(
        ws / ".agent-tui.toml",
        """
        [[hooks.pre_tool_use]]
        matcher = "run_shell"
        command = "echo pre"

        [[hooks.pre_tool_use]]
        matcher = "(read|write)_file"
        command = "echo files"
        timeout = 5

        [hooks]
        post_tool_use = [{command = "echo post"}]
        """,
    )
    hooks = load(ws, trust=True).settings.hooks  # hooks apply once the workspace is trusted
    assert [h.command for h in hooks.pre_tool_use] == ["echo pre", "echo files"]
    assert hooks.pre_tool_use[1].timeout == 5 and hooks.pre_tool_use[0].timeout == 30
    assert hooks.pre_tool_use[1].matches("read_file")
    assert not hooks.pre_tool_use[1].matches("read_file_x")
    assert hooks.post_tool_use[0].matcher == "*" and hooks.post_tool_use[0].matches("anything")


# ------------------------------------------------------------------ errors


def test_toml_syntax_error_names_file_line_and_key(ws: Path) -> None:
    path = write(
        ws / ".agent-tui.toml", '[provider]\nname = "openai"\n\n[agent]\nmax_turns = lots\n'
    )
    err = error_of(ws)
    assert err.source == str(path) and err.line == 5 and err.key == "[agent].max_turns"
    assert str(err).startswith(f"config error in {path} line 5: [agent].max_turns: TOML syntax")


def test_syntax_error_in_a_header(ws: Path) -> None:
    path = user_file("[agent]\nmax_turns = 3\n[agent\n")
    err = error_of(ws)
    assert str(err).startswith(f"config error in {path} line 3: ")
    assert "TOML syntax error" in str(err)


def test_wrong_type_names_file_line_and_key(ws: Path) -> None:
    path = write(
        ws / ".agent-tui.toml",
        """
        # project settings

        [provider]
        model = "gpt-4.1-mini"

        [agent]
        max_turns = "lots"
        """,
    )
    message = str(error_of(ws))
    assert message.startswith(f"config error in {path} line 7: [agent].max_turns: Input should be")
    assert message.endswith('(got "lots")')


def test_error_blames_the_layer_that_set_the_value(ws: Path) -> None:
    user = user_file('[agent]\nstrategy = "parallel"\nbatch_size = "many"\n')
    write(ws / ".agent-tui.toml", "[agent]\nmax_turns = 3\n")
    err = error_of(ws)
    assert err.source == str(user) and err.line == 3 and err.key == "[agent].batch_size"
    # A higher layer that sets a good value hides the bad one entirely.
    write(ws / ".agent-tui.toml", "[agent]\nbatch_size = 2\n")
    assert load(ws).settings.agent.batch_size == 2


def test_deeply_nested_errors_point_at_their_own_lines(ws: Path) -> None:
    path = write(
        ws / ".agent-tui.toml",
        """
        [[hooks.pre_tool_use]]
        command = "ok"

        [[hooks.pre_tool_use]]
        command = "slow"
        timeout = "soon"

        [approval]
        grants = [
            {rule = "read_file", workspace = "*", created = 1.0},
            {rule = "run_shell(ls)", workspace = "*", colour = "red"},
        ]
        """,
    )
    err = error_of(ws)
    found = {issue.key: (issue.source, issue.line) for issue in err.issues}
    assert found["[hooks].pre_tool_use[1].timeout"] == (str(path), 6)
    assert found["[approval].grants[1].colour"] == (str(path), 11)
    assert len(str(err).splitlines()) == 2


def test_missing_required_key_points_at_its_table(ws: Path) -> None:
    path = write(
        ws / ".agent-tui.toml", '[tmux]\nsession = "x"\n\n[[hooks.post_tool_use]]\nmatcher = "*"\n'
    )
    err = error_of(ws)
    assert (err.source, err.line, err.key) == (str(path), 4, "[hooks].post_tool_use[0].command")
    assert "Field required" in str(err) and "got" not in str(err)


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("[agent]\nmax_turns = 5\nmax_turn = 5\n", 3, "[agent].max_turn"),
        ('[provider]\nname = "openai"\n\n[agnet]\nmax_turns = 1\n', 4, "[agnet]"),
        ('agent.max_turns = 1\nagent.colour = "red"\n', 2, "[agent].colour"),
        ('[security]\nallow = []\nallw = ["x"]\n', 3, "[security].allw"),
    ],
    ids=["key", "section", "dotted", "security"],
)
def test_unknown_keys_are_errors(ws: Path, text: str, line: int, key: str) -> None:
    path = write(ws / ".agent-tui.toml", text)
    err = error_of(ws)
    assert (err.source, err.line, err.key) == (str(path), line, key)
    assert "Extra inputs are not permitted" in str(err)


def test_bad_enum_value(ws: Path) -> None:
    path = user_file('[provider]\nname = "openai"\n\n[approval]\ntimeout = 30\nmode = "yolo"\n')
    message = str(error_of(ws))
    assert message.startswith(f"config error in {path} line 6: [approval].mode: ")
    assert "'ask'" in message and "'full-auto'" in message and '(got "yolo")' in message


def test_bad_literal_and_bad_regex_and_bad_rule(ws: Path) -> None:
    path = write(
        ws / ".agent-tui.toml",
        """
        [provider]
        name = "gemini"
        [[hooks.pre_tool_use]]
        matcher = "run_(shell"
        command = "x"
        [approval]
        grants = [{rule = "run shell(x)"}]
        """,
    )
    found = {issue.key: issue.line for issue in error_of(ws).issues}
    assert found == {
        "[provider].name": 2,
        "[hooks].pre_tool_use[0].matcher": 4,
        "[approval].grants[0].rule": 7,
    }
    assert all(issue.source == str(path) for issue in error_of(ws).issues)


def test_env_var_error_names_the_variable(ws: Path) -> None:
    err = error_of(ws, env={"AGENT_TUI_AGENT__MAX_TURNS": "lots"})
    assert str(err) == (
        "config error in environment variable AGENT_TUI_AGENT__MAX_TURNS: [agent].max_turns: "
        'Input should be a valid integer, unable to parse string as an integer (got "lots")'
    )
    assert err.line is None


def test_env_var_unknown_key_names_the_variable(ws: Path) -> None:
    err = error_of(ws, env={"AGENT_TUI_PROVIDR__MODEL": "x"})
    assert err.source == "environment variable AGENT_TUI_PROVIDR__MODEL"
    assert err.key == "[providr]" and "Extra inputs" in str(err)


def test_env_json_list_error_names_the_variable(ws: Path) -> None:
    env = {"AGENT_TUI_HOOKS__PRE_TOOL_USE": '[{"command": "x", "timeout": "later"}]'}
    err = error_of(ws, env=env)
    assert err.source == "environment variable AGENT_TUI_HOOKS__PRE_TOOL_USE"
    assert err.key == "[hooks].pre_tool_use[0].timeout"


def test_override_error_names_the_command_line(ws: Path) -> None:
    err = error_of(ws, overrides={"agent": {"strategy": "random"}})
    assert str(err).startswith("config error in command-line options: [agent].strategy: ")


def test_secret_values_are_not_echoed(ws: Path) -> None:
    user_file("[provider]\napi_key = 123456789\n")
    message = str(error_of(ws))
    assert "[provider].api_key" in message and "123456789" not in message


def test_errors_from_two_files_are_all_reported(ws: Path) -> None:
    user = user_file("[tmux]\nmax_panes = 0\n")
    workspace = write(ws / ".agent-tui.toml", "# remote\n[ssh]\nconnect_timeout = -1\n")
    issues = {(i.source, i.line, i.key) for i in error_of(ws).issues}
    assert issues == {
        (str(user), 2, "[tmux].max_panes"),
        (str(workspace), 3, "[ssh].connect_timeout"),
    }


def test_unreadable_file_is_a_config_error(ws: Path) -> None:
    path = ws / ".agent-tui.toml"
    path.write_bytes(b"\xff\xfe[agent]\n")
    err = error_of(ws)
    assert err.source == str(path) and "cannot read" in str(err)


# ------------------------------------------------------------------ the default file


def test_dump_default_config_is_valid_and_means_the_defaults(ws: Path) -> None:
    text = dump_default_config()
    for section in Settings.model_fields:
        assert f"\n[{section}]\n" in text
    user_file(text)
    assert load(ws).settings == Settings()
    # Uncommenting every '#key = value' default line must still mean exactly the defaults.
    uncommented = uncomment_defaults(text)
    assert uncommented != text
    user_file(uncommented)
    loaded = load(ws)
    assert loaded.settings == Settings()
    assert loaded.origin("agent.max_turns") == str(config_dir() / "config.toml")


def uncomment_defaults(text: str) -> str:
    """Strip the '#' of each '#key = value' line and of a multi-line value's lines."""
    out, in_value = [], False
    for line in text.split("\n"):
        if in_value or re.match(r"^#\w+ = ", line):
            in_value = (in_value or line.endswith("[")) and line != "#]"
            line = line[1:]
        out.append(line)
    return "\n".join(out)


def test_dump_mentions_every_key() -> None:
    text = dump_default_config()
    for name, info in Settings.model_fields.items():
        section = info.annotation
        for key in getattr(section, "model_fields", {}):
            if name == "tools":
                continue
            assert re.search(rf"(?m)^#.*\b{key}\b", text), f"{name}.{key} missing"


# ------------------------------------------------------------------ the key locator


def test_key_lines_skips_strings_that_look_like_toml() -> None:
    text = textwrap.dedent(
        '''
        [agent]
        system_prompt = """
        [provider]
        name = "fake"
        """
        max_turns = 3  # comment [x]
        "quoted.key" = 'it"s'
        [tools]
        'mcp:thing' = true
        [[a.b]]
        [[a.b]]
        c = [1,
          [2, 3], { d = 4 },
        ]
        [a.b.e]
        f = 1
        '''
    ).lstrip("\n")
    lines = key_lines(text)
    assert lines[("agent", "system_prompt")] == 2
    assert ("provider",) not in lines
    assert lines[("agent", "max_turns")] == 6
    assert lines[("agent", "quoted.key")] == 7
    assert lines[("tools", "mcp:thing")] == 9
    assert lines[("a", "b", 1, "c")] == 12
    assert lines[("a", "b", 1, "c", 2, "d")] == 13
    assert lines[("a", "b", 1, "e", "f")] == 16


_names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_scalars = st.one_of(st.integers(), st.booleans(), st.text(max_size=20), st.floats(allow_nan=False))
_values = st.one_of(_scalars, st.lists(_scalars, max_size=3))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_names, st.dictionaries(_names, _values, max_size=5), max_size=4))
def test_key_lines_finds_every_key_tomlkit_writes(doc: dict[str, dict[str, object]]) -> None:
    text = tomlkit.dumps(doc)
    lines = key_lines(text)
    rows = text.split("\n")  # not splitlines(): it also splits on \x85 and \u2028
    for section, table in doc.items():
        for key in table:
            assert rows[lines[(section, key)] - 1].startswith(f"{key} ="), (section, key, text)

"""``agent-tui config`` (the settings in effect and where each came from) and
``agent-tui completion bash|zsh|fish`` (a completion script written from the parser itself, so
a new flag completes without anyone remembering to add it)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tui.cli_args import SUBCOMMANDS, build_parser

DEFAULT = "built-in default"
ESSENTIAL = ("provider.name", "provider.model", "approval.mode", "sandbox.mode")
"""Shown even when they are the defaults: what a person asks first."""
SKIPPED = ("trust", "approval.grants")
"""Records, not settings: counted, never printed."""
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}


def _leaves(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, dict) and data and not prefix.startswith(("mcp.servers.", "openapi.")):
        for key, value in data.items():
            yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, data


def settings_report(
    loaded: Any, environ: Mapping[str, str], *, everything: bool = False
) -> list[str]:
    """The lines of ``agent-tui config``: files first, then ``key = value  # origin``."""
    from tui.config.provider_choice import set_by

    trust = loaded.trust
    user = loaded.user_config_path
    lines = [f"# user config:      {user}{'' if user.is_file() else ' (not written yet)'}"]
    workspace_file = loaded.workspace_config_path
    if workspace_file is not None:
        state = (
            "trusted"
            if trust.trusted
            else f"untrusted: {len(trust.held)} setting(s) wait for /trust"
            if trust.held
            else "only tightens"
        )
        lines.append(f"# workspace config: {workspace_file} ({state})")
    else:
        lines.append("# workspace config: none")
    settings = loaded.settings
    variable = KEY_VARIABLES.get(settings.provider.name, "")
    if settings.provider.api_key is not None:
        key_from = f"provider.api_key in {set_by(loaded, 'provider.api_key')}"
    elif environ.get(variable, "").strip():
        key_from = f"{variable} (set)"
    else:
        key_from = f"none: {variable} is not set"
    lines.append(f"# API key:          {key_from}")
    records = len(settings.trust.workspaces)
    lines.append(f"# trusted workspaces recorded: {records}")
    section = ""
    for key, value in _leaves(settings.model_dump(mode="json")):
        if key.startswith(SKIPPED) or key == "provider.api_key":
            continue
        origin = set_by(loaded, key)
        if not everything and origin == DEFAULT and key not in ESSENTIAL:
            continue
        head = key.split(".", 1)[0]
        if head != section:
            section = head
            lines.append(f"\n[{head}]")
        name = key.split(".", 1)[1] if "." in key else key
        rendered = json.dumps(value, ensure_ascii=False)
        lines.append(f"{name} = {rendered}  # {origin}")
    return lines


def config_command(loaded: Any, environ: Mapping[str, str], *, everything: bool) -> int:
    print("\n".join(settings_report(loaded, environ, everything=everything)))
    return 0


# -- completion ----------------------------------------------------------------------------------


def _option_words(parser: argparse.ArgumentParser) -> list[str]:
    return [
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") or len(option) == 2
    ]


def _choices(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for action in parser._actions:
        if action.choices and action.option_strings:
            for option in action.option_strings:
                found[option] = [str(choice) for choice in action.choices]
    return found


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def bash_script() -> str:
    parser = build_parser()
    options = " ".join(_option_words(parser))
    cases = "\n".join(
        f"        {option}) COMPREPLY=($(compgen -W '{' '.join(values)}' -- \"$cur\")); return;;"
        for option, values in _choices(parser).items()
    )
    paths = "--workspace|--json-schema"
    subs = _subparsers(parser)
    sub_cases = "\n".join(
        f"        {name}) words='{' '.join(_option_words(sub))} "
        f"{' '.join(_positional_choices(sub))}';;"
        for name, sub in subs.items()
    )
    return f"""# agent-tui completion for bash: eval "$(agent-tui completion bash)"
_agent_tui() {{
    local cur prev words command i
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    case "$prev" in
{cases}
        {paths}) COMPREPLY=($(compgen -f -- "$cur")); return;;
    esac
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            {"|".join(SUBCOMMANDS)}) command="${{COMP_WORDS[i]}}"; break;;
        esac
    done
    case "$command" in
{sub_cases}
        *) words='{options} {" ".join(SUBCOMMANDS)}';;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -F _agent_tui agent-tui
"""


def _positional_choices(parser: argparse.ArgumentParser) -> list[str]:
    return [
        str(choice)
        for action in parser._actions
        if not action.option_strings and action.choices
        for choice in action.choices
    ]


def zsh_script() -> str:
    return (
        "#compdef agent-tui\n"
        '# agent-tui completion for zsh: eval "$(agent-tui completion zsh)"\n'
        "autoload -U +X bashcompinit && bashcompinit\n" + bash_script().split("\n", 1)[1]
    )


def fish_script() -> str:
    parser = build_parser()
    lines = ["# agent-tui completion for fish: agent-tui completion fish | source"]
    lines.append("complete -c agent-tui -f")
    condition = "not __fish_seen_subcommand_from " + " ".join(SUBCOMMANDS)
    for name, text in _sub_helps(parser).items():
        lines.append(f"complete -c agent-tui -n '{condition}' -a {name} -d {_quote(text)}")
    for action in parser._actions:
        lines.extend(_fish_option(action, ""))
    for name, sub in _subparsers(parser).items():
        for action in sub._actions:
            lines.extend(_fish_option(action, f"__fish_seen_subcommand_from {name}"))
        choices = _positional_choices(sub)
        if choices:
            lines.append(
                f"complete -c agent-tui -n '__fish_seen_subcommand_from {name}' "
                f"-a '{' '.join(choices)}'"
            )
    return "\n".join(lines) + "\n"


def _sub_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each sub-command's one-line help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def _fish_option(action: argparse.Action, condition: str) -> list[str]:
    if not action.option_strings or "--help" in action.option_strings:
        return []
    parts = ["complete -c agent-tui"]
    if condition:
        parts.append(f"-n '{condition}'")
    for option in action.option_strings:
        if option.startswith("--"):
            parts.append(f"-l {option[2:]}")
        elif len(option) == 2:
            parts.append(f"-s {option[1]}")
    if action.choices:
        parts.append(f"-xa '{' '.join(str(c) for c in action.choices)}'")
    elif action.nargs != 0 and action.metavar is not None and action.type is Path:
        parts.append("-r -F")
    elif action.nargs not in (0, "?") and not isinstance(action, argparse._StoreTrueAction):
        parts.append("-r")
    parts.append(f"-d {_quote(action.help or '')}")
    return [" ".join(parts)]


def _quote(text: str) -> str:
    return "'" + " ".join(text.split()).replace("'", "\\'") + "'"


SCRIPTS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}


def completion_command(shell: str) -> int:
    print(SCRIPTS[shell](), end="")
    return 0


def check_every_flag_has_help(parser: argparse.ArgumentParser | None = None) -> list[str]:
    """Flags and arguments without a help line (a test keeps this empty)."""
    parser = parser or build_parser()
    missing = [
        "/".join(action.option_strings) or action.dest
        for action in parser._actions
        if not action.help and action.dest not in ("help", "command")
    ]
    for name, sub in _subparsers(parser).items():
        missing += [f"{name} {m}" for m in check_every_flag_has_help(sub)]
    return missing

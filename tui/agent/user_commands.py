"""Slash commands from Markdown files, and skills called by name, as Claude Code has them.

A command is a file: ``.agent-tui/commands/NAME.md`` or ``.claude/commands/NAME.md`` in the
workspace (once it is trusted), ``commands/NAME.md`` in agent-tui's config folder or
``~/.claude/commands/NAME.md``; a file in a sub-folder is ``/sub:NAME``. Optional YAML front
matter gives its ``description`` and ``argument-hint``. Typing ``/NAME args`` sends the body
with ``$ARGUMENTS`` replaced by ``args`` and ``$1`` … ``$9`` by its words (with no placeholder,
the arguments follow the text as ``ARGUMENTS: …``, as Claude Code does); an ``@path`` in it is
attached like one typed by hand. Lines of the form ``!`command``` are sent as written: a file
never runs a program by being typed.

A skill (``tui.tools.builtin.skill``) is a command too: ``/deploy staging`` sends the skill's
instructions with the arguments. Commands win over skills of the same name, the workspace's
over the person's, and built-in commands over both.

Every file passes the prompt-file screen first (a command linked to a key is not read).
"""

from __future__ import annotations

import re
from pathlib import Path

from tui.locations import config_dir
from tui.security.paths import PathGuard
from tui.security.prompt_files import read_prompt_file
from tui.security.workspace_prompts import COMMAND_DIRS, command_files, command_name
from tui.tools.builtin.catalog import claude_skills_dir, user_skills_dir
from tui.tools.builtin.skill import (
    SkillFileError,
    list_skills,
    parse_skill_file,
    read_skill_text,
    skill_body,
)
from tui.views import UserCommand

MAX_COMMAND_CHARS = 60_000
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
_POSITIONAL = re.compile(r"\$([1-9])")


INIT_PROMPT = """Look at this repository and write an AGENTS.md at its root for agents (and \
people) who will work in it. Read before writing: the README, the build and package files \
(pyproject.toml, package.json, Makefile, Cargo.toml, go.mod …), the CI configuration, the \
layout of the source and test folders, and an existing AGENTS.md or CLAUDE.md if there is one \
(then improve it rather than starting over). Say, briefly and concretely: how to set up, \
build, run the tests (one test too) and lint; how the code is laid out; the conventions the \
code follows that are not obvious; and what to be careful with. Keep it under about 80 \
lines, commands in code blocks, no generic advice. Write it with write_file (or edit_file for \
an existing one)."""
"""What ``/init`` asks of the agent: it looks, then writes the file through the usual
approvals, as Codex's and Claude Code's ``/init`` do."""


def user_folders() -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """The person's command folders and skill folders (agent-tui's first, then Claude
    Code's)."""
    commands = (config_dir() / "commands", Path.home() / ".claude" / "commands")
    return commands, (user_skills_dir(), claude_skills_dir())


def _front_matter(text: str) -> tuple[dict[str, object], str]:
    match = _FRONT_MATTER.match(text.removeprefix("\ufeff"))
    if match is None:
        return {}, text
    import yaml  # type: ignore[import-untyped]

    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        data = None
    return (data if isinstance(data, dict) else {}), text[match.end() :]


def _describe(path: Path) -> tuple[str, str]:
    """A command file's description and argument hint (its first line when it has none)."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:4000]
    except OSError:
        return "", ""
    meta, body = _front_matter(head)
    description = meta.get("description")
    hint = meta.get("argument-hint", "")
    if isinstance(hint, list):  # ``[pr-number]`` is a YAML list: the brackets were meant
        hint = " ".join(f"[{item}]" for item in hint)
    if not isinstance(description, str) or not description.strip():
        first = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
        description = first[:80]
    return " ".join(str(description).split())[:200], str(hint or "")[:80]


def command_folders(
    workspace: Path | None, user_folders: tuple[Path, ...]
) -> list[tuple[Path, str]]:
    """Where command files are looked for, first found first (``workspace`` None: untrusted
    or not on this machine)."""
    folders = (
        [(workspace / relative, "workspace") for relative in COMMAND_DIRS] if workspace else []
    )
    return [*folders, *((folder, "user") for folder in user_folders)]


def find_commands(
    workspace: Path | None,
    user_folders: tuple[Path, ...],
    skill_user_dirs: tuple[Path, ...] = (),
    reserved: frozenset[str] = frozenset(),
) -> list[UserCommand]:
    """Every command and skill that ``/NAME`` can call, sorted by name. Blocking (reads files).

    Args:
        workspace: The trusted workspace (None: only the person's own).
        user_folders: The person's command folders.
        skill_user_dirs: The person's skill folders (agent-tui's first).
        reserved: Built-in command names, which nothing here may take.
    """
    found: dict[str, UserCommand] = {}
    for folder, source in command_folders(workspace, user_folders):
        for path in command_files(folder):
            name = command_name(folder, path).lower()
            if name in found or name in reserved or not re.fullmatch(r"[\w.:-]+", name):
                continue
            description, hint = _describe(path)
            found[name] = UserCommand(name, description, path, source, "command", hint)
    if skill_user_dirs:
        scan = list_skills(workspace, skill_user_dirs[0], skill_user_dirs[1:])
        for skill in scan.skills:
            name = skill.name.lower()
            if name in found or name in reserved or not re.fullmatch(r"[\w.:-]+", name):
                continue
            found[name] = UserCommand(
                name, skill.description, skill.skill_file, skill.source, "skill"
            )
    return sorted(found.values(), key=lambda command: command.name)


def expand(command: UserCommand, arguments: str, guard: PathGuard) -> str:
    """The message ``/NAME arguments`` sends.

    Raises:
        ValueError: the file cannot be read into a prompt (the message says why).
    """
    if command.kind == "skill":
        return _skill_message(command, arguments, guard)
    text, refusal = read_prompt_file(command.path, guard, MAX_COMMAND_CHARS)
    if text is None:
        raise ValueError(refusal or f"{command.path} cannot be read")
    _, body = _front_matter(text)
    body = body.strip()
    words = arguments.split()
    placed = "$ARGUMENTS" in body or _POSITIONAL.search(body) is not None
    body = body.replace("$ARGUMENTS", arguments)
    body = _POSITIONAL.sub(
        lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", body
    )
    if arguments and not placed:
        body += f"\n\nARGUMENTS: {arguments}"
    return body


def _skill_message(command: UserCommand, arguments: str, guard: PathGuard) -> str:
    text, refusal = read_prompt_file(command.path, guard, MAX_COMMAND_CHARS)
    if text is None:
        raise ValueError(refusal or f"{command.path} cannot be read")
    try:
        skill = parse_skill_file(read_skill_text(command.path), command.path.parent, command.source)
        body = skill_body(skill)
    except SkillFileError as error:
        raise ValueError(f"skill {command.name}: {error}") from None
    lines = [
        f"Use the skill {skill.name!r} (its folder: {skill.folder}; read its other files with "
        "read_file when the instructions say so). Its instructions:",
        "",
        body,
    ]
    if arguments:
        lines += ["", f"ARGUMENTS: {arguments}"]
    return "\n".join(lines)

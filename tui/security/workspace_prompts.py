"""A workspace's own prompt text: its slash commands and its skills, held until it is trusted.

A cloned repository's ``.claude/commands/review.md`` or ``.agents/skills/deploy/SKILL.md`` is
text the repository's author wrote, sent to the model when a command is typed or a skill is
loaded, and a skill may tell the model to run its scripts. So, like the settings that send data
or run programs, they wait for trust: the trust screen lists them (each file by name), their
bytes are part of the digest trust is recorded under, and until then only the person's own
commands and skills (in the config folder, ``~/.claude``) are offered.
"""

from __future__ import annotations

import os
from pathlib import Path

from tui.security.trust_review import HeldChange

COMMAND_DIRS = (".agent-tui/commands", ".claude/commands")
"""A workspace's slash commands: ``NAME.md`` (``sub/NAME.md`` is ``/sub:NAME``)."""
SKILL_DIRS = (".agent-tui/skills", ".claude/skills", ".agents/skills")
"""A workspace's skills: ``NAME/SKILL.md``."""
MAX_FILES = 400
"""Of one folder: a repository cannot make start-up walk a huge tree."""
SKIP = frozenset({".git", "node_modules", "__pycache__", ".venv"})


def command_files(root: Path) -> list[Path]:
    """Every ``*.md`` under ``root`` (sorted; none when it is not a folder)."""
    found: list[Path] = []
    if not root.is_dir():
        return found
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        for name in sorted(files):
            if name.endswith(".md"):
                found.append(Path(folder) / name)
                if len(found) >= MAX_FILES:
                    return found
    return found


def skill_files(root: Path) -> list[Path]:
    """Every ``*/SKILL.md`` directly under ``root`` (sorted)."""
    try:
        folders = sorted(entry for entry in root.iterdir() if entry.is_dir())
    except OSError:
        return []
    return [folder / "SKILL.md" for folder in folders if (folder / "SKILL.md").is_file()][
        :MAX_FILES
    ]


def workspace_prompt_files(workspace: Path) -> list[tuple[str, list[Path]]]:
    """Each prompt folder of the workspace that has files, with them."""
    found: list[tuple[str, list[Path]]] = []
    for relative in COMMAND_DIRS:
        files = command_files(workspace / relative)
        if files:
            found.append((relative, files))
    for relative in SKILL_DIRS:
        files = skill_files(workspace / relative)
        if files:
            found.append((relative, files))
    return found


def review_prompt_files(workspace: Path) -> list[HeldChange]:
    """What trusting would add to what the model is sent, one entry a folder."""
    changes = []
    for relative, files in workspace_prompt_files(workspace):
        root = workspace / relative
        if relative in COMMAND_DIRS:
            names = [command_name(root, path) for path in files]
            shown = ", ".join(f"/{name}" for name in names[:6])
            more = f" and {len(names) - 6} more" if len(names) > 6 else ""
            effect = (
                f"{len(names)} slash command(s) ({shown}{more}) whose text is sent to the model "
                "when you type them"
            )
        else:
            names = [path.parent.name for path in files]
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            effect = (
                f"{len(names)} skill(s) ({shown}) the model is told of and may load, and you "
                "may call as /name; a skill's instructions can ask for its scripts to run"
            )
        changes.append(
            HeldChange(relative, effect, "sends", str(root), tuple(str(path) for path in files))
        )
    return changes


def command_name(root: Path, path: Path) -> str:
    """``root/frontend/test.md`` → ``frontend:test`` (Claude Code's namespaced form)."""
    relative = path.relative_to(root).with_suffix("")
    return ":".join(relative.parts)

"""``skill``: load a skill, a folder of instructions (and helper files) for one kind of task.

A skill is the common agent-skills format: a folder holding ``SKILL.md``, which starts with
YAML front matter (``name``, ``description``, optionally more keys) followed by markdown
instructions. The model sees only names and descriptions in the tool's description (cheap),
and loads a skill's full instructions when a task calls for it.

Why it is built this way:

* Skills are looked up in the workspace first (``.agent-tui/skills``, ``.claude/skills``, then
  ``.agents/skills``) and then in the person's folders (agent-tui's, then ``~/.claude/skills``),
  so a project can override a personal skill of the same name. The session passes the
  workspace only once it is trusted (``tui.security.workspace_prompts``).
* They are scanned again on every call: a skill written during the session loads at once.
* A broken ``SKILL.md`` (bad YAML, no description, unreadable) is skipped and reported in
  ``problems``; one bad folder never hides the others or breaks the tool.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from tui.errors import NotFound, PermissionDenied
from tui.security.permissions import PermissionMode
from tui.security.prompt_files import default_guard, prompt_file_refusal
from tui.security.workspace_prompts import SKILL_DIRS
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.secret_screen import SecretScreen
from tui.tools.truncation import TruncationRule

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 512 * 1024
"""A SKILL.md above this is skipped: instructions that long would swamp the context anyway."""
MAX_LISTING_CHARS = 4000
"""Of the tool description spent on the list of available skills."""
MAX_DESCRIPTION_CHARS = 300
"""Of one skill's description in that list."""
MAX_LISTED_FILES = 200
MAX_SUGGESTIONS = 20
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".mypy_cache"})

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Skill:
    """One loadable skill (its instructions are read again when it is loaded)."""

    name: str
    description: str
    folder: Path
    source: str
    """Where it was found: ``workspace`` or ``user``."""
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """The other front-matter keys (``license``, ``allowed-tools`` …), as written."""

    @property
    def skill_file(self) -> Path:
        return self.folder / SKILL_FILE


@dataclass
class SkillScan:
    """Every skill found, which were shadowed by a same-named one, and what could not load."""

    skills: list[Skill] = field(default_factory=list)
    shadowed: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        for skill in self.skills:
            if skill.name == name:
                return skill
        lowered = name.strip().lower()
        for skill in self.skills:
            if skill.name.lower() == lowered:
                return skill
        return None

    def closest(self, name: str) -> list[str]:
        """Every skill name, the most similar to ``name`` first."""
        target = name.strip().lower()

        def similarity(candidate: str) -> float:
            lowered = candidate.lower()
            bonus = 0.5 if target and (target in lowered or lowered in target) else 0.0
            return difflib.SequenceMatcher(None, target, lowered).ratio() + bonus

        return sorted((s.name for s in self.skills), key=lambda n: (-similarity(n), n))


class SkillFileError(Exception):
    """A SKILL.md that cannot be used, with the reason in words."""


def skill_roots(
    workspace: Path | None, user_dir: Path, more_user_dirs: tuple[Path, ...] = ()
) -> list[tuple[Path, str]]:
    """The folders holding skill folders, highest precedence first (``workspace`` None: a
    workspace on another machine, whose folders are not readable here, or not trusted)."""
    roots: list[tuple[Path, str]] = []
    if workspace is not None:
        roots.extend((workspace / relative, "workspace") for relative in SKILL_DIRS)
    roots.append((user_dir, "user"))
    roots.extend((folder, "user") for folder in more_user_dirs)
    return roots


def parse_skill_file(text: str, folder: Path, source: str) -> Skill:
    """A Skill from the text of a SKILL.md. Raises SkillFileError saying what is wrong."""
    match = _FRONT_MATTER.match(text.removeprefix("\ufeff"))
    if match is None:
        raise SkillFileError(
            "no YAML front matter: the file must start with a '---' line, then name: and "
            "description:, then a closing '---' line"
        )
    import yaml  # type: ignore[import-untyped]  # ~10 ms, only where skills exist

    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as error:
        reason = " ".join(str(error).split())
        raise SkillFileError(f"front matter is not valid YAML ({reason[:200]})") from None
    if not isinstance(data, dict):
        raise SkillFileError("front matter must be a mapping of keys (name:, description:)")
    name = data.get("name", folder.name)
    if not isinstance(name, str) or not name.strip():
        raise SkillFileError("name must be a non-empty string")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFileError("description is missing or empty (it says when to use the skill)")
    metadata = {str(k): v for k, v in data.items() if k not in ("name", "description")}
    return Skill(name.strip(), " ".join(description.split()), folder, source, metadata)


def read_skill_text(path: Path) -> str:
    """The text of a SKILL.md. Raises SkillFileError (too big, unreadable, not UTF-8)."""
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_BYTES:
            raise SkillFileError(f"{size} bytes, above the {MAX_SKILL_BYTES // 1024} KB limit")
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkillFileError(f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise SkillFileError(f"cannot read it ({error.strerror or error})") from None


def list_skills(
    workspace: Path | None, user_dir: Path, more_user_dirs: tuple[Path, ...] = ()
) -> SkillScan:
    """Scan every skill root; the first skill of a name wins (the workspace over the user).

    Blocking (it reads files): call it from a worker thread in async code.
    """
    scan = SkillScan()
    seen: dict[str, Skill] = {}
    # Descriptions go into the tool's description, so into every request: the same screen
    # as any file read into the prompt (a SKILL.md linked to a key or into /proc is skipped).
    guard = default_guard(workspace or user_dir)
    for root, source in skill_roots(workspace, user_dir, more_user_dirs):
        try:
            folders = sorted(entry for entry in root.iterdir() if entry.is_dir())
        except OSError:
            continue  # no such root: nothing installed there
        for folder in folders:
            skill_file = folder / SKILL_FILE
            if not skill_file.is_file():
                continue
            refusal = prompt_file_refusal(skill_file, guard)
            if refusal is not None:
                scan.problems.append(f"{skill_file}: skipped, {refusal}")
                continue
            try:
                skill = parse_skill_file(read_skill_text(skill_file), folder, source)
            except SkillFileError as error:
                scan.problems.append(f"{skill_file}: skipped, {error}")
                continue
            if skill.name in seen:
                scan.shadowed.append(skill)
                continue
            seen[skill.name] = skill
            scan.skills.append(skill)
    scan.skills.sort(key=lambda s: s.name.lower())
    return scan


def skill_body(skill: Skill) -> str:
    """The instructions of a skill: its SKILL.md after the front matter."""
    text = read_skill_text(skill.skill_file).removeprefix("\ufeff")
    match = _FRONT_MATTER.match(text)
    return (text[match.end() :] if match else text).strip()


def skill_files(folder: Path) -> tuple[list[str], bool]:
    """The other files in a skill's folder, relative and sorted; True when the list was cut."""
    found: list[str] = []
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            relative = Path(current, name).relative_to(folder).as_posix()
            if relative == SKILL_FILE:
                continue
            if len(found) >= MAX_LISTED_FILES:
                return found, True
            found.append(relative)
    return found, False


def format_skill_list(scan: SkillScan, limit: int | None = None) -> str:
    """One line per skill (``- name: description``), for the tool description and /skills."""
    lines: list[str] = []
    used = 0
    for index, skill in enumerate(scan.skills):
        description = skill.description
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        line = f"- {skill.name}: {description}"
        if limit is not None and used + len(line) > limit:
            lines.append(f"- … and {len(scan.skills) - index} more (ask for one by name)")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


class SkillParams(ToolParams):
    name: str = Field(min_length=1, description="The name of the skill to load.")


class SkillTool(Tool[SkillParams]):
    name = "skill"
    label = "Skill"
    Params = SkillParams
    permission = PermissionMode.READ_ONLY
    truncation = TruncationRule.head(30000)
    aliases: ClassVar[dict[str, str]] = {"skill": "name", "skill_name": "name"}

    def __init__(
        self, workspace: Path | None, user_dir: Path, more_user_dirs: tuple[Path, ...] = ()
    ) -> None:
        self.workspace = workspace
        self.user_dir = user_dir
        self.more_user_dirs = more_user_dirs
        initial = list_skills(workspace, user_dir, more_user_dirs)
        self.problems: list[str] = initial.problems
        """What could not be loaded when the tool was made (for a warning at startup)."""
        self.description = self._describe(initial)  # type: ignore[misc]

    def _describe(self, scan: SkillScan) -> str:
        if scan.skills:
            listing = format_skill_list(scan, MAX_LISTING_CHARS)
            example = scan.skills[0].name
        else:
            listing = (
                "(none installed right now. A skill is a folder with a SKILL.md in "
                "<workspace>/.agent-tui/skills/, .claude/skills/, .agents/skills/, "
                f"{self.user_dir}/ or ~/.claude/skills/)"
            )
            example = "pdf-forms"
        return f"""Load a skill: expert instructions (and helper files) for one kind of task.

Available skills:
{listing}

When to use: the task matches a skill's description above; load it before starting the
work, then follow its instructions.
When NOT to use: no listed skill fits the task; reading ordinary files (use read_file).
Disambiguation: returns the skill's instructions, its folder path and the other files in
that folder (read them with read_file, run its scripts with run_shell, when the instructions
say so). A skill added during the session can be loaded by name too.
Examples: {{"name": "{example}"}}"""

    def access(self, params: SkillParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY, subject=params.name, acting=False)

    async def execute(self, params: SkillParams, ctx: ToolContext) -> ToolResult:
        scan = await asyncio.to_thread(
            list_skills, self.workspace, self.user_dir, self.more_user_dirs
        )
        skill = scan.get(params.name)
        if skill is None:
            raise NotFound(self._unknown(params.name, scan))
        screen = SecretScreen.of(ctx)
        refusal = await asyncio.to_thread(prompt_file_refusal, skill.skill_file, screen.guard)
        if refusal is not None or await asyncio.to_thread(screen.hides, str(skill.skill_file)):
            # A SKILL.md that is a link to a key would hand the key over as instructions.
            raise PermissionDenied(
                f"skill {skill.name!r}: {skill.skill_file} is (or links to) a secret; "
                "it is not loaded"
            )
        try:
            body = await asyncio.to_thread(skill_body, skill)
        except SkillFileError as error:
            raise NotFound(f"skill {skill.name!r} could not be read: {error}") from None
        files, cut = await asyncio.to_thread(skill_files, skill.folder)
        files = await asyncio.to_thread(
            lambda: [name for name in files if not screen.hides(str(skill.folder / name))]
        )
        lines = [
            f"# Skill: {skill.name}",
            f"Description: {skill.description}",
            f"Folder: {skill.folder}",
        ]
        if files:
            lines.append("Other files in the folder (paths relative to it):")
            lines.extend(f"- {name}" for name in files)
            if cut:
                lines.append(f"- … more files not listed (first {MAX_LISTED_FILES} shown)")
        else:
            lines.append("Other files in the folder: none")
        if screen.withheld:
            lines.append(screen.note().rstrip("\n"))
        lines += ["", "## Instructions", body or "(the SKILL.md has no instructions after it)"]
        details: dict[str, Any] = {
            "name": skill.name,
            "folder": str(skill.folder),
            "source": skill.source,
            "files": files,
            "metadata": skill.metadata,
        }
        shadowed = [s for s in scan.shadowed if s.name == skill.name]
        if shadowed:
            details["shadowed"] = [str(s.folder) for s in shadowed]
        return ToolResult("\n".join(lines), details)

    def _unknown(self, name: str, scan: SkillScan) -> str:
        if not scan.skills:
            text = f"no skill named {name!r}: no skills are installed"
        else:
            names = scan.closest(name)
            shown = ", ".join(names[:MAX_SUGGESTIONS])
            more = (
                f" (and {len(names) - MAX_SUGGESTIONS} more)"
                if len(names) > MAX_SUGGESTIONS
                else ""
            )
            text = f"no skill named {name!r}. Available skills, closest first: {shown}{more}"
        related = [p for p in scan.problems if f"{os.sep}{name}{os.sep}" in p]
        if related:
            text += ". " + " ".join(related[:3])
        return text


def skill_tools(
    workspace: Path | None, user_dir: Path, more_user_dirs: tuple[Path, ...] = ()
) -> list[Tool[Any]]:
    """The skill tool for a workspace; ``user_dir`` is normally ``config_dir() / "skills"``,
    ``more_user_dirs`` ``~/.claude/skills``."""
    return [SkillTool(workspace, user_dir, more_user_dirs)]

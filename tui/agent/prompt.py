"""The system prompt: who the agent is, where it runs, the person's own instructions and the
project's (each file through the secret screen: ``tui.security.prompt_files``).

Instructions are read as Codex and Claude Code users keep them: the person's global file in the
config folder (``AGENTS.md``, else ``CLAUDE.md``), then, from the repository root down to the
workspace, each folder's ``AGENTS.md`` — or its ``CLAUDE.md`` where there is no readable
``AGENTS.md`` (a repository written for Claude Code; one file a folder, so a ``CLAUDE.md`` that
repeats the ``AGENTS.md`` beside it is not sent twice).
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Sequence
from pathlib import Path

from tui.security.paths import PathGuard
from tui.security.prompt_files import default_guard, read_prompt_file

BASE_PROMPT = """You are agent-tui, an agent that does ops and coding work through tools.
A person watches every tool call live and approves risky ones; they can take over the shell.

How to work:
- Use the tools to inspect before you change. Prefer the dedicated file tools over shell
  equivalents (read_file over cat, edit_file over sed).
- Say why in a command's `why` field; be honest in its `risk` field.
- A tool result is JSON: {"harness_timestamp": ..., "result": ...}. Long output is cut; the
  marker says how much and where the whole output was saved (page it with read_file).
- If a call is denied, do not retry it unchanged: read the reason, then adapt or ask.
- Keep answers short and concrete. When the task is done, say what you did."""

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
"""The instruction files of a folder, the first readable one read."""
MAX_AGENTS_CHARS = 20_000


def project_root(workspace: Path) -> Path:
    """The nearest folder holding ``.git``, else the workspace itself."""
    for folder in (workspace, *workspace.parents):
        if (folder / ".git").exists():
            return folder
    return workspace


def instruction_folders(workspace: Path) -> list[Path]:
    """The folders from the repository root down to the workspace, outermost first."""
    root = project_root(workspace)
    chain = [workspace]
    if root != workspace:
        chain.extend(parent for parent in workspace.parents if parent.is_relative_to(root))
    return list(reversed(chain))


def candidates(folder: Path) -> list[Path]:
    """The instruction files a folder has, in order of preference (a link counts: whether it
    may be read is the guard's to say)."""
    return [
        folder / name
        for name in INSTRUCTION_FILES
        if (folder / name).is_file() or (folder / name).is_symlink()
    ]


def build_system_prompt(
    workspace: Path,
    *,
    actor: str = "local",
    extra: str | None = None,
    tools: Sequence[str] = (),
    guard: PathGuard | None = None,
    notes: list[str] | None = None,
    global_folder: Path | None = None,
) -> str:
    """The system prompt. Instruction files pass the secret screen first (``guard``: the
    session's path guard; the built-in secret places without one); each one refused is said
    in ``notes``. ``global_folder`` holds the person's own instructions (the config folder)."""
    now = datetime.datetime.now().astimezone()
    parts = [
        BASE_PROMPT,
        f"Environment: workspace {workspace}; commands run on {actor}; "
        f"{platform.system()} {platform.release()}; today is {now:%A %Y-%m-%d}.",
    ]
    if tools:
        parts.append("Tools available: " + ", ".join(tools) + ".")
    guard = guard if guard is not None else default_guard(workspace)
    budget = MAX_AGENTS_CHARS
    folders = [(global_folder, "Your own instructions")] if global_folder is not None else []
    folders += [(folder, "Project instructions") for folder in instruction_folders(workspace)]
    for folder, heading in folders:
        for path in candidates(folder):
            if budget <= 0:
                break
            text, refusal = read_prompt_file(path, guard, budget)
            if text is None:
                if notes is not None and refusal is not None:
                    notes.append(f"{heading.lower()} not read: {refusal}")
                continue  # an unreadable AGENTS.md: the folder's CLAUDE.md is next
            text = text.strip()
            if len(text) > budget:
                text = text[:budget] + f"\n[{path.name} cut here]"
            budget -= len(text)
            parts.append(f"{heading} from {path}:\n{text}")
            break
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)

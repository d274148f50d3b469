"""The system prompt: who the agent is, where it runs, and the project's own AGENTS.md and
CLAUDE.md files (each through the secret screen: ``tui.security.prompt_files``)."""

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
"""The project instruction files read into the prompt, in this order within a folder."""
MAX_AGENTS_CHARS = 20_000


def project_root(workspace: Path) -> Path:
    """The nearest folder holding ``.git``, else the workspace itself."""
    for folder in (workspace, *workspace.parents):
        if (folder / ".git").exists():
            return folder
    return workspace


def agents_files(workspace: Path) -> list[Path]:
    """AGENTS.md and CLAUDE.md from the repository root down to the workspace, outermost
    first (a link counts: whether it may be read is the guard's to say)."""
    root = project_root(workspace)
    chain = [workspace]
    if root != workspace:
        chain.extend(parent for parent in workspace.parents if parent.is_relative_to(root))
    return [
        folder / name
        for folder in reversed(chain)
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
) -> str:
    """The system prompt. Project instruction files pass the secret screen first
    (``guard``: the session's path guard; the built-in secret places without one); each one
    refused is said in ``notes``."""
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
    for path in agents_files(workspace):
        if budget <= 0:
            break
        text, refusal = read_prompt_file(path, guard, budget)
        if text is None:
            if notes is not None and refusal is not None:
                notes.append(f"project instructions not read: {refusal}")
            continue
        text = text.strip()
        if len(text) > budget:
            text = text[:budget] + f"\n[{path.name} cut here]"
        budget -= len(text)
        parts.append(f"Project instructions from {path}:\n{text}")
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)

"""The system prompt: who the agent is, where it runs, and the project's own AGENTS.md files."""

from __future__ import annotations

import datetime
import platform
from collections.abc import Sequence
from pathlib import Path

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

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_CHARS = 20_000


def project_root(workspace: Path) -> Path:
    """The nearest folder holding ``.git``, else the workspace itself."""
    for folder in (workspace, *workspace.parents):
        if (folder / ".git").exists():
            return folder
    return workspace


def agents_files(workspace: Path) -> list[Path]:
    """AGENTS.md from the repository root down to the workspace, outermost first."""
    root = project_root(workspace)
    chain = [workspace]
    if root != workspace:
        chain.extend(parent for parent in workspace.parents if parent.is_relative_to(root))
    return [folder / AGENTS_FILE for folder in reversed(chain) if (folder / AGENTS_FILE).is_file()]


def build_system_prompt(
    workspace: Path, *, actor: str = "local", extra: str | None = None, tools: Sequence[str] = ()
) -> str:
    now = datetime.datetime.now().astimezone()
    parts = [
        BASE_PROMPT,
        f"Environment: workspace {workspace}; commands run on {actor}; "
        f"{platform.system()} {platform.release()}; today is {now:%A %Y-%m-%d}.",
    ]
    if tools:
        parts.append("Tools available: " + ", ".join(tools) + ".")
    budget = MAX_AGENTS_CHARS
    for path in agents_files(workspace):
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if budget <= 0:
            break
        if len(text) > budget:
            text = text[:budget] + "\n[AGENTS.md cut here]"
        budget -= len(text)
        parts.append(f"Project instructions from {path}:\n{text}")
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)

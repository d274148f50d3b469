"""Our tools as Claude Code names them, for hook scripts and stream-json readers written for it.

A Claude Code hook reads ``.tool_name == "Edit"`` and ``.tool_input.file_path``; a script that
follows ``claude -p --output-format stream-json`` looks for ``tool_use`` blocks named ``Bash``
with an ``input.command``. ``as_claude`` gives a call those names and shapes (an absolute
``file_path``, a timeout in milliseconds), keeping every argument of ours that has no
counterpart, so nothing the call carries is lost; ``from_claude`` reads an input a hook rewrote
in Claude's shape back into ours. Tools Claude Code has no counterpart of keep their own names;
MCP tools take Claude's ``mcp__SERVER__tool`` form.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ClaudeTool:
    """One tool's Claude Code name and how its arguments are renamed (ours → theirs)."""

    name: str
    renames: tuple[tuple[str, str], ...] = ()
    path_keys: tuple[str, ...] = ()
    """Arguments (by Claude's name) holding a path: made absolute, as Claude Code sends them."""


CLAUDE_TOOLS: dict[str, ClaudeTool] = {
    "run_shell": ClaudeTool("Bash", (("why", "description"),)),
    "read_file": ClaudeTool("Read", (("path", "file_path"),), ("file_path",)),
    "write_file": ClaudeTool("Write", (("path", "file_path"),), ("file_path",)),
    "edit_file": ClaudeTool("Edit", (("path", "file_path"),), ("file_path",)),
    "list_files": ClaudeTool("LS", (), ("path",)),
    "glob_search": ClaudeTool("Glob"),
    "grep_search": ClaudeTool(
        "Grep",
        (("case_insensitive", "-i"), ("context", "-C"), ("max_results", "head_limit")),
    ),
    "fetch_url": ClaudeTool("WebFetch"),
    "web_search": ClaudeTool("WebSearch"),
    "todo_write": ClaudeTool("TodoWrite"),
    "notebook_edit": ClaudeTool(
        "NotebookEdit",
        (("path", "notebook_path"), ("action", "edit_mode"), ("source", "new_source")),
        ("notebook_path",),
    ),
    "agent": ClaudeTool("Task"),
    "skill": ClaudeTool("Skill", (("name", "skill"),)),
}
"""Our tool name → Claude Code's tool."""

PERMISSION_MODES = {
    "read-only": "plan",
    "ask": "default",
    "auto-edit": "acceptEdits",
    "full-auto": "bypassPermissions",
}
"""Our approval modes as Claude Code's ``permission_mode`` / ``permissionMode``."""

_BY_CLAUDE_NAME = {tool.name: ours for ours, tool in CLAUDE_TOOLS.items()}


def claude_name(name: str) -> str:
    """``edit_file`` → ``Edit``; an adapter's ``github__create_issue`` →
    ``mcp__github__create_issue``; a tool Claude Code does not have keeps its name."""
    tool = CLAUDE_TOOLS.get(name)
    if tool is not None:
        return tool.name
    server, sep, rest = name.partition("__")
    if sep and server and rest and not name.startswith("mcp__"):
        return f"mcp__{server}__{rest}"
    return name


def our_name(name: str) -> str:
    """The inverse of ``claude_name`` (an unknown name comes back unchanged)."""
    if name in _BY_CLAUDE_NAME:
        return _BY_CLAUDE_NAME[name]
    if name.startswith("mcp__"):
        return name.removeprefix("mcp__")
    return name


def as_claude(name: str, arguments: Any, base: str = "") -> Any:
    """``arguments`` (our call's) in Claude Code's shape for the tool ``name``.

    Args:
        name: our tool name.
        arguments: the parsed arguments; anything but an object comes back unchanged.
        base: the folder relative paths start from (the workspace), for absolute paths.
    """
    tool = CLAUDE_TOOLS.get(name)
    if tool is None or not isinstance(arguments, dict):
        return arguments
    renamed = dict(arguments)
    for ours, theirs in tool.renames:
        if ours in renamed and theirs not in renamed:
            renamed[theirs] = renamed.pop(ours)
    if name == "run_shell" and isinstance(renamed.get("timeout"), int | float):
        renamed["timeout"] = int(renamed["timeout"] * 1000)  # Claude Code counts milliseconds
    if name == "run_shell" and renamed.get("wait") is False:
        renamed["run_in_background"] = True
    for key in tool.path_keys:
        value = renamed.get(key)
        if isinstance(value, str) and value and base:
            renamed[key] = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
    return renamed


def from_claude(name: str, arguments: Any) -> Any:
    """Arguments a hook wrote in Claude Code's shape, back in ours for the tool ``name``."""
    tool = CLAUDE_TOOLS.get(name)
    if tool is None or not isinstance(arguments, dict):
        return arguments
    restored = dict(arguments)
    for ours, theirs in tool.renames:
        if theirs in restored and ours not in restored:
            restored[ours] = restored.pop(theirs)
    if name == "run_shell":
        background = restored.pop("run_in_background", None)
        if background is True and "wait" not in restored:
            restored["wait"] = False
        timeout = restored.get("timeout")
        if isinstance(timeout, int | float) and timeout > 0 and "timeout" in arguments:
            # Ours is seconds; a hook writing Claude's shape writes milliseconds.
            restored["timeout"] = timeout / 1000
    return restored

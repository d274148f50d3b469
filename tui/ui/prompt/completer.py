"""The choices for a word, and where the session-dependent ones come from.

``SessionSource`` answers from a live session: its model and a few of its family for
``/model``, the saved sessions of this workspace for ``/resume``, the MCP servers for
``/mcp restart`` and the workspace's files (listed once per prompt, see ``FileCache``) for ``@``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.ui.prompt.completion import (
    FIXED_ARGUMENTS,
    ArgumentSource,
    Choice,
    Word,
    command_choices,
    rank,
)
from tui.ui.prompt.workspace_files import FileCache

if TYPE_CHECKING:
    from tui.session_api import SessionAPI


async def choices_for(word: Word, source: ArgumentSource | None) -> list[Choice]:
    """Ranked choices for ``word``; empty when nothing fits (the popup then closes)."""
    if word.kind == "command":
        own = await source.commands() if source is not None else []
        return rank(word.query, [*command_choices(), *own])
    if word.kind == "argument":
        fixed = FIXED_ARGUMENTS.get(word.command)
        found = list(fixed) if fixed else []
        if source is not None and not fixed:
            found = await source.arguments(word.command)
        return rank(word.query, found)
    if source is None:
        return []
    files = await source.paths()
    return rank(word.query, (Choice(name, f"@{name} ") for name in files))


class SessionSource:
    """``ArgumentSource`` for one ``SessionAPI``."""

    def __init__(self, session: SessionAPI) -> None:
        self.session = session
        self.files = FileCache(session.list_workspace_files)

    async def paths(self) -> list[str]:
        return await self.files.files()

    def forget(self) -> None:
        self.files.forget()

    async def commands(self) -> list[Choice]:
        """The person's and the (trusted) workspace's commands and skills, as ``/NAME``."""
        found = await self.session.slash_commands()
        return [Choice(f"/{c.name}", f"/{c.name} ", c.description or c.kind) for c in found]

    async def arguments(self, command: str) -> list[Choice]:
        if command == "model":
            return self._models()
        if command == "resume":
            return await self._sessions()
        if command == "mcp restart":
            return self._servers()
        return []

    def _models(self) -> list[Choice]:
        session = self.session
        current, family = session.model, session.provider_name
        return [
            Choice(name, name, "the current model" if name == current else family)
            for name in session.model_choices()
        ]

    async def _sessions(self) -> list[Choice]:
        infos = await self.session.saved_sessions()
        return [Choice(info.id, info.id, info.preview[:60]) for info in infos[:30]]

    def _servers(self) -> list[Choice]:
        return [Choice(name, name, "MCP server") for name in self.session.mcp_servers()]

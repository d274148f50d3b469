"""The session's commands: ``/tools``, ``/skills``, the person's own ``/NAME`` commands,
``/mcp`` and the scheduler, and the saved sessions of ``/sessions`` and ``/resume``.

Part of ``AgentSession``'s class (as ``tui.session_pane`` is): the attributes below are the
session's; these methods answer what ``SessionAPI`` asks of them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from tui.agent.scheduler import JobOutcome
from tui.events import AssistantTextDelta, Event
from tui.views import SessionInfo, UserCommand

if TYPE_CHECKING:
    from tui.agent.loop import AgentLoop
    from tui.agent.transcript import SessionStore, Transcript
    from tui.config import LoadedSettings
    from tui.exec.backend import ExecutionBackend
    from tui.extensions import Extensions
    from tui.security.policy import SecurityPolicy
    from tui.tools.registry import ToolRegistry


class SessionCommands:
    """``AgentSession``'s command methods (a part of its class, not an object of its own:
    the attributes below are the session's)."""

    _workspace: Path
    _loaded: LoadedSettings
    _policy: SecurityPolicy
    _backend: ExecutionBackend
    _registry: ToolRegistry
    _store: SessionStore
    _transcript: Transcript
    _loop: AgentLoop | None
    _provider_error: str | None
    _extensions: Extensions | None

    def tool_table(self) -> list[tuple[str, str, bool]]:
        """``/tools``: every tool's name, permission, and whether it waits for tool_search."""
        deferred = {tool.name for tool in self._registry.deferred_tools()}
        rows = []
        for name in self._registry.names():
            tool = self._registry.get(name)
            if tool is not None:
                rows.append((name, tool.permission.value, name in deferred))
        return rows

    def tool_summaries(self) -> list[tuple[str, str, str]]:
        """``agent-tui tools``: every tool's name, permission, and its description's first line."""
        tools = [tool for name in self._registry.names() if (tool := self._registry.get(name))]
        return [
            (tool.name, tool.permission.value, tool.description.strip().split("\n", 1)[0])
            for tool in tools
        ]

    async def skills_report(self) -> str:
        """``/skills``: the skills the agent can load and where they were looked for (Markdown)."""
        from tui.tools.builtin.catalog import claude_skills_dir, user_skills_dir
        from tui.tools.builtin.skill import format_skill_list, list_skills, skill_roots

        workspace = self._own_workspace()
        mine = (claude_skills_dir(),)
        scan = await asyncio.to_thread(list_skills, workspace, user_skills_dir(), mine)
        lines = [format_skill_list(scan) or "No skills found."]
        places = [str(root) for root, _ in skill_roots(workspace, user_skills_dir(), mine)]
        lines.append(f"\nLooked in {', '.join(places)}.")
        if workspace is None and self._loaded.trust.pending:
            lines.append("This workspace's own skills wait for /trust.")
        lines += [f"- problem: {problem}" for problem in scan.problems]
        return "\n".join(lines)

    def _own_workspace(self) -> Path | None:
        """The workspace whose commands and skills may be offered: a trusted one, here."""
        trusted = self._loaded.trust.trusted and self._policy.paths.local
        return self._workspace if trusted else None

    async def slash_commands(self) -> list[UserCommand]:
        """``/NAME`` commands from Markdown files, and skills (``tui.agent.user_commands``)."""
        from tui.agent.user_commands import find_commands, user_folders

        commands, skills = user_folders()
        return await asyncio.to_thread(find_commands, self._own_workspace(), commands, skills)

    async def expand_command(self, name: str, arguments: str) -> str | None:
        """What ``/NAME arguments`` sends; None when no such command exists.

        Raises:
            ValueError: the command's file cannot be read into a prompt (says why).
        """
        from tui.agent.user_commands import expand

        found = {command.name: command for command in await self.slash_commands()}
        command = found.get(name.lower())
        if command is None:
            return None
        return await asyncio.to_thread(expand, command, arguments, self._policy.paths)

    @staticmethod
    def init_prompt() -> str:
        """``/init``: look at the repository, then write AGENTS.md."""
        from tui.agent.user_commands import INIT_PROMPT

        return INIT_PROMPT

    def describe_extensions(self) -> str | None:
        """``/mcp``: the MCP servers' and OpenAPI specs' state; None without extensions."""
        return self._extensions.describe() if self._extensions is not None else None

    def mcp_servers(self) -> list[str]:
        """The configured MCP servers' names (``/mcp restart NAME``)."""
        mcp = self._extensions.mcp if self._extensions is not None else None
        return [state.name for state in mcp.states()] if mcp is not None else []

    async def restart_extension(self, name: str) -> None:
        """Restart one MCP server.

        Raises:
            ValueError: no server has that name.
        """
        if self._extensions is not None:
            await self._extensions.restart(name)

    async def start_extensions(self) -> None:
        """Start MCP servers and load OpenAPI specs (never raises; problems are notices)."""
        if self._extensions is not None:
            if self._extensions.has_servers():
                from tui.agent.providers.ahead import hold_back

                hold_back("MCP or OpenAPI servers may change the tools")
            await self._extensions.start()

    def start_scheduler(self) -> None:
        """Run scheduled jobs while this session is open (the app calls it, not headless)."""
        if self._extensions is not None:
            self._extensions.start_scheduler(
                self._backend, self._policy.command_env(), self._run_scheduled_prompt
            )

    async def _run_scheduled_prompt(self, prompt: str) -> JobOutcome:
        """A prompt job is a turn of its own: it waits for the person's turn to end."""
        if self._loop is None:
            return JobOutcome(False, self._provider_error or "no model provider is configured")
        while self._loop.running:
            await self._loop.idle.wait()
        # Marked, so neither the person reading the chat nor the model takes it for a message
        # typed just now.
        outcome = await self._loop.submit(f"[scheduled job] {prompt}")
        ok = outcome.reason == "completed"
        return JobOutcome(ok, outcome.final_text if ok else (outcome.error or outcome.reason))

    # -- saved sessions ----------------------------------------------------------------------------

    async def saved_sessions(self) -> list[SessionInfo]:
        """The saved conversations of this workspace, for ``/sessions`` and ``/resume``."""
        return await asyncio.to_thread(self._store.list, self._workspace)

    async def saved_story(self) -> list[Event]:
        """What this session's transcript recorded, to show a resumed session: every event but
        the text deltas (the messages they made are recorded whole)."""
        saved = await asyncio.to_thread(self._store.load_events, self._transcript.id)
        return [event for event in saved if not isinstance(event, AssistantTextDelta)]

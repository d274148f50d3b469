"""Slash commands: parsing, help text, the handlers, and the command-palette provider.

The prompt and the palette share one table, so a command typed as ``/grants`` and one picked
from Ctrl+P do the same thing by the same path (``SlashCommands.run``). Every handler talks to
the session through its narrow methods and to the person through the chat.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tui.ui.autoapprove import DurationError, format_remaining, parse_duration
from tui.ui.command_table import COMMANDS, UnknownCommand, help_markdown, parse_slash

MAX_DIFF_LINES = 400
"""Of ``/diff`` shown in the chat."""

if TYPE_CHECKING:
    from tui.session_api import SessionAPI
    from tui.ui.approval.flow import ApprovalFlow
    from tui.ui.host import AppHost
    from tui.ui.pane_control import PaneControl


class SlashRunner(Protocol):
    """The app as the palette sees it: it holds the slash commands."""

    @property
    def commands(self) -> SlashCommands: ...


class SlashCommandProvider(Provider):
    """Offers the slash commands (those that need no argument run at once) in Ctrl+P."""

    def _entries(self) -> list[tuple[str, str, str]]:
        entries = []
        for command in COMMANDS:
            if command.name == "resume":
                continue
            text = f"/{command.name}"
            if command.name == "approve":
                text = "/approve 10m"
            entries.append((text, command.usage, command.help))
        entries.append(("/approve off", "/approve off", "end auto-approve now"))
        return entries

    async def discover(self) -> Hits:
        app = cast(SlashRunner, self.app)
        for text, _usage, help_text in self._entries():
            yield DiscoveryHit(text, partial(app.commands.run, text), help=help_text)

    async def search(self, query: str) -> Hits:
        app = cast(SlashRunner, self.app)
        matcher = self.matcher(query)
        for text, usage, help_text in self._entries():
            score = matcher.match(f"{text} {help_text}")
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(text),
                    partial(app.commands.run, text),
                    help=f"{usage} — {help_text}",
                )


class SlashCommands:
    """What each ``/command`` does.

    Args:
        host: The app (chat, status bar, panels, screens, workers, session switching).
        approvals: The approval flow (``/approve`` opens and ends its window).
        panes: The pane control (``/pane`` picks the mirrored pane).
        switch: Moves the app to a new (``None``) or saved session (``/clear``, ``/resume``,
            ``/sessions``, ``/trust``).
    """

    def __init__(
        self,
        host: AppHost,
        approvals: ApprovalFlow,
        panes: PaneControl,
        switch: Callable[[str | None], Awaitable[None]],
    ) -> None:
        self.host = host
        self.approvals = approvals
        self.panes = panes
        self.switch = switch
        self._handlers: dict[str, Callable[[str], Awaitable[None] | None]] = {
            "help": self.help,
            "approve": self.approve,
            "mode": self.mode,
            "model": self.model,
            "compact": self.compact,
            "clear": self.clear,
            "sessions": self.sessions,
            "resume": self.resume,
            "grants": self.grants,
            "pane": self.pane,
            "mcp": self.mcp,
            "trust": self.trust,
            "tools": self.tools,
            "cron": self.cron,
            "skills": self.skills,
            "undo": self.undo,
            "diff": self.diff,
            "init": self.init,
            "exit": self.exit,
            "quit": self.exit,
        }

    async def run(self, text: str) -> None:
        """Run ``/name argument``; before a session is attached only ``/help`` and ``/exit``
        run."""
        chat = self.host.chat
        ready = self.host.session_ready.is_set()
        try:
            command = parse_slash(text)
        except UnknownCommand as error:
            if not (ready and await self.user_command(text)):
                held = ready and self.host.session.trust().pending
                wait = " (this workspace's own commands and skills wait for /trust)" if held else ""
                chat.add_notice(f"{error}{wait}", level="warning")
            return
        if not ready and command.name not in ("help", "exit", "quit"):
            chat.add_notice("starting up: try again in a moment", level="warning")
            return
        result = self._handlers[command.name](command.argument)
        if inspect.isawaitable(result):
            await result

    async def help(self, argument: str) -> None:
        lines = [help_markdown()]
        if self.host.session_ready.is_set():
            own = await self.host.session.slash_commands()
            if own:
                lines += ["", "**Your commands and skills**", ""]
                lines += [
                    f"- `/{c.name}{' ' + c.argument_hint if c.argument_hint else ''}` — "
                    f"{c.description} ({c.kind}, {c.source})"
                    for c in own
                ]
        self.host.chat.add_markdown("\n".join(lines))

    async def user_command(self, text: str) -> bool:
        """``/NAME args``: a command file or a skill, sent as a prompt; False when unknown."""
        name, _, argument = text.strip()[1:].partition(" ")
        try:
            message = await self.host.session.expand_command(name.strip(), argument.strip())
        except ValueError as error:
            self.host.chat.add_notice(f"/{name}: {error}", level="warning")
            return True
        if message is None:
            return False
        await self.host.send_text(message)
        return True

    async def undo(self, argument: str) -> None:
        """``/undo [N | list]``: files back as they were before a turn (see
        ``tui.agent.checkpoints``)."""
        session = self.host.session
        if session.loop_running:
            self.host.chat.add_notice(
                "wait for the turn to end (or Esc) before /undo", level="warning"
            )
            return
        self.host.chat.add_info("/undo", await session.undo(argument))

    async def diff(self, argument: str) -> None:
        """``/diff``: the session's changes to the workspace's files."""
        text = await self.host.session.session_diff()
        if not text.strip():
            self.host.chat.add_notice("this session has not changed any files yet")
            return
        lines = text.rstrip("\n").split("\n")
        shown = "\n".join(lines[:MAX_DIFF_LINES])
        more = len(lines) - MAX_DIFF_LINES
        note = f"\n\n({more} more lines not shown)" if more > 0 else ""
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", shown)), default=0))
        self.host.chat.add_markdown(f"{fence}diff\n{shown}\n{fence}{note}")

    async def init(self, argument: str) -> None:
        """``/init``: the agent looks at the repository and writes AGENTS.md."""
        await self.host.send_text(self.host.session.init_prompt())

    async def exit(self, argument: str) -> None:
        await self.host.action_quit()

    def approve(self, argument: str) -> None:
        chat = self.host.chat
        auto = self.approvals.auto_approve
        if argument.lower() in ("off", "stop", "0"):
            was = self.approvals.stop_window()
            chat.add_notice("auto-approve is off" if was else "auto-approve was not on")
            return
        if not argument:
            left = auto.remaining()
            chat.add_notice(
                f"auto-approve: {format_remaining(left)} left" if left else "auto-approve is off"
            )
            return
        try:
            seconds = parse_duration(argument)
        except DurationError as error:
            chat.add_notice(str(error), level="warning")
            return
        self.approvals.start_window(seconds)
        chat.add_notice(
            f"auto-approving every request for {format_remaining(seconds)}; each one is listed "
            "here. /approve off ends it.",
            level="warning",
        )

    def mode(self, argument: str) -> None:
        session, chat = self.host.session, self.host.chat
        modes = ", ".join(session.approval_modes())
        if not argument:
            chat.add_notice(f"approval mode: {session.approval_mode} (choices: {modes})")
            return
        try:
            session.set_approval_mode(argument)
        except ValueError:
            chat.add_notice(f"no mode {argument!r}; choose one of {modes}", level="warning")
            return
        self.host.status.set(mode=session.approval_mode, sandbox=session.sandbox_status)
        chat.add_notice(f"approval mode is now {session.approval_mode}")

    def model(self, argument: str) -> None:
        session, chat = self.host.session, self.host.chat
        if not session.has_model:
            chat.add_notice("no model provider: see the banner for what to set", level="warning")
            return
        if not argument:
            chat.add_notice(f"model: {session.provider_name} · {session.model}")
            return
        session.set_model(argument)
        self.host.status.set(model=argument)
        chat.add_notice(f"the next request goes to {session.provider_name} · {argument}")

    def compact(self, argument: str) -> None:
        session = self.host.session
        if not session.has_model:
            self.host.chat.add_notice("no model provider: nothing to compact", level="warning")
            return
        self.host.run_worker(
            partial(session.compact, argument),
            name="_compact",
            group="compact",
            exclusive=True,
            exit_on_error=False,
            description="compact the chat",
        )

    async def clear(self, argument: str) -> None:
        await self.switch(None)

    async def resume(self, argument: str) -> None:
        if not argument:
            await self.sessions("")
            return
        await self.switch(argument)

    async def sessions(self, argument: str) -> None:
        host = self.host
        infos = await host.session.saved_sessions()

        async def chosen(session_id: str | None) -> None:
            if session_id is not None and session_id != host.session.session_id:
                await self.switch(session_id)

        from tui.ui.sessions.screen import SessionsScreen

        host.push_screen(SessionsScreen(infos, host.session.session_id), chosen)

    def grants(self, argument: str) -> None:
        """What is allowed always, to revoke (also Ctrl+G)."""
        host = self.host

        def closed(revoked: int | None) -> None:
            if revoked:
                host.chat.add_notice(f"revoked {revoked} grant{'s' if revoked > 1 else ''}")

        from tui.ui.grants.screen import GrantsScreen, format_created

        screen = GrantsScreen(host.session.grants, format_time=host.format_time or format_created)
        host.push_screen(screen, closed)

    async def pane(self, argument: str) -> None:
        from tui.ui import pane_info

        host, panes = self.host, self.panes
        word = argument.strip()
        if word in ("keep", "close"):
            host.chat.add_notice(await pane_info.set_kept(host.session, word == "keep"))
            return
        host.panels.show_mirror()
        if word:
            panes.select(word if word.startswith("%") else f"%{word}", pinned=True)
        known = ", ".join(sorted(panes.frames)) or "none yet"
        target = panes.target or "none"
        lines = [f"mirrored pane: {target} (panes seen: {known})"]
        lines += await pane_info.pane_lines(host.session)
        host.chat.add_notice("\n".join(lines))

    def mcp(self, argument: str) -> None:
        session, chat = self.host.session, self.host.chat
        described = session.describe_extensions()
        if described is None:
            return
        verb, _, name = argument.partition(" ")
        if verb == "restart" and name.strip():
            chat.add_notice(f"restarting MCP server {name.strip()}…")
            self.host.run_worker(
                partial(self._restart_mcp, session, name.strip()),
                name="_restart_mcp",
                group="mcp",
                exit_on_error=False,
                description="restart an MCP server",
            )
            return
        if verb == "trust":
            self.trust("")
            return
        if verb:
            chat.add_notice("usage: /mcp, /mcp restart NAME, /mcp trust", level="warning")
            return
        chat.add_info("/mcp", described)

    async def _restart_mcp(self, session: SessionAPI, name: str) -> None:
        chat = self.host.chat
        try:
            await session.restart_extension(name)
        except ValueError as error:
            chat.add_notice(str(error), level="warning")
            return
        chat.add_info("/mcp", session.describe_extensions() or "")

    def trust(self, argument: str) -> None:
        chat = self.host.chat
        trust = self.host.session.trust()
        if not trust.held:
            chat.add_notice(
                "nothing here waits for trust: this workspace's files only tighten your settings"
                if trust.files
                else "this workspace has no .agent-tui.toml or .mcp.json"
            )
            return
        if trust.trusted:
            chat.add_notice(f"{trust.key} is trusted; its settings apply")
            return
        self.host.run_worker(
            self._trust_flow,
            name="_trust_flow",
            group="trust",
            exclusive=True,
            exit_on_error=False,
            description="workspace trust",
        )

    async def _trust_flow(self) -> None:
        """Ask, record, and start the session again under the workspace's settings (a worker:
        the screen's answer arrives through the app's own message queue)."""
        host = self.host
        session = host.session
        trust = session.trust()
        if not await host.ask_trust(trust):
            host.chat.add_notice(session.untrusted_notice(), level="warning")
            return
        await session.trust_workspace()
        if host.reload_settings is not None:
            await host.reload_settings()
        await self.switch(session.session_id)
        host.chat.add_notice(f"trusted {trust.key} in {session.config_path()}")

    def tools(self, argument: str) -> None:
        rows = ["| tool | permission | state |", "|---|---|---|"]
        for name, permission, deferred in self.host.session.tool_table():
            state = "deferred (tool_search)" if deferred else "loaded"
            rows.append(f"| `{name}` | {permission} | {state} |")
        self.host.chat.add_markdown("\n".join(rows))

    async def cron(self, argument: str) -> None:
        report = await self.host.session.cron_report()
        if report is None:
            self.host.chat.add_notice("the cron tools are switched off", level="warning")
            return
        self.host.chat.add_info("/cron", report)

    async def skills(self, argument: str) -> None:
        self.host.chat.add_markdown(await self.host.session.skills_report())

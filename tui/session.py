"""``AgentSession``: the one object the full-screen app and headless mode talk to.

``tui.wiring`` builds it (only the composition root, ``tui.cli``, asks it to); everyone else
uses its narrow methods (submit, steer, cancel, answer an approval, run a person's command,
switch model or mode, trust the workspace, …) and reads its bus, never its parts' insides.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tui.agent.live_settings import LiveSettings
from tui.agent.loop import AgentLoop, TurnOutcome
from tui.agent.providers.base import ImagePart, Message, Provider, ProviderError
from tui.agent.scheduler import JobOutcome
from tui.agent.transcript import SessionStore, Transcript
from tui.bus import EventBus
from tui.config import LoadedSettings
from tui.errors import AgentTuiError
from tui.events import ApprovalAnswer, AssistantTextDelta, Event, Notice, ToolCallRequested
from tui.exec.backend import ExecutionBackend
from tui.exec.prompt_files import list_files, read_mentioned
from tui.exec.tmux_pane import TmuxPane, tmux_pane
from tui.extensions import Extensions
from tui.security.approval import ApprovalBroker
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.security.trust import WorkspaceTrust
from tui.tools.context import ToolContext
from tui.tools.registry import ToolRegistry
from tui.views import GrantList, ImageAttachment, SessionInfo, UserCommand

if TYPE_CHECKING:
    from tui.agent.checkpoints import Checkpoints
    from tui.exec.fleet.fleet import Fleet
    from tui.exec.fleet.mirrors import HostMirrors
    from tui.exec.sandbox.sandbox import Sandbox
    from tui.exec.tmux.mirror import PaneMirror

SessionFactory = Callable[[str | None, ExecutionBackend], "AgentSession"]
"""Builds a fresh (``None``) or resumed session on the same backend: ``/clear``, ``/resume``."""
SessionOpener = Callable[[], Awaitable[tuple["AgentSession", SessionFactory | None]]]
"""Builds the first session (after the app's first frame) and the factory for later ones.

Raises ``AgentTuiError`` (a bad config file, an unreachable host, an unknown session id) to end
the app with that message; its ``exit_code`` attribute, if any, is the exit status (else 2)."""
SettingsReload = Callable[[], Awaitable[None]]
"""Re-reads the settings, so that the factory's next session sees them (after ``/trust``)."""

_user_call_ids = itertools.count(1)


class StartupError(AgentTuiError):
    """The session could not be built; ``exit_code`` is what ``agent-tui`` exits with."""

    title = "Cannot start"

    def __init__(self, msg: str, exit_code: int = 2) -> None:
        super().__init__(msg)
        self.exit_code = exit_code


@dataclass
class AgentSession:
    workspace: Path
    loaded: LoadedSettings
    bus: EventBus
    policy: SecurityPolicy
    backend: ExecutionBackend
    registry: ToolRegistry
    provider: Provider | None
    provider_error: str | None
    transcript: Transcript
    store: SessionStore
    loop: AgentLoop | None
    broker: ApprovalBroker | None = None
    warnings: list[str] = field(default_factory=list)
    live: LiveSettings | None = None
    extensions: Extensions | None = None
    own_providers: list[Provider] = field(default_factory=list)
    """Providers made for named sub-agents' overrides, closed with the session's."""
    user_commands: dict[str, asyncio.Event] = field(default_factory=dict)
    """The person's own ``!`` commands still running, each with the event that cancels it."""
    pane_pump: PaneMirror | None = None
    """The ``PaneMirror`` publishing frames of the agent's tmux pane, while the app shows it."""
    sandbox: Sandbox | None = None
    """This machine's sandbox (commands on a local target, hooks and MCP servers)."""
    checkpoints: Checkpoints | None = None
    """Snapshots around each turn, for ``/undo`` and ``/diff`` (the app, a local workspace)."""
    _checkpoints_said: bool = False
    fleet: Fleet | None = None
    """Every host, when the session's commands run on a fleet (``tui.exec.fleet``)."""
    fleet_mirrors: HostMirrors | None = None
    """A pane mirror per fleet host with tmux, while the app shows them (the default host's
    is ``pane_pump``)."""
    _mode_change: asyncio.Task[None] | None = None

    async def start_extensions(self) -> None:
        """Start MCP servers and load OpenAPI specs (never raises; problems are notices)."""
        if self.extensions is not None:
            await self.extensions.start()

    def start_scheduler(self) -> None:
        """Run scheduled jobs while this session is open (the app calls it, not headless)."""
        if self.extensions is not None:
            self.extensions.start_scheduler(
                self.backend, self.policy.command_env(), self._run_scheduled_prompt
            )

    async def _run_scheduled_prompt(self, prompt: str) -> JobOutcome:
        """A prompt job is a turn of its own: it waits for the person's turn to end."""
        if self.loop is None:
            return JobOutcome(False, self.provider_error or "no model provider is configured")
        while self.loop.running:
            await self.loop.idle.wait()
        # Marked, so neither the person reading the chat nor the model takes it for a message
        # typed just now.
        outcome = await self.loop.submit(f"[scheduled job] {prompt}")
        ok = outcome.reason == "completed"
        return JobOutcome(ok, outcome.final_text if ok else (outcome.error or outcome.reason))

    @property
    def session_id(self) -> str:
        return self.transcript.id

    def watch_messages(self, callback: Callable[[Message], None]) -> None:
        """Hand ``callback`` every message the conversation gains from now on (headless
        stream-json writes each call's result as the model reads it)."""
        loop = self.loop
        if loop is None:
            return
        previous = loop.on_message

        def both(message: Message) -> None:
            if previous is not None:
                previous(message)
            callback(message)

        loop.on_message = both

    async def submit(
        self, prompt: str, images: Sequence[ImageAttachment] | None = None
    ) -> TurnOutcome:
        """One turn; ``images`` go with the message (``@shot.png``, a pasted path)."""
        if self.loop is None:
            raise ProviderError(self.provider_error or "no model provider is configured")
        parts = [
            ImagePart(base64.b64encode(i.data).decode("ascii"), i.mime_type) for i in images or ()
        ]
        return await self._turn(prompt, parts)

    async def _turn(self, prompt: str, images: list[ImagePart]) -> TurnOutcome:
        assert self.loop is not None
        checkpoints = self.checkpoints
        if checkpoints is None or self.loop.running:
            return await self.loop.submit(prompt, images=images)
        checkpoints.turn_starts(prompt)  # the snapshot is awaited before the first tool runs
        try:
            return await self.loop.submit(prompt, images=images)
        finally:
            await checkpoints.turn_ends()
            if checkpoints.disabled and not self._checkpoints_said:
                self._checkpoints_said = True
                self.bus.publish(Notice(message=checkpoints.disabled, level="warning"))

    async def undo(self, argument: str) -> str:
        """``/undo``, ``/undo N``, ``/undo list`` (``tui.agent.checkpoints``)."""
        from tui.agent.checkpoints import CheckpointError

        if self.checkpoints is None:
            return "no checkpoints here: /undo works in the app, for a workspace on this machine"
        word = argument.strip()
        if word == "list":
            return self.checkpoints.listing()
        if word and not word.isdigit():
            return "usage: /undo, /undo N (a turn from /undo list), /undo list"
        try:
            return await self.checkpoints.undo(int(word) if word else None)
        except CheckpointError as error:
            return str(error)

    async def session_diff(self) -> str:
        """``/diff``: what this session's turns changed in the workspace's files, as a diff."""
        from tui.agent.checkpoints import CheckpointError

        if self.checkpoints is None:
            return ""
        try:
            return await self.checkpoints.diff()
        except CheckpointError as error:
            return f"(no diff: {error})"

    async def compact(self, focus: str = "") -> bool:
        """``/compact``: shrink what is sent to the model; the transcript keeps everything."""
        if self.loop is None:
            return False
        return await self.loop.compact(focus)

    # -- what the app asks of its session: it talks to nothing deeper ---------------------------

    @property
    def provider_name(self) -> str:
        return self.provider.name if self.provider is not None else ""

    @property
    def model(self) -> str:
        return self.provider.model if self.provider is not None else ""

    def set_model(self, name: str) -> None:
        """``/model NAME``: the next request goes to this model of the same provider."""
        if self.provider is not None:
            self.provider.model = name

    @property
    def actor(self) -> str:
        """Where commands run (``local``, ``ssh:host/tmux:%3``...), as the events name it."""
        return self.backend.actor

    @property
    def supports_tmux(self) -> bool:
        return self.pane() is not None

    @property
    def approval_mode(self) -> str:
        return self.policy.approval_mode.value

    @staticmethod
    def approval_modes() -> list[str]:
        return [mode.value for mode in ApprovalMode]

    def set_approval_mode(self, name: str) -> None:
        """``/mode NAME``.

        Raises:
            ValueError: ``name`` is not an approval mode.
        """
        mode = ApprovalMode(name)
        changed = mode is not self.policy.approval_mode
        self.policy.approval_mode = mode
        if changed and self.policy.sandbox.active and self.supports_tmux:
            # The watched shell moves into the new mode's walls now, not at the next command,
            # so what the person takes over is what the mirror's title says.
            self._mode_change = asyncio.ensure_future(self._restart_shell())

    async def _restart_shell(self) -> None:
        pane = self.pane()
        if pane is None:
            return
        try:
            notices = await pane.refresh_sandbox()
        except AgentTuiError as error:
            notices = [f"could not restart the shell in the new sandbox: {error.msg}"]
        for notice in notices:
            self.bus.publish(Notice(message=notice, level="warning"))

    @property
    def sandbox_status(self) -> str:
        """Where commands run now, for the status bar: the mode's walls or "no sandbox"."""
        return self.policy.where_label(None)

    @property
    def context_window(self) -> int | None:
        """The model's window from the loop's context meter where the loop has one; ``None``
        keeps the status bar's percentage hidden."""
        meter = getattr(getattr(self.loop, "context", None), "meter", None)
        window = getattr(meter, "window", None)
        return window if isinstance(window, int) and window > 0 else None

    @property
    def turn_busy(self) -> bool:
        """A turn is under way (submitted and not yet wound down)."""
        return self.loop is not None and self.loop.busy

    @property
    def working(self) -> bool:
        """The loop runs a turn, or one of the person's ``!`` commands runs."""
        return bool(self.user_commands) or bool(self.loop and self.loop.running)

    @property
    def loop_running(self) -> bool:
        return bool(self.loop and self.loop.running)

    def steer(self, text: str) -> None:
        """Said to the running turn, read by the model before its next request."""
        if self.loop is None:
            raise ProviderError(self.provider_error or "no model provider is configured")
        self.loop.steer(text)

    def cancel(self) -> bool:
        """Stop the turn and the person's ``!`` commands now; False when nothing ran."""
        cancelled = False
        if self.loop is not None and self.loop.busy:
            self.loop.cancel()
            cancelled = True
        for event in self.user_commands.values():
            event.set()
            cancelled = True
        return cancelled

    @property
    def answers_approvals(self) -> bool:
        """This session's broker asks the app (another approver, a test's, answers otherwise)."""
        return self.broker is not None

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Resolve a pending request; False when it no longer waits."""
        return self.broker.resolve(request_id, answer) if self.broker is not None else False

    def approve_once(self, request_id: str) -> bool:
        """Allow one pending request (the person's auto-approve window)."""
        return self.answer_approval(request_id, ApprovalAnswer.allow_once())

    def cancel_approvals(self, reason: str) -> None:
        if self.broker is not None:
            self.broker.cancel_all(reason)

    async def run_user_command(self, command: str) -> None:
        """``!cmd``: the same path the agent's calls take (policy, approval, backend, bus)."""
        call_id = f"user-{next(_user_call_ids)}"
        cancel = asyncio.Event()
        self.user_commands[call_id] = cancel
        arguments = {"command": command}
        self.bus.publish(
            ToolCallRequested(
                tool_call_id=call_id, tool_name="run_shell", arguments=json.dumps(arguments)
            )
        )
        ctx = ToolContext(
            tool_call_id=call_id,
            tool_name="run_shell",
            backend=self.backend,
            policy=self.policy,
            cancel=cancel,
            on_update=self.bus.publish,
        )
        try:
            # The person's own command: the bare form, which carries no model's claims (no
            # risk label or reason to show as "the model says").
            await self.registry.execute("run_shell", json.dumps(command), ctx)
        finally:
            self.user_commands.pop(call_id, None)

    async def trust_workspace(self) -> None:
        """``/trust``: record that the person trusts this workspace's files as they are now."""
        await asyncio.to_thread(trust_workspace, self.loaded)

    def tool_table(self) -> list[tuple[str, str, bool]]:
        """``/tools``: every tool's name, permission, and whether it waits for tool_search."""
        deferred = {tool.name for tool in self.registry.deferred_tools()}
        rows = []
        for name in self.registry.names():
            tool = self.registry.get(name)
            if tool is not None:
                rows.append((name, tool.permission.value, name in deferred))
        return rows

    async def cron_report(self) -> str | None:
        """``/cron``: the scheduled jobs and their last results; None when cron is off."""
        if "cron_list" not in self.registry:
            return None
        ctx = ToolContext("user-cron", "cron_list", self.backend, self.policy)
        result = await self.registry.execute("cron_list", "{}", ctx)
        return result.text

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
        if workspace is None and self.loaded.trust.pending:
            lines.append("This workspace's own skills wait for /trust.")
        lines += [f"- problem: {problem}" for problem in scan.problems]
        return "\n".join(lines)

    def _own_workspace(self) -> Path | None:
        """The workspace whose commands and skills may be offered: a trusted one, here."""
        trusted = self.loaded.trust.trusted and self.policy.paths.local
        return self.workspace if trusted else None

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
        return await asyncio.to_thread(expand, command, arguments, self.policy.paths)

    @staticmethod
    def init_prompt() -> str:
        """``/init``: look at the repository, then write AGENTS.md."""
        from tui.agent.user_commands import INIT_PROMPT

        return INIT_PROMPT

    def describe_extensions(self) -> str | None:
        """``/mcp``: the MCP servers' and OpenAPI specs' state; None without extensions."""
        return self.extensions.describe() if self.extensions is not None else None

    async def restart_extension(self, name: str) -> None:
        """Restart one MCP server.

        Raises:
            ValueError: no server has that name.
        """
        if self.extensions is not None:
            await self.extensions.restart(name)

    async def saved_sessions(self) -> list[SessionInfo]:
        """The saved conversations of this workspace, for ``/sessions``."""
        return await asyncio.to_thread(self.store.list, self.workspace)

    @property
    def has_history(self) -> bool:
        """The conversation holds messages already (a resumed session)."""
        return self.loop is not None and bool(self.loop.messages)

    async def saved_story(self) -> list[Event]:
        """What this session's transcript recorded, to show a resumed session: every event but
        the text deltas (the messages they made are recorded whole)."""
        saved = await asyncio.to_thread(self.store.load_events, self.session_id)
        return [event for event in saved if not isinstance(event, AssistantTextDelta)]

    async def start_pane_mirror(self) -> None:
        """Frames of the agent's tmux pane onto the bus (``PaneSnapshot``), for the mirror."""
        from tui.exec.tmux.mirror import PaneMirror

        pane = self.pane()
        if pane is None:
            return
        await self.stop_pane_mirror()
        pump = PaneMirror(pane, self.bus.publish)
        self.pane_pump = pump
        await pump.start()

    def refresh_pane_mirror(self) -> None:
        """Take a frame now (the pane was resized)."""
        if self.pane_pump is not None:
            self.pane_pump.refresh()

    async def stop_pane_mirror(self) -> None:
        pump, self.pane_pump = self.pane_pump, None
        if pump is not None:
            await pump.close()

    # -- a fleet: the host list and a mirror per host -------------------------------------------

    @property
    def fleet_hosts(self) -> list[str]:
        """The fleet's hosts in inventory order (empty: one target)."""
        return list(self.fleet.inventory.hosts) if self.fleet is not None else []

    @property
    def default_host(self) -> str | None:
        return self.fleet.default_host if self.fleet is not None else None

    def announce_fleet(self) -> None:
        """Publish every host's state now (a host list that starts listening after them)."""
        if self.fleet is not None:
            self.fleet.publish = self.bus.publish
            self.fleet.announce()

    async def start_fleet_mirrors(self) -> None:
        """Frames of every fleet host's tmux pane, each host's as it opens."""
        if self.fleet is not None and self.fleet_mirrors is None:
            from tui.exec.fleet.mirrors import HostMirrors

            self.fleet_mirrors = HostMirrors(self.fleet, self.bus.publish)
            await self.fleet_mirrors.start()

    def pane(self, host: str | None = None) -> TmuxPane | None:
        """``host``'s tmux pane (None: the default target's), for the mirror's keys, size and
        ``/pane``; None where there is no tmux."""
        backend = self.backend
        if self.fleet is not None and host is not None:
            opened = self.fleet.opened(host)
            if opened is not None:
                backend = opened.backend
        return tmux_pane(backend)

    async def stop_fleet_mirrors(self) -> None:
        mirrors, self.fleet_mirrors = self.fleet_mirrors, None
        if mirrors is not None:
            await mirrors.stop()

    async def close_keeping_backend(self) -> None:
        """Let go of this session for the next one on the same backend (``/clear``)."""
        if self.provider is not None:
            await self.provider.aclose()
        self.transcript.close()
        await self.stop_pane_mirror()
        await self.stop_fleet_mirrors()

    async def aclose(self) -> None:
        if self.extensions is not None:
            await self.extensions.aclose()
        if self.provider is not None:
            await self.provider.aclose()
        for own in self.own_providers:
            await own.aclose()
        tools = [tool for name in self.registry.names() if (tool := self.registry.get(name))]
        if self.live is not None:
            tools += self.live.parked_tools()  # switched off mid-session, maybe after use
        for tool in tools:
            # Tools holding processes (python_repl's interpreter) stop them here.
            closer = getattr(tool, "aclose", None)
            if closer is None:
                continue
            try:
                await closer()
            except Exception as error:  # one tool failing to close must not stop the rest
                self.bus.publish(Notice(message=f"closing {tool.name}: {error}", level="warning"))
        await self.stop_fleet_mirrors()
        await self.backend.close()
        if self.fleet is not None:
            await self.fleet.close()
        if self.sandbox is not None:
            await self.sandbox.close()
        self.transcript.close()

    # -- what the UI's widgets ask of the session ------------------------------------------

    async def read_mentioned(self, raw: str) -> bytes:
        """An ``@path`` of a prompt, read on the target through the policy's path guard.

        Raises:
            PermissionDenied: the guard refuses it (a secret, or outside the workspace).
            BackendError: the target could not read it.
            OSError: a local path that is missing or not a regular file.
        """
        return await read_mentioned(self.backend, self.policy.paths, raw)

    async def list_workspace_files(self) -> list[str]:
        """The workspace's files on the target, for ``@`` completion: no secret is named."""
        paths = self.policy.paths
        return await list_files(self.backend, paths.workspace, paths, self.policy.command_env())

    async def user_pane(self) -> str | None:
        """One line on the person's own tmux pane; None when agent-tui is not inside tmux."""
        from tui.exec.tmux.sessions import user_pane  # libtmux only when asked

        return await user_pane()

    @property
    def grants(self) -> GrantList:
        """The "allow always" grants in force here, to list and revoke (``/grants``)."""
        return self.policy.grants


def untrusted_notice(trust: WorkspaceTrust) -> str:
    return (
        f"{len(trust.held)} setting(s) from this workspace's files are not applied "
        "(untrusted); /trust reviews them again"
    )


def trust_workspace(loaded: LoadedSettings) -> None:
    """Record in the user's config that the person trusts these very workspace files."""
    from tui.security.trust import save_trust

    save_trust(loaded.user_config_path, loaded.trust.key, loaded.trust.digest)

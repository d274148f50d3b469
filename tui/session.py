"""``AgentSession``: the one object the full-screen app and headless mode talk to.

``tui.wiring`` builds it (only the composition root asks it to); everyone else uses its
methods (submit, steer, cancel, answer an approval, run a person's command, switch model or
mode, trust the workspace, …), the app only those of ``tui.session_api.SessionAPI``. Its parts
(loop, backend, provider, policy, settings, store, extensions) are its own: private.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.agent.live_settings import LiveSettings
from tui.agent.loop import AgentLoop, TurnOutcome
from tui.agent.providers.base import ImagePart, Message, Provider, ProviderError
from tui.agent.transcript import SessionStore, Transcript
from tui.bus import EventBus, Subscription
from tui.config import LoadedSettings
from tui.errors import AgentTuiError
from tui.events import ApprovalAnswer, Event, Notice, ToolCallRequested
from tui.exec.backend import ExecutionBackend
from tui.exec.prompt_files import list_files, read_mentioned
from tui.extensions import Extensions
from tui.security.approval import ApprovalBroker
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.security.trust import WorkspaceTrust
from tui.session_api import NotifyChoice, SessionAPI
from tui.session_commands import SessionCommands
from tui.session_pane import SessionPane
from tui.tools.context import ToolContext
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult
from tui.views import GrantList, ImageAttachment

if TYPE_CHECKING:
    from tui.agent.checkpoints import Checkpoints
    from tui.exec.fleet.fleet import Fleet
    from tui.exec.fleet.mirrors import HostMirrors
    from tui.exec.sandbox.sandbox import Sandbox
    from tui.exec.tmux.mirror import PaneMirror

KNOWN_MODELS: dict[str, tuple[str, ...]] = {
    "anthropic": ("claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5"),
    "openai": ("gpt-5", "gpt-5-mini", "gpt-4.1"),
}
"""A short list offered beside the session's own model; any name can still be typed."""

_user_call_ids = itertools.count(1)


class StartupError(AgentTuiError):
    """The session could not be built; ``exit_code`` is what ``agent-tui`` exits with."""

    title = "Cannot start"

    def __init__(self, msg: str, exit_code: int = 2) -> None:
        super().__init__(msg)
        self.exit_code = exit_code


class AgentSession(SessionPane, SessionCommands):
    """One conversation on one target, built by ``tui.wiring.build_session``.

    Args:
        workspace: The workspace, on the target.
        loaded: The settings it was built from.
        bus: Where every event of the session is published.
        policy: Judges every call.
        backend: Where commands run.
        registry: The tools.
        provider: The model's API (None: ``provider_error`` says why there is none).
        provider_error: Why no model answers.
        transcript: This session's record on disk.
        store: Every saved session (``/sessions``, ``/resume``).
        loop: The agent loop (None without a provider).
        broker: Asks the app about approvals (None: another approver answers).
        warnings: What building it found, said before anyone listened to the bus.
        live: The settings the ``config`` tool and ``/model`` change while it runs.
        extensions: MCP servers, OpenAPI specs, cron.
        own_providers: Providers made for named sub-agents, closed with the session's.
        sandbox: This machine's sandbox (commands on a local target, hooks, MCP servers).
        checkpoints: Snapshots around each turn, for ``/undo`` and ``/diff``.
        fleet: Every host, when commands run on a fleet.
    """

    def __init__(
        self,
        *,
        workspace: Path,
        loaded: LoadedSettings,
        bus: EventBus,
        policy: SecurityPolicy,
        backend: ExecutionBackend,
        registry: ToolRegistry,
        provider: Provider | None,
        provider_error: str | None,
        transcript: Transcript,
        store: SessionStore,
        loop: AgentLoop | None,
        broker: ApprovalBroker | None = None,
        warnings: list[str] | None = None,
        live: LiveSettings | None = None,
        extensions: Extensions | None = None,
        own_providers: list[Provider] | None = None,
        sandbox: Sandbox | None = None,
        checkpoints: Checkpoints | None = None,
        fleet: Fleet | None = None,
    ) -> None:
        self._workspace = workspace
        self._loaded = loaded
        self._bus = bus
        self._policy = policy
        self._backend = backend
        self._registry = registry
        self._provider = provider
        self._provider_error = provider_error
        self._transcript = transcript
        self._store = store
        self._loop = loop
        self._broker = broker
        self._warnings = list(warnings or ())
        self._live = live
        self._extensions = extensions
        self._own_providers = list(own_providers or ())
        self._sandbox = sandbox
        self._checkpoints = checkpoints
        self._fleet = fleet
        self._user_commands: dict[str, asyncio.Event] = {}
        """The person's own ``!`` commands still running, each with the event that cancels it."""
        self._pane_pump: PaneMirror | None = None
        """The ``PaneMirror`` publishing frames of the agent's tmux pane, while the app shows it."""
        self._fleet_mirrors: HostMirrors | None = None
        """A pane mirror per fleet host with tmux, while the app shows them."""
        self._checkpoints_said = False
        self._mode_change: asyncio.Task[None] | None = None

    # -- what it is ------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self._transcript.id

    @property
    def workspace(self) -> Path:
        return self._workspace

    @property
    def actor(self) -> str:
        """Where commands run (``local``, ``ssh:host/tmux:%3``...), as the events name it."""
        return self._backend.actor

    @property
    def provider_name(self) -> str:
        return self._provider.name if self._provider is not None else ""

    @property
    def model(self) -> str:
        return self._provider.model if self._provider is not None else ""

    @property
    def has_model(self) -> bool:
        return self._loop is not None

    @property
    def model_problem(self) -> str | None:
        if self._loop is not None:
            return None
        return self._provider_error or "no model provider is configured"

    @property
    def sandbox_status(self) -> str:
        """Where commands run now, for the status bar: the mode's walls or "no sandbox"."""
        return self._policy.where_label(None)

    @property
    def context_window(self) -> int | None:
        """The model's window from the loop's context meter where the loop has one; ``None``
        keeps the status bar's percentage hidden."""
        meter = getattr(getattr(self._loop, "context", None), "meter", None)
        window = getattr(meter, "window", None)
        return window if isinstance(window, int) and window > 0 else None

    @property
    def has_history(self) -> bool:
        """The conversation holds messages already (a resumed session)."""
        return self._loop is not None and bool(self._loop.messages)

    def startup_warnings(self) -> list[str]:
        return list(self._warnings)

    def add_warnings(self, notices: Sequence[str], *, first: bool = False) -> None:
        """Things opening the target said, shown when the app attaches (it was not listening)."""
        self._warnings = [*notices, *self._warnings] if first else [*self._warnings, *notices]

    def config_path(self) -> Path:
        return self._loaded.user_config_path

    def output_disk_cap(self) -> int:
        return self._loaded.settings.agent.output_disk_cap

    def notify_choice(self) -> NotifyChoice:
        return NotifyChoice(**self._loaded.settings.notify.model_dump())

    def wants_structured_output(self) -> bool:
        """``--json-schema`` (or ``[agent] json_schema``): the answer is a JSON value."""
        return bool(self._loaded.settings.agent.json_schema)

    def tool_names(self) -> list[str]:
        return list(self._registry.names())

    def usage_summary(self) -> dict[str, Any]:
        """Tokens of the whole run; ``cost_usd`` is ``None`` when the model has no known price."""
        loop = self._loop
        usage = loop.usage if loop else None
        return {
            "input_tokens": usage.input_tokens if usage else 0,
            "output_tokens": usage.output_tokens if usage else 0,
            "cached_tokens": usage.cache_read_tokens if usage else 0,
            "cache_write_tokens": usage.cache_write_tokens if usage else 0,
            "reasoning_tokens": usage.reasoning_tokens if usage else 0,
            "cost_usd": loop.cost_usd if loop else None,
        }

    def record_trouble(self) -> str | None:
        """Why the session file is not whole (a full disk); None when every record was saved."""
        transcript = self._transcript
        if not transcript.unsaved:
            return None
        return (
            f"the session file {transcript.path} is missing {transcript.unsaved} record(s): "
            f"they could not be written ({transcript.problem}); resuming it continues from "
            "the last one saved"
        )

    # -- the bus -----------------------------------------------------------------------------------

    def subscribe(self, name: str) -> Subscription:
        return self._bus.subscribe(name)

    def unsubscribe(self, subscription: Subscription) -> None:
        self._bus.unsubscribe(subscription)

    def listen(self, listener: Callable[[Event], None]) -> None:
        """Hand ``listener`` every event as it is published, in order (headless output)."""
        self._bus.add_listener(listener)

    def watch_messages(self, callback: Callable[[Message], None]) -> None:
        """Hand ``callback`` every message the conversation gains from now on (headless
        stream-json writes each call's result as the model reads it)."""
        loop = self._loop
        if loop is None:
            return
        previous = loop.on_message

        def both(message: Message) -> None:
            if previous is not None:
                previous(message)
            callback(message)

        loop.on_message = both

    # -- turns -------------------------------------------------------------------------------------

    @property
    def turn_busy(self) -> bool:
        """A turn is under way (submitted and not yet wound down)."""
        return self._loop is not None and self._loop.busy

    @property
    def working(self) -> bool:
        """The loop runs a turn, or one of the person's ``!`` commands runs."""
        return bool(self._user_commands) or self.loop_running

    @property
    def loop_running(self) -> bool:
        return bool(self._loop and self._loop.running)

    async def submit(
        self, prompt: str, images: Sequence[ImageAttachment] | None = None
    ) -> TurnOutcome:
        """One turn; ``images`` go with the message (``@shot.png``, a pasted path)."""
        loop = self._model_loop()
        parts = [
            ImagePart(base64.b64encode(i.data).decode("ascii"), i.mime_type) for i in images or ()
        ]
        checkpoints = self._checkpoints
        if checkpoints is None or loop.running:
            return await loop.submit(prompt, images=parts)
        checkpoints.turn_starts(prompt)  # the snapshot is awaited before the first tool runs
        try:
            return await loop.submit(prompt, images=parts)
        finally:
            await checkpoints.turn_ends()
            if checkpoints.disabled and not self._checkpoints_said:
                self._checkpoints_said = True
                self._bus.publish(Notice(message=checkpoints.disabled, level="warning"))

    def _model_loop(self) -> AgentLoop:
        if self._loop is None:
            raise ProviderError(self._provider_error or "no model provider is configured")
        return self._loop

    def steer(self, text: str) -> None:
        """Said to the running turn, read by the model before its next request."""
        self._model_loop().steer(text)

    def cancel(self) -> bool:
        """Stop the turn and the person's ``!`` commands now; False when nothing ran."""
        cancelled = False
        if self._loop is not None and self._loop.busy:
            self._loop.cancel()
            cancelled = True
        for event in self._user_commands.values():
            event.set()
            cancelled = True
        return cancelled

    async def compact(self, focus: str = "") -> bool:
        """``/compact``: shrink what is sent to the model; the transcript keeps everything."""
        if self._loop is None:
            return False
        return await self._loop.compact(focus)

    async def undo(self, argument: str) -> str:
        """``/undo``, ``/undo N``, ``/undo list`` (``tui.agent.checkpoints``)."""
        from tui.agent.checkpoints import CheckpointError

        if self._checkpoints is None:
            return "no checkpoints here: /undo works in the app, for a workspace on this machine"
        word = argument.strip()
        if word == "list":
            return self._checkpoints.listing()
        if word and not word.isdigit():
            return "usage: /undo, /undo N (a turn from /undo list), /undo list"
        try:
            return await self._checkpoints.undo(int(word) if word else None)
        except CheckpointError as error:
            return str(error)

    async def session_diff(self) -> str:
        """``/diff``: what this session's turns changed in the workspace's files, as a diff."""
        from tui.agent.checkpoints import CheckpointError

        if self._checkpoints is None:
            return ""
        try:
            return await self._checkpoints.diff()
        except CheckpointError as error:
            return f"(no diff: {error})"

    async def run_user_command(self, command: str) -> None:
        """``!cmd``: the same path the agent's calls take (policy, approval, backend, bus)."""
        call_id = f"user-{next(_user_call_ids)}"
        cancel = asyncio.Event()
        self._user_commands[call_id] = cancel
        self._bus.publish(
            ToolCallRequested(
                tool_call_id=call_id,
                tool_name="run_shell",
                arguments=json.dumps({"command": command}),
            )
        )
        try:
            # The person's own command: the bare form, which carries no model's claims (no
            # risk label or reason to show as "the model says").
            await self.call_tool("run_shell", json.dumps(command), call_id, cancel=cancel)
        finally:
            self._user_commands.pop(call_id, None)

    async def call_tool(
        self,
        name: str,
        arguments: str,
        call_id: str,
        *,
        cancel: asyncio.Event | None = None,
        on_update: Callable[[Event], None] | None = None,
    ) -> ToolResult:
        """One call made by the person (``!cmd``, ``/cron``, ``agent-tui tool``): the registry's
        one path, parse → policy → approval → tool, on this session's target."""
        ctx = ToolContext(
            tool_call_id=call_id,
            tool_name=name,
            backend=self._backend,
            policy=self._policy,
            cancel=cancel or asyncio.Event(),
            on_update=on_update or self._bus.publish,
        )
        return await self._registry.execute(name, arguments, ctx)

    async def read_mentioned(self, raw: str) -> bytes:
        """An ``@path`` of a prompt, read on the target through the policy's path guard.

        Raises:
            PermissionDenied: the guard refuses it (a secret, or outside the workspace).
            BackendError: the target could not read it.
            OSError: a local path that is missing or not a regular file.
        """
        return await read_mentioned(self._backend, self._policy.paths, raw)

    async def list_workspace_files(self) -> list[str]:
        """The workspace's files on the target, for ``@`` completion: no secret is named."""
        paths = self._policy.paths
        return await list_files(self._backend, paths.workspace, paths, self._policy.command_env())

    # -- approvals -------------------------------------------------------------------------------

    @property
    def answers_approvals(self) -> bool:
        """This session's broker asks the app (another approver, a test's, answers otherwise)."""
        return self._broker is not None

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Resolve a pending request; False when it no longer waits."""
        return self._broker.resolve(request_id, answer) if self._broker is not None else False

    def approve_once(self, request_id: str) -> bool:
        """Allow one pending request (the person's auto-approve window)."""
        return self.answer_approval(request_id, ApprovalAnswer.allow_once())

    def cancel_approvals(self, reason: str) -> None:
        if self._broker is not None:
            self._broker.cancel_all(reason)

    @property
    def grants(self) -> GrantList:
        """The "allow always" grants in force here, to list and revoke (``/grants``)."""
        return self._policy.grants

    # -- model and mode ----------------------------------------------------------------------------

    def set_model(self, name: str) -> None:
        """``/model NAME``: the next request goes to this model of the same provider, and so
        does every later session of this run (``/clear``), as a change through the ``config``
        tool does: both go through the live settings, the model's one writer."""
        if self._live is not None and self._loop is not None:
            self._live.set("provider.model", name)

    def model_choices(self) -> list[str]:
        """The current model first, then a few of its provider's family (``/model``)."""
        if self._provider is None:
            return []
        return list(dict.fromkeys([self.model, *KNOWN_MODELS.get(self.provider_name, ())]))

    @property
    def approval_mode(self) -> str:
        return self._policy.approval_mode.value

    @property
    def start_mode(self) -> str:
        return self._loaded.settings.approval.mode.value

    @staticmethod
    def approval_modes() -> list[str]:
        return [mode.value for mode in ApprovalMode]

    def set_approval_mode(self, name: str) -> None:
        """``/mode NAME``.

        Raises:
            ValueError: ``name`` is not an approval mode.
        """
        mode = ApprovalMode(name)
        changed = mode is not self._policy.approval_mode
        self._policy.approval_mode = mode
        if changed and self._policy.sandbox.active and self.has_pane():
            # The watched shell moves into the new mode's walls now, not at the next command,
            # so what the person takes over is what the mirror's title says.
            self._mode_change = asyncio.ensure_future(self._restart_shell())

    async def _restart_shell(self) -> None:
        pane = self._pane()
        if pane is None:
            return
        try:
            notices = await pane.refresh_sandbox()
        except AgentTuiError as error:
            notices = [f"could not restart the shell in the new sandbox: {error.msg}"]
        for notice in notices:
            self._bus.publish(Notice(message=notice, level="warning"))

    # -- the workspace's trust ---------------------------------------------------------------------

    def trust(self) -> WorkspaceTrust:
        return self._loaded.trust

    def untrusted_notice(self) -> str:
        return untrusted_notice(self._loaded.trust)

    async def trust_workspace(self) -> None:
        """``/trust``: record that the person trusts this workspace's files as they are now."""
        await asyncio.to_thread(trust_workspace, self._loaded)

    async def cron_report(self) -> str | None:
        """``/cron``: the scheduled jobs and their last results; None when cron is off."""
        if "cron_list" not in self._registry:
            return None
        return (await self.call_tool("cron_list", "{}", "user-cron")).text

    # -- the end -----------------------------------------------------------------------------------

    async def close_keeping_backend(self) -> None:
        """Let go of this session for the next one on the same backend (``/clear``)."""
        if self._provider is not None:
            await self._provider.aclose()
        self._transcript.close()
        await self.stop_pane_mirror()
        await self.stop_fleet_mirrors()

    async def aclose(self) -> None:
        if self._extensions is not None:
            await self._extensions.aclose()
        if self._provider is not None:
            await self._provider.aclose()
        for own in self._own_providers:
            await own.aclose()
        registry = self._registry
        tools = [tool for name in registry.names() if (tool := registry.get(name))]
        if self._live is not None:
            tools += self._live.parked_tools()  # switched off mid-session, maybe after use
        for tool in tools:
            # Tools holding processes (python_repl's interpreter) stop them here.
            closer = getattr(tool, "aclose", None)
            if closer is None:
                continue
            try:
                await closer()
            except Exception as error:  # one tool failing to close must not stop the rest
                self._bus.publish(Notice(message=f"closing {tool.name}: {error}", level="warning"))
        await self.stop_pane_mirror()
        await self.stop_fleet_mirrors()
        await self._backend.close()
        if self._fleet is not None:
            await self._fleet.close()
        if self._sandbox is not None:
            await self._sandbox.close()
        self._transcript.close()


def _is_a_session_api(session: AgentSession) -> SessionAPI:
    """Never called: ``mypy --strict`` checks here that ``AgentSession`` is a ``SessionAPI``."""
    return session


def untrusted_notice(trust: WorkspaceTrust) -> str:
    return (
        f"{len(trust.held)} setting(s) from this workspace's files are not applied "
        "(untrusted); /trust reviews them again"
    )


def trust_workspace(loaded: LoadedSettings) -> None:
    """Record in the user's config that the person trusts these very workspace files."""
    from tui.security.trust import save_trust

    save_trust(loaded.user_config_path, loaded.trust.key, loaded.trust.digest)

"""Wiring one ``AgentSession`` from settings: provider, transcript, policy, tools, loop.

Kept apart from ``session.py`` (the object the app and headless mode talk to) because only the
composition root builds sessions; the rest of the house only uses one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.agent.checkpoints import Checkpoints, store_for
from tui.agent.execution import ToolPlan
from tui.agent.history import prepare_resume
from tui.agent.hooks import Hooks, PreToolDecision, ToolCallInfo
from tui.agent.live_settings import LiveSettings
from tui.agent.loop import AgentLoop, LoopSettings
from tui.agent.named_subagents import build_named_subagents
from tui.agent.prompt import build_system_prompt
from tui.agent.providers.base import Message, Provider, ProviderError
from tui.agent.providers.factory import make_provider
from tui.agent.recorder import EventRecorder
from tui.agent.subagent import SubAgentTool
from tui.agent.transcript import SessionStore, Transcript
from tui.bus import EventBus
from tui.config import LoadedSettings, Settings
from tui.events import ErrorEvent, Event, Notice
from tui.exec.backend import ExecutionBackend
from tui.exec.local import LocalBackend
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.tmux_pane import tmux_pane
from tui.extensions import Extensions
from tui.locations import config_dir, data_dir
from tui.security.approval import ApprovalBroker, Approver
from tui.security.confinement import WORKSPACE, WORKSPACE_NET, SandboxFacts
from tui.security.grants import GrantStore
from tui.security.policy import SecurityPolicy
from tui.session import AgentSession
from tui.startup_gc import release as release_collector
from tui.tools.base import Tool
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.builtin.config_tool import ConfigTool
from tui.tools.builtin.memory.tools import MemoryScope
from tui.tools.loops import LoopMemory
from tui.tools.registry import ToolRegistry
from tui.tools.structured_output import StructuredOutputTool, load_json_schema
from tui.tools.timeouts import ToolTimeouts

if TYPE_CHECKING:
    from tui.exec.fleet.fleet import Fleet
    from tui.targets import Target

ApproverFactory = Callable[[EventBus], Approver]

STRUCTURED_ANSWER_PROMPT = (
    "This run needs a machine-readable answer: when the task is done, call structured_output "
    "once with the final answer. Text you write outside that call is not delivered."
)


def build_session(
    workspace: Path,
    loaded: LoadedSettings,
    *,
    approver_factory: ApproverFactory | None = None,
    resume: str | None = None,
    continue_latest: bool = False,
    backend: ExecutionBackend | None = None,
    provider: Provider | None = None,
    local_paths: bool = True,
    target_home: str | None = None,
    sandbox: Sandbox | None = None,
    commands: Sandbox | None = None,
    unsandboxed: str | None = None,
    checkpoints: bool = False,
    fleet: Fleet | None = None,
    with_model: bool = True,
    store: SessionStore | None = None,
    target: Target | None = None,
) -> AgentSession:
    """Wire one session. A missing or unusable provider is not fatal here: the app still opens
    (and says what to set); headless mode turns ``provider_error`` into its exit message.

    ``checkpoints``: snapshot the workspace around each turn for ``/undo`` (the app, on a
    workspace of this machine). ``with_model=False``: a session that talks to no model (one
    tool call from the command line): no provider, loop or tools that need one. ``store``:
    where sessions are saved (default: the data folder's). ``target``: an opened target
    (``tui.targets``), which then gives the backend, its sandboxes, its home and its fleet.

    Raises:
        JsonSchemaError: ``[agent] json_schema`` names a missing or invalid schema file.
    """
    if target is not None:
        backend, local_paths, target_home = target.backend, target.local_paths, target.home
        sandbox, commands, fleet = target.sandbox, target.commands, target.fleet
        unsandboxed = target.unsandboxed
    settings = loaded.settings
    wants_schema = with_model and settings.agent.json_schema
    answer_schema = load_json_schema(schema_path(loaded, workspace)) if wants_schema else None
    bus = EventBus()
    store = store or SessionStore()
    warnings = workspace_warnings(loaded)

    provider_error: str | None = None
    if not with_model:
        provider_error = "this run talks to no model"
    elif provider is None:
        try:
            provider = make_provider(
                settings.provider.name,
                settings.provider.model or "",
                api_key=settings.provider.api_key.get_secret_value()
                if settings.provider.api_key
                else None,
                base_url=settings.provider.base_url,
                stream=settings.provider.stream,
                api=settings.provider.api,
                thinking_budget=settings.provider.thinking_budget,
                reasoning_effort=settings.provider.reasoning_effort,
                idle_timeout=settings.provider.idle_timeout,
                deadline=settings.provider.request_timeout,
            )
        except ProviderError as error:
            provider_error = error.msg

    messages: list[Message] = []
    if continue_latest and resume is None:
        latest = store.latest(workspace)
        resume = latest.id if latest else None
    if resume is not None:
        transcript = store.open(resume)
        messages = prepare_resume(store.load_messages(transcript.id))
    else:
        transcript = store.create(
            workspace, settings.provider.name, settings.provider.model or "(none)"
        )
    transcript.on_trouble(lambda reason: _disk_trouble(bus, transcript, reason))
    bus.add_listener(EventRecorder(transcript))

    broker = ApprovalBroker(bus.publish, timeout=settings.approval.timeout)
    approver = approver_factory(bus) if approver_factory is not None else broker
    if commands is None and unsandboxed is None:
        commands = sandbox  # a session on this machine: its commands use this sandbox
    if commands is not None and unsandboxed is None:
        facts = commands.facts()
        if backend is None or tmux_pane(backend) is None:  # not a shared pane's shell
            facts = replace(facts, per_command=True)
    else:
        facts = SandboxFacts(absent=unsandboxed or "no sandbox: the rater decides")
    policy = (SecurityPolicy if fleet is None else _fleet_policy_class())(
        workspace,
        settings.security,
        approval_mode=settings.approval.mode,
        approver=approver,
        grants=GrantStore(workspace, loaded.user_config_path),
        on_event=bus.publish,
        local_paths=local_paths,
        target_home=target_home,
        sandbox=facts,
    )
    confine = None
    for box in {id(b): b for b in (sandbox, commands) if b is not None}.values():
        # One mode for the policy and the walls: a /mode change moves both at once.
        box.approval_mode = lambda: policy.approval_mode
    if fleet is not None:
        from tui.exec.fleet.attach import attach_fleet

        attach_fleet(fleet, policy, bus.publish, commands)
    if sandbox is not None:
        sandbox.on_refused = lambda refusal: bus.publish(
            Notice(
                message=f"sandbox proxy refused {refusal.host}:{refusal.port}: {refusal.reason}",
                level="warning",
            )
        )
        if sandbox.active:
            confine = sandbox.confiner(
                WORKSPACE_NET if settings.sandbox.servers_network == "proxy" else WORKSPACE
            )
    backend = backend or LocalBackend(default_cwd=str(workspace), sandbox=commands)
    policy.follow_shell(backend.shell_cwd)
    registry = ToolRegistry(
        loops=LoopMemory(
            settings.agent.loop_ping_pong_cycles, settings.agent.loop_no_progress_repeats
        ),
        timeouts=ToolTimeouts(settings.agent.tool_timeout, dict(settings.agent.tool_timeouts)),
    )
    extensions = Extensions(
        loaded,
        workspace,
        registry,
        bus.publish,
        env=policy.command_env(),
        local=local_paths,
        confine=confine,
    )
    for tool in agent_tools(
        settings,
        backend,
        # The workspace's own skills are text its author wrote: offered once it is trusted.
        workspace if local_paths and loaded.trust.trusted else None,
        extensions.cron_tools(),
        memory=MemoryScope(
            str(workspace) if local_paths else f"{backend.actor}:{workspace}",
            loaded.trust.trusted,
        ),
    ):
        if fleet is not None:
            _on_fleet(tool, fleet)
        registry.register(tool)
    browser = registry.get("browser")
    if browser is not None and sandbox is not None:
        browser.sandbox = sandbox  # type: ignore[attr-defined]  # Chromium runs inside it
    skill = registry.get("skill")
    warnings.extend(getattr(skill, "problems", []))
    hooks = Hooks(
        pre_commands=list(settings.hooks.pre_tool_use),
        post_commands=list(settings.hooks.post_tool_use),
        post_failure_commands=list(settings.hooks.post_tool_use_failure),
        session_id=transcript.id,
        # Hook commands run on this machine, whatever the target.
        cwd=str(workspace) if local_paths else str(Path.cwd()),
        env=policy.command_env(),
        confine=confine,
        transcript_path=str(transcript.path),
        approval_mode=lambda: policy.approval_mode.value,
    )
    shadow = None
    if checkpoints and local_paths:
        shadow = Checkpoints(workspace, store_for(data_dir(), workspace), transcript.id)
        bus.add_listener(shadow.observe)
        hooks.before_tool.append(_await_snapshot(shadow))
    loop: AgentLoop | None = None
    if provider is not None:
        loop = AgentLoop(
            provider=provider,
            registry=registry,
            backend=backend,
            policy=policy,
            system_prompt="",
            emit=bus.publish,
            settings=LoopSettings(
                max_turns=settings.agent.max_turns,
                plan=ToolPlan(settings.agent.strategy, settings.agent.batch_size),
                max_tokens=settings.provider.max_tokens,
                subagent_max_turns=settings.agent.subagent_max_turns,
                require_structured_output=answer_schema is not None,
                context_window=settings.provider.context_window,
            ),
            hooks=hooks,
            on_message=transcript.append_message,
            messages=messages,
            on_compaction=transcript.append_compaction,
        )
        if settings.tools.enabled("agent"):
            registry.register(SubAgentTool(loop))
        if answer_schema is not None:
            registry.register(StructuredOutputTool(answer_schema))
    live = LiveSettings(
        settings, registry, loop, config_disabled=frozenset(settings.tools.disabled())
    )
    if with_model and settings.tools.enabled("config"):  # the live session's knobs
        registry.register(ConfigTool(live))
    own_providers: list[Provider] = []
    if loop is not None:
        named = build_named_subagents(
            settings.subagents,
            settings.provider,
            loop,
            workspace=workspace,
            actor=backend.actor,
            taken=registry.names(),
        )
        for tool in named.tools:
            if settings.tools.enabled(tool.name):  # `[tools] NAME = false` switches it off
                registry.register(tool)
        own_providers = named.providers
        warnings.extend(named.warnings)
        loop.system_prompt = build_system_prompt(
            workspace,
            actor=backend.actor,
            guard=policy.paths,
            notes=warnings,
            global_folder=config_dir(),
            extra="\n\n".join(
                part
                for part in (
                    settings.agent.system_prompt,
                    STRUCTURED_ANSWER_PROMPT if answer_schema is not None else None,
                    _fleet_prompt(fleet) if fleet is not None else None,
                )
                if part
            )
            or None,
            # No tool list here: MCP and OpenAPI tools arrive after this, `config` can switch
            # tools off, and the request's definitions always carry the live set.
        )
    session = AgentSession(
        workspace=workspace,
        loaded=loaded,
        bus=bus,
        policy=policy,
        backend=backend,
        registry=registry,
        provider=provider,
        provider_error=provider_error,
        transcript=transcript,
        store=store,
        loop=loop,
        broker=broker if approver is broker else None,
        warnings=warnings,
        live=live,
        extensions=extensions,
        own_providers=own_providers,
        sandbox=sandbox,
        checkpoints=shadow,
        fleet=fleet,
    )
    for warning in warnings:
        bus.publish(Notice(message=warning, level="warning"))
    release_collector()  # start-up is over (tui/startup_gc.py)
    return session


def _await_snapshot(
    shadow: Checkpoints,
) -> Callable[[ToolCallInfo], Awaitable[PreToolDecision | None]]:
    """A before-tool hook: no call changes a file before the turn's snapshot is taken."""

    async def wait(call: ToolCallInfo) -> PreToolDecision | None:
        await shadow.ready()
        return None

    return wait


def agent_tools(
    settings: Settings,
    backend: ExecutionBackend,
    workspace: Path | None,
    cron: list[Tool[Any]],
    *,
    memory: MemoryScope | None = None,
) -> list[Tool[Any]]:
    """The tools a session starts with, minus those the settings switch off.

    One definition for the agent, ``agent-tui tools`` and ``agent-tui tool``: what the CLI
    lists is what it can run, and both are what the model gets. The rest joins a live session
    later, as it needs one: MCP and OpenAPI tools (their servers), ``agent`` and
    ``structured_output`` (the model loop), ``config`` (the live settings).

    Args:
        settings: which tools are on, web_search's endpoint, the browser's settings.
        backend: where commands run; the tmux tools come only with a tmux backend.
        workspace: whose skills ``skill`` offers (None: a workspace not on this machine).
        cron: the cron tools, on the store (and scheduler) of the caller.
        memory: which memory notes go to (see ``MemoryScope``).
    """
    tools = [
        tool
        for tool in (*builtin_tools(backend, workspace, memory), *cron)
        if settings.tools.enabled(tool.name)
    ]
    for tool in tools:
        if tool.name == "web_search":
            tool.search_url = settings.web.search_url  # type: ignore[attr-defined]
        elif tool.name == "run_shell":
            tool.disk_cap = settings.agent.output_disk_cap  # type: ignore[attr-defined]
        elif tool.name == "browser":
            browser = settings.browser
            tool.executable = browser.executable  # type: ignore[attr-defined]
            tool.allow_downloads = browser.allow_downloads  # type: ignore[attr-defined]
            tool.allow_file_urls = browser.allow_file_urls  # type: ignore[attr-defined]
            tool.action_timeout = browser.action_timeout  # type: ignore[attr-defined]
    return tools


def _fleet_policy_class() -> type[SecurityPolicy]:
    from tui.security.fleet_policy import FleetPolicy

    return FleetPolicy


def _on_fleet(tool: Tool[Any], fleet: Fleet) -> None:
    """A fleet's tools: ``host``/``hosts`` in their schemas, run_shell knows the fleet."""
    from tui.tools.fleet_calls import give_fleet_arguments

    give_fleet_arguments(tool)
    if tool.name == "run_shell":
        tool.fleet = fleet  # type: ignore[attr-defined]


def _fleet_prompt(fleet: Fleet) -> str:
    """What the model is told of the fleet: its hosts, groups and default host."""
    inventory = fleet.inventory
    groups = [
        f"{name} ({len(members)})"
        for name, members in inventory.groups.items()
        if name not in ("all", "ungrouped") and members
    ]
    names = list(inventory.hosts)
    shown = ", ".join(names[:40]) + (f", … ({len(names)} in all)" if len(names) > 40 else "")
    return (
        f"Commands run on a fleet of {len(names)} SSH hosts: {shown}. "
        + (f"Groups: {', '.join(groups)}. " if groups else "")
        + f"Without `hosts`/`host`, calls act on the default host {fleet.default_host}. "
        "run_shell with hosts (a host, group, pattern such as 'web:&prod', or 'all') runs the "
        "command on each of those hosts and reports each one; file and tmux tools take `host`."
    )


def schema_path(loaded: LoadedSettings, workspace: Path) -> Path:
    """``[agent] json_schema``: a relative path is read from the folder of the config file that
    set it (``--json-schema`` already made its path absolute), else from the workspace."""
    path = Path(str(loaded.settings.agent.json_schema)).expanduser()
    if path.is_absolute():
        return path
    origin = loaded.origin("agent.json_schema")
    for config_file in (loaded.workspace_config_path, loaded.user_config_path):
        if config_file is not None and str(config_file) in origin:
            return config_file.parent / path
    return workspace / path


def _disk_trouble(bus: EventBus, transcript: Transcript, reason: str) -> None:
    """Say so when the session file falls behind (a full disk) and when it catches up. Said
    after the record being written, never from inside it (the transcript is a listener)."""
    if reason:
        event: Event = ErrorEvent(
            title="Session file",
            message=f"the session file {transcript.path} cannot be written ({reason}); "
            "what happens is kept in memory and written when there is room again",
        )
    else:
        event = Notice(
            message=f"the session file {transcript.path} caught up: it is whole again",
            level="warning",
        )
    try:
        asyncio.get_running_loop().call_soon(bus.publish, event)
    except RuntimeError:
        bus.publish(event)


def workspace_warnings(loaded: LoadedSettings) -> list[str]:
    """What a workspace's own files tried to change and did not: said out loud every time, so
    a cloned repository never changes settings unseen."""
    trust = loaded.trust
    warnings = []
    if trust.refused:
        keys = ", ".join(change.key for change in trust.refused)
        warnings.append(f"ignored {keys} from {trust.files[0]}: only your own config sets these")
    return warnings

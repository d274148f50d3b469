"""What joins a session after it is built: MCP servers, OpenAPI specs and the job scheduler.

Servers take seconds to start and specs may come over the network, so none of it may delay
the first frame or the session itself. ``start`` runs in the background (the app) or is
awaited before the first prompt (headless mode); tools arrive in the registry when ready,
and the next model request sees them. A server or spec that fails is a notice and a line in
``/mcp``, never a failed session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.agent.scheduler import JobOutcome, Scheduler, backend_command_runner
from tui.config import LoadedSettings, McpServerSettings
from tui.events import Event, Notice
from tui.exec.sandbox.sandbox import Confine
from tui.locations import data_dir
from tui.security.own_environ import process_environ
from tui.tools.adapters.mcp.config import load_project_servers
from tui.tools.builtin.cron.store import CronStore
from tui.tools.builtin.cron.tools import cron_tools
from tui.tools.builtin.tool_search import ToolSearchTool

if TYPE_CHECKING:
    from tui.exec.backend import ExecutionBackend
    from tui.tools.adapters.mcp.tools import McpManager
    from tui.tools.base import Tool
    from tui.tools.registry import ToolRegistry

PromptRunner = Callable[[str], Awaitable[JobOutcome]]


@dataclass
class AdapterSource:
    """One MCP server or OpenAPI spec and the tools it gave."""

    name: str
    defer: bool
    tools: list[Tool[Any]] = field(default_factory=list)


class Extensions:
    """MCP, OpenAPI and cron for one session.

    Args:
        loaded: the session's settings (and where each came from).
        workspace: the session's workspace, where ``.mcp.json`` is looked for.
        registry: the session's tools; adapter tools are added and replaced here.
        publish: the bus.
        env: the safe environment MCP servers start with.
        local: whether the workspace is on this machine (a remote one has no ``.mcp.json``
            here to read).
        confine: puts stdio MCP servers in the sandbox (None: no sandbox here).
    """

    def __init__(
        self,
        loaded: LoadedSettings,
        workspace: Path,
        registry: ToolRegistry,
        publish: Callable[[Event], None],
        *,
        env: dict[str, str],
        local: bool = True,
        confine: Confine | None = None,
    ) -> None:
        self.loaded = loaded
        self.settings = loaded.settings
        self.workspace = workspace
        self.registry = registry
        self.publish = publish
        self.problems: list[str] = []
        """Start-up problems (a broken .mcp.json, a bad spec), also published as notices."""
        servers: dict[str, McpServerSettings] = dict(self.settings.mcp.servers)
        untrusted: dict[str, McpServerSettings] = {}
        sources = dict.fromkeys(servers, "settings")
        self.project_file: Path | None = None
        if local:
            trusted = loaded.trust.trusted
            # Untrusted, the servers are only listed: their ${VAR}s stay unread.
            project, problems = load_project_servers(workspace, expand=trusted)
            self.problems.extend(problems)
            if project:
                self.project_file = workspace / ".mcp.json"
                for name, server in project.items():
                    if name in servers:
                        continue  # the person's own config wins over a project's file
                    (servers if trusted else untrusted)[name] = server
                    sources[name] = str(self.project_file)
        self.mcp: McpManager | None = None
        if servers or untrusted:
            # The SDK costs half a second to import: only sessions with servers pay for it.
            from tui.tools.adapters.mcp.tools import McpManager

            self.mcp = McpManager(
                servers,
                env=env,
                cwd=workspace if local else Path.cwd(),
                log_dir=data_dir() / "mcp-logs",
                on_event=publish,
                untrusted=untrusted,
                sources=sources,
                on_tools_changed=self._server_tools_changed,
                confine=confine,
            )
        self._mcp_defer = {name for name, s in servers.items() if s.defer}
        self._openapi: list[AdapterSource] = []
        self._registered: list[str] = []
        self.store = CronStore()
        self.scheduler: Scheduler | None = None
        self._scheduler_task: asyncio.Task[None] | None = None
        self.started = asyncio.Event()

    # -- tools ---------------------------------------------------------------------------------

    def cron_tools(self) -> list[Tool[Any]]:
        """The cron tools, waking the scheduler (once it runs) when jobs change."""
        return cron_tools(self.store, on_change=self._wake_scheduler)

    def _wake_scheduler(self) -> None:
        if self.scheduler is not None:
            self.scheduler.wake()

    def has_servers(self) -> bool:
        """MCP servers or OpenAPI specs are configured: the tools depend on their answers."""
        return self.mcp is not None or any(spec.enabled for spec in self.settings.openapi.values())

    async def start(self) -> None:
        """Start servers and load specs together; never raises."""
        try:
            for problem in self.problems:
                self.publish(Notice(message=problem, level="warning"))
            await asyncio.gather(
                *([self.mcp.start()] if self.mcp is not None else []),
                *(
                    self._load_spec(name)
                    for name, spec in self.settings.openapi.items()
                    if spec.enabled
                ),
            )
            self.refresh_tools()
        finally:
            self.started.set()

    async def _load_spec(self, name: str) -> None:
        from tui.tools.adapters.openapi.spec import OpenApiSpecError
        from tui.tools.adapters.openapi.tools import build_openapi_toolset

        spec = self.settings.openapi[name]
        origin = self.loaded.origin(f"openapi.{name}.spec")
        base_dir = self.workspace
        for config_file in (self.loaded.workspace_config_path, self.loaded.user_config_path):
            if config_file is not None and str(config_file) in origin:
                base_dir = config_file.parent  # a relative spec path is the config file's
                break
        try:
            toolset = await build_openapi_toolset(
                name, spec, base_dir=base_dir, env=process_environ()
            )
        except OpenApiSpecError as error:
            message = f"OpenAPI `{name}`: {error.msg}"
            self.problems.append(message)
            self.publish(Notice(message=message, level="warning"))
            return
        for skipped in toolset.skipped:
            self.problems.append(f"OpenAPI `{name}`: skipped {skipped}")
        if toolset.skipped:
            self.publish(
                Notice(
                    message=f"OpenAPI `{name}`: {len(toolset.skipped)} operation(s) skipped "
                    f"(see /mcp); {len(toolset.tools)} tool(s) ready",
                    level="warning",
                )
            )
        self._openapi.append(AdapterSource(name, spec.defer, toolset.tools))

    def _server_tools_changed(self, server: str) -> None:
        if self.started.is_set():  # during start-up, start() registers everything at its end
            self.refresh_tools()
            self.publish(Notice(message=f"MCP server `{server}` changed its tools"))

    def refresh_tools(self) -> None:
        """Put the adapters' current tools in the registry, deferring big sets.

        Called after start-up and after a server restart; the loop reads the registry at
        each request, so this takes effect from the next one.
        """
        for name in self._registered:
            self.registry.unregister(name)
        self._registered = []
        sources: list[AdapterSource] = []
        by_server: dict[str, list[Tool[Any]]] = {}
        for tool in self.mcp.tools() if self.mcp is not None else []:
            server = getattr(tool, "server", tool.name.split("__", 1)[0])
            by_server.setdefault(server, []).append(tool)
        for server, tools in by_server.items():
            sources.append(AdapterSource(server, server in self._mcp_defer, tools))
        sources.extend(self._openapi)
        enabled = self.settings.tools.enabled
        total = sum(1 for s in sources for t in s.tools if enabled(t.name))
        threshold = self.settings.agent.defer_tools_above
        defer_all = 0 < threshold < total
        for source in sources:
            for tool in source.tools:
                if not enabled(tool.name) or tool.name in self.registry:
                    continue
                self.registry.register(tool, deferred=defer_all or source.defer)
                self._registered.append(tool.name)
        self.registry.unregister("tool_search")
        if self.registry.deferred_tools() and enabled("tool_search"):
            self.registry.register(ToolSearchTool(self.registry))

    # -- /mcp ----------------------------------------------------------------------------------

    def describe(self) -> str:
        if self.mcp is not None:
            from tui.tools.adapters.mcp.tools import describe_states

            lines = [describe_states(self.mcp.states())]
        else:
            lines = ["No MCP servers configured ([mcp.servers.NAME] or a project .mcp.json)."]
        if self._openapi:
            lines.append("")
            lines += [
                f"OpenAPI `{s.name}`: {len(s.tools)} tool(s)" + (" (deferred)" if s.defer else "")
                for s in self._openapi
            ]
        deferred = len(self.registry.deferred_tools())
        if deferred:
            lines.append(f"{deferred} tool(s) deferred: the model loads them with tool_search")
        if self.problems:
            lines += ["", "Problems:", *(f"- {p}" for p in self.problems)]
        if self.project_file is not None and not self.loaded.trust.trusted:
            lines += ["", f"{self.project_file} is not trusted: `/trust` starts its servers"]
        return "\n".join(lines)

    async def restart(self, name: str) -> None:
        """Raises ValueError naming the problem (unknown or untrusted server)."""
        if self.mcp is None:
            raise ValueError("no MCP servers are configured")
        await self.mcp.restart(name)
        self.refresh_tools()

    # -- cron ----------------------------------------------------------------------------------

    def start_scheduler(
        self, backend: ExecutionBackend, env: dict[str, str], run_prompt: PromptRunner
    ) -> None:
        """Run due jobs from now until ``aclose`` (the app only: a headless run is one turn)."""
        if not self.settings.cron.enabled or self._scheduler_task is not None:
            return
        run_command = backend_command_runner(
            backend, cwd=str(self.workspace), env=env, timeout=self.settings.cron.command_timeout
        )
        self.scheduler = Scheduler(
            self.store, run_command=run_command, run_prompt=run_prompt, publish=self.publish
        )
        self._scheduler_task = asyncio.get_running_loop().create_task(
            self.scheduler.run(), name="cron scheduler"
        )

    async def aclose(self) -> None:
        if self._scheduler_task is not None:
            self._scheduler_task.cancel()
            await asyncio.gather(self._scheduler_task, return_exceptions=True)
            self._scheduler_task = None
        if self.mcp is not None:
            await self.mcp.aclose()

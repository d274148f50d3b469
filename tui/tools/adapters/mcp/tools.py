"""Model Context Protocol servers as tools: ``McpManager`` runs them, ``McpTool`` calls them.

Each configured server (stdio program or streamable-HTTP endpoint) is started in parallel
and bounded by its ``startup_timeout``; whatever goes wrong becomes the server's state, shown
by ``/mcp``, never an exception in the app. Every tool a connected server lists becomes a
``SchemaTool`` named ``server__tool`` that carries the server's input schema unchanged, so
bad arguments are refused here with one clear message before the server sees them.
A server that announces ``notifications/tools/list_changed`` is listed again, and the
manager's ``on_tools_changed`` names it so the owner can rebuild its tool set.

Permissions follow the server's own hints: ``readOnlyHint`` makes a read-only tool,
``destructiveHint`` one that needs full access, anything else writes (and counts as acting).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import mcp_types

from tui.config import McpServerSettings
from tui.errors import ExecutionFailed
from tui.events import Event, Notice
from tui.exec.sandbox.sandbox import Confine
from tui.security.permissions import PermissionMode
from tui.tools.adapters.mcp.client import McpConnection, ServerStateName
from tui.tools.adapters.mcp.config import load_project_servers
from tui.tools.base import Tool, ToolAccess
from tui.tools.context import ToolContext
from tui.tools.result import ContentPart, ImageContent, ToolResult
from tui.tools.schema_tool import RawParams, SchemaTool
from tui.tools.truncation import TruncationRule

__all__ = [
    "McpManager",
    "McpServerState",
    "McpTool",
    "describe_states",
    "load_project_servers",
    "mcp_tool_name",
]

MAX_TOOL_NAME = 64
"""The longest tool name OpenAI and Anthropic accept."""
SETTINGS_SOURCE = "settings"
PROJECT_SOURCE = ".mcp.json"


@dataclass
class McpServerState:
    """One server as ``/mcp`` shows it."""

    name: str
    transport: Literal["stdio", "http"]
    state: ServerStateName
    tool_count: int
    error: str | None
    """Why it failed, crashed or is not started; None when all is well."""
    source: str
    """Where it was configured: ``settings`` or ``.mcp.json``."""
    pid: int | None = None
    """The stdio server's process id while it runs."""


# ------------------------------------------------------------------------------ tools


RELIST_WAIT = 5.0
"""Seconds a call waits for the tool list its own ``tools/list_changed`` notice asked for."""


class McpTool(SchemaTool[RawParams]):
    """One tool of one MCP server, looked up by server name at call time.

    Holding the server's name rather than its connection lets a registry built before a
    ``/mcp restart`` keep working afterwards.
    """

    honours_cancel: ClassVar[bool] = True
    truncation: ClassVar[TruncationRule] = TruncationRule.head(16000, keep_tail=2000)

    def __init__(
        self,
        *,
        name: str,
        server: str,
        remote: mcp_types.Tool,
        connection_of: Callable[[str], McpConnection | None],
    ) -> None:
        super().__init__(remote.input_schema)
        self.server = server
        self.remote_name = remote.name
        self._connection_of = connection_of
        annotations = remote.annotations
        title = remote.title or (annotations.title if annotations else None) or remote.name
        summary = (remote.description or "").strip() or f"The `{remote.name}` tool."
        # Tool declares these as class attributes; an MCP tool only learns them at run time.
        self.__dict__.update(
            name=name,
            label=f"{server}: {title}",
            description=f"{summary}\n\n(Tool `{remote.name}` of the MCP server `{server}`.)",
            permission=_permission(annotations),
        )

    def access(self, params: RawParams) -> ToolAccess:
        acting = None if self.permission == PermissionMode.READ_ONLY else True
        return ToolAccess(permission=self.permission, subject=self.name, acting=acting)

    async def execute(self, params: RawParams, ctx: ToolContext) -> ToolResult:
        connection = self._connection_of(self.server)
        if connection is None:
            raise ExecutionFailed(
                f"MCP server `{self.server}` is no longer configured; its tools are gone"
            )
        result = await connection.call(
            self.remote_name, params.arguments(), cancel=ctx.cancel, on_progress=ctx.on_progress
        )
        await connection.tools_settled(min(RELIST_WAIT, connection.settings.startup_timeout))
        return convert_result(result, server=self.server, tool=self.remote_name)


def _permission(annotations: mcp_types.ToolAnnotations | None) -> PermissionMode:
    if annotations is not None and annotations.read_only_hint:
        return PermissionMode.READ_ONLY
    if annotations is not None and annotations.destructive_hint:
        return PermissionMode.DANGER_FULL_ACCESS
    return PermissionMode.WORKSPACE_WRITE


def mcp_tool_name(server: str, tool: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """``server__tool`` in the characters models accept, at most 64 long, not in ``taken``."""
    full = f"{server}__{tool}"
    base = re.sub(r"[^A-Za-z0-9_-]", "_", full)
    if len(base) > MAX_TOOL_NAME:
        digest = hashlib.sha1(full.encode()).hexdigest()[:8]
        base = f"{base[: MAX_TOOL_NAME - 9]}_{digest}"
    name = base
    counter = 2
    while name in taken:
        suffix = f"_{counter}"
        name = base[: MAX_TOOL_NAME - len(suffix)] + suffix
        counter += 1
    return name


def convert_result(result: mcp_types.CallToolResult, *, server: str, tool: str) -> ToolResult:
    """The server's content blocks as our result: text joined, images kept as images."""
    texts: list[str] = []
    parts: list[ContentPart] = []
    for block in result.content:
        part = _convert_block(block)
        if isinstance(part, str):
            texts.append(part)
        parts.append(part)
    if not texts and result.structured_content is not None:
        structured = json.dumps(result.structured_content, indent=2, ensure_ascii=False)
        texts.append(structured)
        parts.insert(0, structured)
    text = "\n".join(texts)
    details: dict[str, Any] = {"mcp_server": server, "mcp_tool": tool}
    if result.is_error:
        message = text or "(no message)"
        return ToolResult.error(
            "ExecutionFailed",
            f"`{tool}` on MCP server `{server}` reported an error: {message}",
            **details,
        )
    if not parts:
        return ToolResult("(the tool returned no content)", details)
    if all(isinstance(part, str) for part in parts):
        return ToolResult(text, details)
    # The registry bounds plain text only; with images beside it, bound the text here.
    parts, cut = _bound_text_parts(parts, McpTool.truncation.limit)
    if cut:
        details["truncated_chars"] = cut
    return ToolResult(parts, details)


def _bound_text_parts(parts: list[ContentPart], budget: int) -> tuple[list[ContentPart], int]:
    bounded: list[ContentPart] = []
    cut = 0
    for part in parts:
        if not isinstance(part, str):
            bounded.append(part)
        elif len(part) <= budget:
            bounded.append(part)
            budget -= len(part)
        else:
            cut += len(part) - budget
            if budget:
                bounded.append(part[:budget])
            budget = 0
    if cut:
        bounded.append(f"[{cut} characters of text cut]")
    return bounded, cut


def _convert_block(block: Any) -> ContentPart:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent):
        return ImageContent(data=block.data, mime_type=block.mime_type)
    if isinstance(block, mcp_types.AudioContent):
        return f"[audio {block.mime_type}, {len(block.data) * 3 // 4} bytes, not shown]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        mime = resource.mime_type or "application/octet-stream"
        if isinstance(resource, mcp_types.BlobResourceContents) and mime.startswith("image/"):
            return ImageContent(data=resource.blob, mime_type=mime)
        size = len(getattr(resource, "blob", "")) * 3 // 4
        return f"[resource {resource.uri}: {mime}, {size} bytes, not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        about = f": {block.description}" if block.description else ""
        return f"[resource link {block.name} <{block.uri}>{about}]"
    dumped = block.model_dump(mode="json") if hasattr(block, "model_dump") else block
    return json.dumps(dumped, ensure_ascii=False)


# ------------------------------------------------------------------------------ manager


class McpManager:
    """Every configured MCP server: started together, listed for ``/mcp``, stopped together.

    Args:
        servers: the servers that may start (settings plus trusted project ones).
        env: the safe base environment; each server's own ``env`` is laid over it.
        cwd: where stdio servers run unless their ``cwd`` says otherwise (relative to this).
        log_dir: each stdio server's stderr goes to ``log_dir/NAME.log``.
        on_event: receives a ``Notice`` when a server fails to start or crashes.
        untrusted: project servers listed as ``untrusted`` and never started.
        sources: where each server came from (default ``settings``; untrusted: ``.mcp.json``).
        on_tools_changed: called on the event loop with a server's name once its tool list was
            read again because it sent ``notifications/tools/list_changed``; ``tools()`` and
            ``states()`` already show the new list. Not called when that re-read fails.
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        *,
        env: Mapping[str, str],
        cwd: Path,
        log_dir: Path,
        on_event: Callable[[Event], None] | None = None,
        untrusted: Mapping[str, McpServerSettings] | None = None,
        sources: Mapping[str, str] | None = None,
        on_tools_changed: Callable[[str], None] | None = None,
        confine: Confine | None = None,
    ) -> None:
        self._servers = dict(servers)
        self._untrusted = {
            name: settings
            for name, settings in (untrusted or {}).items()
            if name not in self._servers
        }
        self._env = dict(env)
        self._cwd = cwd
        self._log_dir = log_dir
        self._confine = confine
        self._on_event = on_event
        self._sources = dict(sources or {})
        self._on_tools_changed = on_tools_changed
        self._connections: dict[str, McpConnection] = {}
        self._restarting: set[str] = set()

    async def start(self) -> None:
        """Start every enabled server at once; each is bounded by its startup_timeout.

        Never raises: a server that cannot start ends up ``failed`` with the reason.
        """
        starting = [
            self._connect(name)
            for name, settings in self._servers.items()
            if settings.enabled and name not in self._connections
        ]
        await asyncio.gather(*starting, return_exceptions=True)

    async def restart(self, name: str) -> None:
        """Stop ``name`` if it runs and start it again; ends ``connected`` or ``failed``.

        Raises:
            ValueError: no such server, or it is untrusted (``/mcp`` shows the message).
        """
        if name in self._untrusted:
            raise ValueError(
                f"MCP server `{name}` comes from this workspace's .mcp.json, which is not "
                "trusted; trust the workspace first"
            )
        if name not in self._servers:
            known = ", ".join(sorted(self._servers)) or "none"
            raise ValueError(f"no MCP server named `{name}` (configured: {known})")
        self._restarting.add(name)
        try:
            old = self._connections.pop(name, None)
            if old is not None:
                await old.stop()
            await self._connect(name)
        finally:
            self._restarting.discard(name)

    async def aclose(self) -> None:
        """Stop every server and wait for their processes to be gone."""
        connections = list(self._connections.values())
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)

    def tools(self) -> list[Tool[Any]]:
        """One tool per tool of each connected server; call again after a restart or a
        ``tools/list_changed`` (``on_tools_changed``)."""
        tools: list[Tool[Any]] = []
        taken: set[str] = set()
        for name in self._servers:
            connection = self._connections.get(name)
            if connection is None or connection.state != "connected":
                continue
            for remote in connection.tools:
                tool_name = mcp_tool_name(name, remote.name, taken)
                taken.add(tool_name)
                tools.append(
                    McpTool(
                        name=tool_name,
                        server=name,
                        remote=remote,
                        connection_of=self._connections.get,
                    )
                )
        return tools

    def deferred_servers(self) -> set[str]:
        """Servers whose tools are left to tool_search (``defer = true``)."""
        return {name for name, settings in self._servers.items() if settings.defer}

    def states(self) -> list[McpServerState]:
        states = []
        for name, settings in self._servers.items():
            source = self._sources.get(name, SETTINGS_SOURCE)
            connection = self._connections.get(name)
            if connection is None:
                state: ServerStateName = "disabled" if not settings.enabled else "stopped"
                error = (
                    "disabled in its settings (enabled = false)" if not settings.enabled else None
                )
                states.append(McpServerState(name, settings.transport, state, 0, error, source))
                continue
            running = connection.state in ("starting", "connected")
            states.append(
                McpServerState(
                    name=name,
                    transport=connection.transport,
                    state=connection.state,
                    tool_count=len(connection.tools) if connection.state == "connected" else 0,
                    error=connection.error,
                    source=source,
                    pid=connection.pid if running else None,
                )
            )
        for name, settings in self._untrusted.items():
            states.append(
                McpServerState(
                    name=name,
                    transport=settings.transport,
                    state="untrusted",
                    tool_count=0,
                    error="not started: this workspace's .mcp.json is not trusted",
                    source=self._sources.get(name, PROJECT_SOURCE),
                )
            )
        return states

    async def stderr_tail(self, name: str, lines: int = 20) -> list[str]:
        """The last stderr lines of a stdio server's current or last run."""
        connection = self._connections.get(name)
        return [] if connection is None else await connection.stderr_tail(lines)

    async def _connect(self, name: str) -> None:
        connection = McpConnection(
            name,
            self._servers[name],
            env=self._env,
            cwd=self._cwd,
            log_dir=self._log_dir,
            confine=self._confine,
            on_state=self._state_changed,
            on_tools_changed=self._tools_changed,
        )
        self._connections[name] = connection
        await connection.start()

    def _tools_changed(self, connection: McpConnection) -> None:
        # A connection replaced by a restart may still finish a re-list: not ours to report.
        if (
            self._on_tools_changed is None
            or self._connections.get(connection.name) is not connection
        ):
            return
        self._on_tools_changed(connection.name)

    def _state_changed(self, connection: McpConnection) -> None:
        if self._on_event is None or self._connections.get(connection.name) is not connection:
            return
        name = connection.name
        if connection.state == "failed":
            message = f"MCP server `{name}` failed to start: {connection.error}"
        elif connection.state == "crashed":
            message = (
                f"MCP server `{name}` crashed: {connection.error}\n"
                f"Its tools fail until `/mcp restart {name}`."
            )
        else:
            return
        self._on_event(Notice(message=message, level="warning"))


# ------------------------------------------------------------------------------ /mcp text

_MARKS: dict[str, str] = {
    "connected": "●",
    "starting": "…",
    "failed": "✗",
    "crashed": "✗",
    "stopped": "○",
    "disabled": "○",
    "untrusted": "?",
}


def describe_states(states: list[McpServerState]) -> str:
    """What ``/mcp`` shows: one line per server, its problem indented below it."""
    if not states:
        return (
            "No MCP servers configured. Add [mcp.servers.NAME] tables to the settings, or a "
            ".mcp.json to the workspace."
        )
    counts: dict[str, int] = {}
    for item in states:
        counts[item.state] = counts.get(item.state, 0) + 1
    summary = ", ".join(f"{count} {state}" for state, count in counts.items())
    lines = [f"MCP servers: {summary}"]
    for item in states:
        detail = f"{item.transport}, {item.source}"
        if item.pid is not None:
            detail += f", pid {item.pid}"
        status: str = item.state
        if item.state == "connected":
            status += f", {item.tool_count} tool{'s' if item.tool_count != 1 else ''}"
        lines.append(f"{_MARKS.get(item.state, '-')} {item.name} ({detail}): {status}")
        if item.error:
            lines.extend(f"    {line}" for line in item.error.splitlines())
        if item.state in ("crashed", "failed", "stopped"):
            lines.append(f"    restart it with /mcp restart {item.name}")
        elif item.state == "untrusted":
            lines.append("    trust this workspace with /mcp trust to start it")
    return "\n".join(lines)

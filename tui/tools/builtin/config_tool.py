"""``config``: read the session's settings, and change the few that steer how the agent works."""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

from pydantic import Field

from tui.errors import InvalidArguments
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult


class SettingsAccess(Protocol):
    """What the tool needs from the session (``tui.agent.live_settings.LiveSettings``)."""

    def keys(self) -> list[str]: ...
    def get(self, key: str) -> Any: ...
    def set(self, key: str, raw: Any) -> str: ...


class ConfigParams(ToolParams):
    action: Literal["get", "set", "list"] = Field(
        description="get a value, set one for this session, or list what can be set."
    )
    key: str | None = Field(
        default=None,
        max_length=200,
        description='Dotted key, e.g. "agent.max_turns", "provider.model", "tools.web_search".',
    )
    value: Any = Field(default=None, description="The new value (set only), as JSON.")


class ConfigTool(Tool[ConfigParams]):
    name = "config"
    label = "Settings"
    Params = ConfigParams
    permission = PermissionMode.DANGER_FULL_ACCESS
    exclusive = True  # switching a tool off changes the tool set
    description = """Read agent-tui's settings for this session, or change one of the few that
can change while running (turn limit, tool strategy, model, switching a tool off or on).

Changes last for this session only. Approval, security, hooks and connection settings cannot
be changed by you: only the person can, in a config file.
When to use: the person asks to change how you work ("use the other model", "stop using web
search"); checking a setting before relying on it.
When NOT to use: to loosen approvals or security (refused); to edit config files (the person
does that).
Disambiguation: "get" and "list" only read; "set" needs approval.
Examples: {"action": "get", "key": "agent.strategy"}; {"action": "list"};
{"action": "set", "key": "tools.web_search", "value": false}"""

    def __init__(self, live: SettingsAccess) -> None:
        self.live = live

    def access(self, params: ConfigParams) -> ToolAccess:
        if params.action == "set":
            return ToolAccess(
                permission=PermissionMode.DANGER_FULL_ACCESS,
                subject=f"{params.key}={json.dumps(params.value)}",
            )
        return ToolAccess(permission=PermissionMode.READ_ONLY, subject=params.key, acting=False)

    async def execute(self, params: ConfigParams, ctx: ToolContext) -> ToolResult:
        if params.action == "list":
            return ToolResult("Settable while running: " + ", ".join(self.live.keys()))
        if not params.key:
            raise InvalidArguments(f'{params.action} needs a key, e.g. "agent.max_turns"')
        if params.action == "get":
            value = self.live.get(params.key)
            return ToolResult(f"{params.key} = {json.dumps(value, indent=2, default=str)}")
        if params.value is None and not params.key.startswith("provider.max_tokens"):
            raise InvalidArguments("set needs a value")
        return ToolResult(self.live.set(params.key, params.value))

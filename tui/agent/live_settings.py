"""The settings a running session can change, for the ``config`` tool and the app.

Reading is open (secrets masked); writing is limited to what changes how the agent works,
never what guards it: approval, security, hooks and connection settings are the person's, so
the agent cannot loosen its own leash. Changes last for the session and are not saved.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, PositiveInt, RootModel, SecretStr, TypeAdapter, ValidationError

from tui.agent.execution import Strategy, ToolPlan
from tui.config import Settings
from tui.errors import InvalidArguments, NotFound, PermissionDenied

if TYPE_CHECKING:
    from tui.agent.loop import AgentLoop
    from tui.tools.base import Tool
    from tui.tools.registry import ToolRegistry

PROTECTED_SECTIONS = ("approval", "security", "hooks", "ssh", "mcp", "openapi", "cron")
PROTECTED_KEYS = ("provider.api_key", "provider.base_url", "provider.name", "provider.api")


@dataclass
class Settable:
    adapter: TypeAdapter[Any]
    apply: Callable[[Any], None]
    what: str


@dataclass
class LiveSettings:
    """One session's settings, with the few runtime knobs wired to the objects they steer."""

    settings: Settings
    registry: ToolRegistry
    loop: AgentLoop | None = None
    config_disabled: frozenset[str] = frozenset()
    """Tools switched off in config files: only the person may switch them back on."""
    _parked: dict[str, Tool[Any]] = field(default_factory=dict)

    def _settables(self) -> dict[str, Settable]:
        loop = self.loop
        agent = self.settings.agent
        knobs: dict[str, Settable] = {}
        if loop is not None:

            def set_max_turns(value: int | None) -> None:
                agent.max_turns = loop.settings.max_turns = value

            def set_strategy(value: Strategy) -> None:
                agent.strategy = value
                loop.settings.plan = ToolPlan(value, loop.settings.plan.batch_size)

            def set_batch(value: int) -> None:
                agent.batch_size = value
                loop.settings.plan = ToolPlan(loop.settings.plan.strategy, value)

            def set_model(value: str) -> None:
                self.settings.provider.model = value
                loop.provider.model = value

            def set_max_tokens(value: int | None) -> None:
                self.settings.provider.max_tokens = loop.settings.max_tokens = value

            knobs["agent.max_turns"] = Settable(
                TypeAdapter(PositiveInt | None),
                set_max_turns,
                "requests per user message (>= 1), or null for no cap",
            )
            knobs["agent.strategy"] = Settable(
                TypeAdapter(Strategy), set_strategy, " | ".join(get_args(Strategy))
            )
            knobs["agent.batch_size"] = Settable(
                TypeAdapter(int), set_batch, "calls run together when batched (>= 1)"
            )
            knobs["provider.model"] = Settable(_STR, set_model, "a model id")
            knobs["provider.max_tokens"] = Settable(
                TypeAdapter(int | None), set_max_tokens, "answer token cap, or null"
            )
        return knobs

    def parked_tools(self) -> list[Tool[Any]]:
        """Tools switched off in this session (they may still hold a process to close)."""
        return list(self._parked.values())

    def keys(self) -> list[str]:
        return [*self._settables(), "tools.<name>"]

    def get(self, key: str) -> Any:
        if key.startswith("tools."):
            name = key.removeprefix("tools.")
            return name in self.registry
        node: Any = self.settings
        for part in key.split("."):
            if isinstance(node, BaseModel) and part in type(node).model_fields:
                node = getattr(node, part)
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise NotFound(f"no setting {key!r}; sections: {', '.join(Settings.model_fields)}")
        return _plain(node)

    def set(self, key: str, raw: Any) -> str:
        """Change one setting now; returns what changed, for the tool result."""
        section = key.split(".", 1)[0]
        if section in PROTECTED_SECTIONS or key in PROTECTED_KEYS:
            raise PermissionDenied(
                f"{key} guards what the agent may do or where it connects: only the person can "
                "change it, in a config file or with a command-line flag"
            )
        if key.startswith("tools."):
            return self._switch_tool(key.removeprefix("tools."), raw)
        knob = self._settables().get(key)
        if knob is None:
            raise NotFound(f"{key} cannot be changed while running; settable: {self.keys()}")
        if isinstance(raw, str) and knob.adapter is not _STR:
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                pass
        try:
            value = knob.adapter.validate_python(raw)
        except ValidationError as error:
            problem = error.errors()[0]["msg"]
            raise InvalidArguments(f"{key} must be {knob.what}: {problem}") from None
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise InvalidArguments(f"{key} must be {knob.what}")
        before = self.get(key)
        knob.apply(value)
        return f"{key}: {before!r} -> {value!r} (for this session)"

    def _switch_tool(self, name: str, raw: Any) -> str:
        on = raw if isinstance(raw, bool) else str(raw).strip().lower() in ("true", "1", "on")
        if on:
            if name in self.registry:
                return f"tools.{name} is already on"
            if name in self.config_disabled:
                raise PermissionDenied(
                    f"{name} is switched off in the config files; only the person can turn it on"
                )
            tool = self._parked.pop(name, None)
            if tool is None:
                raise NotFound(f"no tool named {name!r} was switched off in this session")
            self.registry.register(tool)
            return f"tools.{name}: off -> on (for this session)"
        tool = self.registry.get(name)
        if tool is None:
            raise NotFound(f"no tool named {name!r} is on")
        self._parked[name] = tool
        self.registry.unregister(name)
        return f"tools.{name}: on -> off (for this session)"


_STR = TypeAdapter(str)


def _plain(value: Any) -> Any:
    """JSON-ready, with secrets masked."""
    if isinstance(value, SecretStr):
        return "********" if value.get_secret_value() else ""
    if isinstance(value, RootModel):
        return _plain(value.root)
    if isinstance(value, BaseModel):
        return {key: _plain(getattr(value, key)) for key in type(value).model_fields}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if hasattr(value, "value") and not isinstance(value, int | str | float):
        return value.value
    return value

"""The tool contract: typed parameters, a declared permission, an async ``execute``."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from tui.security.access import ToolAccess as ToolAccess  # a tool author's one import
from tui.security.permissions import PermissionMode
from tui.tools.ready_schemas import lookup
from tui.tools.truncation import TruncationRule

if TYPE_CHECKING:
    from tui.tools.context import ToolContext
    from tui.tools.result import ToolResult


class ToolParams(BaseModel):
    """Base of every tool's parameters: unknown arguments are an error, not silently dropped.

    ``defer_build``: a model's validator is built at its tool's first call, not at import;
    start-up would otherwise build some forty of them, and the schemas the model is sent are
    generated ahead (``ready_schemas.py``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


P = TypeVar("P", bound=ToolParams)

REQUIRED_DESCRIPTION_SECTIONS = ("When to use", "When NOT to use", "Disambiguation", "Examples")


class Tool(ABC, Generic[P]):
    """A capability the model can call.

    Subclasses set the class attributes and implement ``execute``. The JSON schema of
    ``Params`` is exactly what the model sees, so field descriptions matter.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[ToolParams]]
    permission: ClassVar[PermissionMode] = PermissionMode.READ_ONLY
    truncation: ClassVar[TruncationRule] = TruncationRule.head(8000)
    aliases: ClassVar[dict[str, str]] = {}
    """Argument names models commonly use instead of ours (``cmd`` for ``command``)."""
    name_aliases: ClassVar[tuple[str, ...]] = ()
    """Other names a model trained elsewhere calls this tool by (ZeroClaw's ``bash``, ``sh``
    and ``shell`` for ``run_shell``); used only while no tool of that name is registered."""
    raw_argument: ClassVar[str | None] = None
    """The argument a bare string stands for (``"ls -la"`` → ``command``), as ZeroClaw's
    parser reads one; None: arguments must be a JSON object."""
    BareParams: ClassVar[type[ToolParams] | None] = None
    """The parameters of a call made by one of ``name_aliases`` or as a bare string: that
    seed's own contract, which may ask less than ``Params``. None: ``Params``."""
    honours_cancel: ClassVar[bool] = False
    """True when ``execute`` itself stops promptly once ``ctx.cancel`` is set, so the registry
    can await it directly instead of racing it against the cancel event."""
    exclusive: ClassVar[bool] = False
    """Never runs beside other calls (a call that changes the tool set, say)."""
    streams_output: ClassVar[bool] = False
    """True when ``execute`` streams its own output to ``ctx``; otherwise the registry sends
    the full result text to the UI stream once the call ends."""

    def parse_params(self, data: dict[str, Any]) -> ToolParams:
        """Validated params from the model's arguments (aliases already applied).

        Raises:
            pydantic.ValidationError: or InvalidArguments, from tools with their own schema.
        """
        return self.Params.model_validate(data)

    changes_panes: ClassVar[bool] = False
    """True when a call may change what a tmux pane shows (a command, keys, a new or killed
    pane): an unchanged-capture notice must then not stand for a screen seen before it."""

    def unchanged_key(self, params: P) -> str | None:
        """For a tool that only looks (a pane capture): what makes two calls "the same look",
        so a repeat whose result has not changed gets a short notice instead (see
        ``tools/unchanged.py``). None, the default: never replaced."""
        return None

    def access(self, params: P) -> ToolAccess:
        """What this call touches; override for tools with paths or commands."""
        return ToolAccess(permission=self.permission)

    async def preview(self, params: P, ctx: ToolContext) -> str | None:
        """What the call would change, as a unified diff, for the person asked to approve it.

        Read-only and best effort: None when there is nothing to show or it cannot be read
        (the call itself then reports the real problem). File tools override it.
        """
        return None

    @abstractmethod
    async def execute(self, params: P, ctx: ToolContext) -> ToolResult:
        """Run the call.

        Raises:
            ToolError: any subclass; the registry turns it into an ``is_error`` result.
        """

    def parameters_schema(self) -> dict[str, Any]:
        return params_schema(self.Params)

    def openai_definition(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema(),
            },
        }

    def anthropic_definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters_schema(),
        }


def params_schema(params: type[ToolParams]) -> dict[str, Any]:
    """The JSON schema the model sees for ``params``: generated ahead for the built-in tools
    (``ready_schemas.py`` says why), from the model itself for any other."""
    ready = lookup(params)
    return ready if ready is not None else generated_schema(params)


def generated_schema(params: type[ToolParams]) -> dict[str, Any]:
    return clean_schema(params.model_json_schema())


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's ``title`` noise; models read descriptions, titles only cost tokens."""

    def strip(node: Any, *, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            return {
                key: strip(value, in_properties=(key == "properties" and not in_properties))
                for key, value in node.items()
                if in_properties or key != "title"
            }
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    cleaned: dict[str, Any] = strip(schema)
    cleaned.setdefault("properties", {})
    return cleaned


def missing_description_sections(description: str) -> list[str]:
    """The mini-sections a built-in tool description lacks (a test holds every tool to them)."""
    return [
        section
        for section in REQUIRED_DESCRIPTION_SECTIONS
        if not re.search(rf"^\s*\**{re.escape(section)}\**\s*:", description, re.MULTILINE)
    ]

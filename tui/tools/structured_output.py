"""``structured_output``: the final answer as JSON that matches a schema the caller gave.

Scripts that run ``agent-tui -p --json-schema FILE`` need an answer they can parse. The schema
becomes this tool's parameters, so a wrong answer fails validation like any bad tool call and
the model retries with the problems listed; an accepted answer ends the turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tui.errors import AgentTuiError
from tui.security.permissions import PermissionMode
from tui.tools.base import ToolAccess
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.schema_tool import RawParams, SchemaTool

STRUCTURED_OUTPUT_KEY = "structured_output"
"""The ``ToolResult.details`` key that carries an accepted answer to the loop."""


class JsonSchemaError(AgentTuiError):
    title = "JSON schema"


def load_json_schema(path: Path) -> dict[str, Any]:
    """Read and check a schema file; any problem is one clear error naming the file."""
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JsonSchemaError(f"JSON schema file {path} does not exist") from None
    except (OSError, UnicodeError) as error:
        raise JsonSchemaError(f"cannot read JSON schema file {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise JsonSchemaError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(schema, dict):
        raise JsonSchemaError(f"{path} must hold a JSON object (a JSON Schema)")
    # ~30 ms: only runs that ask for a schema pay it
    import jsonschema  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except SchemaError as error:
        raise JsonSchemaError(f"{path} is not a valid JSON Schema: {error.message}") from None
    return schema


def answer_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Tool parameters must be an object: any other schema is wrapped under ``value``."""
    if schema.get("type") == "object":
        return schema
    return {"type": "object", "properties": {"value": schema}, "required": ["value"]}


class StructuredOutputTool(SchemaTool[RawParams]):
    name = "structured_output"
    label = "Final answer"
    permission = PermissionMode.READ_ONLY
    description = """Give your final answer as JSON matching this tool's parameters.

The caller needs machine-readable output: your answer is only delivered through this tool.
When to use: once, when the task is done, with the complete answer.
When NOT to use: for progress notes (use send_user_message) or partial answers.
Disambiguation: calling it ends your turn; a rejected answer lists what to fix, then call again.
Examples: call it with the fields the schema requires, filled in."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.wrapped = schema.get("type") != "object"
        super().__init__(answer_schema(schema))

    def access(self, params: RawParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY, acting=False)

    async def execute(self, params: RawParams, ctx: ToolContext) -> ToolResult:
        arguments = params.arguments()
        value = arguments["value"] if self.wrapped else arguments
        return ToolResult("Answer accepted.", {STRUCTURED_OUTPUT_KEY: value})

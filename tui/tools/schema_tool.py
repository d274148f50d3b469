"""Tools whose parameters are a JSON Schema from elsewhere (an MCP server, an OpenAPI spec).

Their schema is passed to the model as given, and arguments are checked against that same
schema with ``jsonschema``, so the model gets one clear error listing every problem instead of
a remote server's stack trace.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

from pydantic import ConfigDict

from tui.errors import InvalidArguments
from tui.tools.base import P, Tool, ToolParams


class RawParams(ToolParams):
    """Arguments already validated against a foreign JSON schema, kept as given."""

    model_config = ConfigDict(extra="allow")

    def arguments(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
MAX_REPORTED_PROBLEMS = 8


class SchemaTool(Tool[P]):
    """A tool built at run time around ``input_schema``.

    Subclasses set ``name``, ``label``, ``description`` and ``permission`` on the instance (not
    the class) and implement ``execute`` taking ``RawParams``.
    """

    Params: ClassVar[type[ToolParams]] = RawParams

    def __init__(self, input_schema: dict[str, Any] | None) -> None:
        schema = dict(input_schema or EMPTY_OBJECT_SCHEMA)
        if schema.get("type") is None:
            schema["type"] = "object"
        schema.setdefault("properties", {})
        self.input_schema = schema

    @cached_property
    def _validator(self) -> Any:
        """None when the foreign schema is itself broken: then arguments pass unchecked and
        the far side judges them, rather than the tool being unusable."""
        # ~30 ms: paid on the first call, not at every start
        import jsonschema  # type: ignore[import-untyped]
        from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

        default = jsonschema.Draft202012Validator
        cls = jsonschema.validators.validator_for(self.input_schema, default)
        try:
            cls.check_schema(self.input_schema)
        except SchemaError:
            return None
        return cls(self.input_schema)

    def parameters_schema(self) -> dict[str, Any]:
        return self.input_schema

    def parse_params(self, data: dict[str, Any]) -> ToolParams:
        if self._validator is not None:
            problems = sorted(self._validator.iter_errors(data), key=lambda e: list(e.path))
            if problems:
                raise InvalidArguments(
                    f"invalid arguments for {self.name}: " + "; ".join(_describe(problems))
                )
        return RawParams.model_validate(data)


def _describe(problems: list[Any]) -> list[str]:
    described = []
    for problem in problems[:MAX_REPORTED_PROBLEMS]:
        where = ".".join(str(part) for part in problem.absolute_path) or "(arguments)"
        message = problem.message if len(problem.message) <= 160 else problem.message[:157] + "..."
        described.append(f"{where}: {message}")
    if len(problems) > MAX_REPORTED_PROBLEMS:
        described.append(f"and {len(problems) - MAX_REPORTED_PROBLEMS} more")
    return described

"""One operation's arguments: the JSON schema the model fills, and where each value goes.

A tool's arguments are the operation's path, query, header and cookie parameters as top-level
properties, plus the request body under ``body``. Each property keeps a ``ParamBinding`` (its
name and place in the HTTP request, its serialisation style) so the request can be built from
the model's arguments later; the body keeps a ``BodyBinding`` (media type and encoding).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tui.tools.adapters.openapi.auth import credential_header_names
from tui.tools.adapters.openapi.names import MAX_PROPERTY_NAME, sanitize_property, unique_name
from tui.tools.adapters.openapi.spec import RefError, SpecResolver

if TYPE_CHECKING:
    from tui.config import OpenApiSpecSettings

IGNORED_HEADERS = {"accept", "content-type", "authorization"}
"""The OpenAPI spec says header parameters with these names are ignored."""
LOCATIONS = ("path", "query", "header", "cookie")


@dataclass
class SpecOperation:
    """One method of one path item, as the spec gives it (references not yet resolved)."""

    method: str
    path: str
    op: dict[str, Any]
    path_item: dict[str, Any]


@dataclass(frozen=True)
class ParamBinding:
    """Where one tool argument goes in the request."""

    prop: str
    """The argument name in the tool's schema."""
    name: str
    location: str
    """``path``, ``query``, ``header`` or ``cookie``."""
    style: str
    explode: bool
    as_json: bool = False
    """Parameters described by ``content`` instead of ``schema`` are sent as JSON text."""


@dataclass(frozen=True)
class BodyBinding:
    media_type: str
    kind: str
    """``json``, ``form`` or ``text``."""
    required: bool


@dataclass
class OperationArguments:
    """The argument schema of one operation and the bindings that turn it into a request."""

    schema: dict[str, Any]
    bindings: list[ParamBinding] = field(default_factory=list)
    body: BodyBinding | None = None

    @property
    def names(self) -> set[str]:
        """Every argument name the schema accepts."""
        return {binding.prop for binding in self.bindings} | ({"body"} if self.body else set())


def operation_arguments(
    operation: SpecOperation, resolver: SpecResolver, settings: OpenApiSpecSettings
) -> OperationArguments:
    """The arguments of ``operation``.

    Raises:
        RefError: The operation cannot become a tool (an unresolvable reference, a required
            body in a media type this adapter cannot send).
    """
    params = _parameters(operation, resolver)
    properties: dict[str, Any] = {}
    required: list[str] = []
    taken: set[str] = set()
    bindings: list[ParamBinding] = []
    body_schema, body = _body(operation.op, resolver)
    if body is not None:
        taken.add("body")
    ignored = IGNORED_HEADERS | credential_header_names(settings)
    for (name, location), param in params.items():
        if location not in LOCATIONS:
            continue
        if location == "header" and name.lower() in ignored:
            continue
        schema, as_json = _param_schema(param, resolver)
        prop = sanitize_property(name)
        if prop in taken:
            prop = sanitize_property(f"{location}_{name}")
        prop = unique_name(prop, taken, MAX_PROPERTY_NAME)
        default_style = {"query": "form", "cookie": "form"}.get(location, "simple")
        style = str(param.get("style") or default_style)
        explode = param.get("explode")
        bindings.append(
            ParamBinding(
                prop=prop,
                name=name,
                location=location,
                style=style,
                explode=bool(explode) if explode is not None else style == "form",
                as_json=as_json,
            )
        )
        properties[prop] = schema
        if location == "path" or param.get("required") is True:
            required.append(prop)
    if body is not None:
        properties["body"] = body_schema
        if body.required:
            required.append("body")
    result: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        result["required"] = required
    return OperationArguments(result, bindings, body)


def _parameters(
    operation: SpecOperation, resolver: SpecResolver
) -> dict[tuple[str, str], dict[str, Any]]:
    """The path item's and the operation's parameters by (name, location), the operation's
    winning; path parameters only where the URL has a place for them, and every placeholder
    of the URL covered."""
    params: dict[tuple[str, str], dict[str, Any]] = {}
    for source in (operation.path_item.get("parameters"), operation.op.get("parameters")):
        for raw in source if isinstance(source, list) else []:
            param = resolver.deref(raw)
            if not isinstance(param, dict) or not param.get("name") or not param.get("in"):
                continue
            params[(str(param["name"]), str(param["in"]))] = param
    placeholders = re.findall(r"\{([^{}]+)\}", operation.path)
    for name, where in list(params):
        if where == "path" and name not in placeholders:
            del params[(name, where)]  # the URL has no place for it
    for placeholder in placeholders:
        if (placeholder, "path") not in params:
            params[(placeholder, "path")] = {
                "name": placeholder,
                "in": "path",
                "required": True,
                "schema": {"type": "string"},
                "description": "(path parameter the spec does not describe)",
            }
    return params


def _param_schema(param: dict[str, Any], resolver: SpecResolver) -> tuple[dict[str, Any], bool]:
    as_json = False
    raw = param.get("schema")
    if raw is None and isinstance(param.get("content"), dict) and param["content"]:
        media = next(iter(param["content"].values()))
        raw = media.get("schema") if isinstance(media, dict) else None
        as_json = True
    schema = resolver.schema(raw if raw is not None else {})
    if not isinstance(schema, dict):
        schema = {} if schema is True else {"not": {}}
    text = " ".join(
        part
        for part in (
            str(param.get("description") or "").strip(),
            f"({param['in']} parameter {param['name']})",
            "Deprecated." if param.get("deprecated") else "",
        )
        if part
    )
    if not schema.get("description"):
        schema = {**schema, "description": text}
    if "example" in param and "examples" not in schema:
        schema["examples"] = [param["example"]]
    return schema, as_json


def _body(op: dict[str, Any], resolver: SpecResolver) -> tuple[Any, BodyBinding | None]:
    raw = op.get("requestBody")
    if raw is None:
        return None, None
    body = resolver.deref(raw)
    if not isinstance(body, dict):
        return None, None
    required = body.get("required") is True
    content = body.get("content")
    content = content if isinstance(content, dict) else {}
    chosen: tuple[str, str] | None = None
    for media_type in content:
        mime = media_type.split(";")[0].strip().lower()
        if mime == "application/json" or mime.endswith("+json") or mime == "*/*":
            chosen = (media_type, "json")
            break
        if chosen is None and mime == "application/x-www-form-urlencoded":
            chosen = (media_type, "form")
        elif chosen is None and mime.startswith("text/"):
            chosen = (media_type, "text")
    if chosen is None:
        kinds = ", ".join(content) or "no media type"
        if required:
            raise RefError(f"its request body is only sent as {kinds}, which is not supported")
        return None, None
    media_type, kind = chosen
    media = content[media_type]
    media = media if isinstance(media, dict) else {}
    raw_schema = media.get("schema", {}) if kind != "text" else {"type": "string"}
    schema = resolver.schema(raw_schema, request=True)
    if not isinstance(schema, dict):
        schema = {} if schema is True else {"not": {}}
    label = {"json": "JSON", "form": "form fields", "text": "text"}[kind]
    text = str(body.get("description") or "").strip().rstrip(".")
    note = f"Request body ({label}, sent as {media_type.split(';')[0]})."
    schema = {**schema, "description": f"{text}. {note}" if text else note}
    return schema, BodyBinding(media_type, kind, required)

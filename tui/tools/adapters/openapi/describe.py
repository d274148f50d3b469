"""The description the model reads for an OpenAPI tool, with an example made from its schema.

The spec's own summary and details come first (cut at ``MAX_SPEC_DESCRIPTION``), then what
the call does and whether it changes remote state, then the sections every tool description
has; the example arguments are built from the argument schema's examples, defaults and types.
"""

from __future__ import annotations

import json
from typing import Any

MAX_SPEC_DESCRIPTION = 1200


def describe_operation(
    op: dict[str, Any],
    *,
    name: str,
    api_name: str,
    api_title: str,
    method: str,
    path: str,
    has_body: bool,
    reads_only: bool,
    schema: dict[str, Any],
) -> str:
    """The tool description: the spec's summary and details, what the call does, and the
    When to use / When NOT to use / Disambiguation / Examples sections every tool has."""
    summary = " ".join(str(op.get("summary") or "").split())
    details = str(op.get("description") or "").strip()
    if len(details) > MAX_SPEC_DESCRIPTION:
        details = details[: MAX_SPEC_DESCRIPTION - 1].rstrip() + "…"
    first_line = details.split("\n", 1)[0].strip()
    parts = [summary] if summary else []
    if details:
        parts.append(details)
    if not parts:
        parts.append(f"{method} {path}")
    effect = "reads only" if reads_only else "changes remote state and needs write permission"
    deprecated = " Deprecated in the spec." if op.get("deprecated") else ""
    parts.append(
        f"Calls {method} {path} on the {api_name} API ({api_title}); it {effect}.{deprecated}"
    )
    purpose = (summary or first_line[:160] or f"{method} {path}").rstrip(".")
    sibling = f"{name.split('__', 1)[0]}__*"
    argument_note = (
        "path, query and header parameters are top-level arguments"
        + ("; the request body goes under `body`" if has_body else "")
        + "; credentials are added for you, never pass them."
    )
    example = json.dumps(_example_arguments(schema), ensure_ascii=False)
    if len(example) > 300:
        example = json.dumps(
            {key: value for key, value in _example_arguments(schema).items() if key != "body"}
        )
    parts.append(
        f"When to use: {purpose} through the {api_name} API.\n"
        f"When NOT to use: for other endpoints of this API (see the other {sibling} tools); "
        "for arbitrary URLs (use http_request or fetch_url).\n"
        f"Disambiguation: {argument_note}\n"
        f"Examples: {example}"
    )
    return "\n\n".join(parts)


def _example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    names = [name for name in properties if name in required] or list(properties)[:1]
    return {name: _example_value(properties[name], 0) for name in names}


def _example_value(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 4:
        return "..."
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            if key == "allOf":
                merged: dict[str, Any] = {}
                for part in schema[key]:
                    value = _example_value(part, depth + 1)
                    if isinstance(value, dict):
                        merged.update(value)
                return merged
            return _example_value(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        required = schema.get("required") or list(properties)[:2]
        return {
            name: _example_value(properties[name], depth + 1)
            for name in required
            if name in properties
        }
    if kind == "array":
        return [_example_value(schema.get("items"), depth + 1)]
    return {"integer": 1, "number": 1.5, "boolean": True, "null": None}.get(str(kind), "string")

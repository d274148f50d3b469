"""The built-in tools' parameter schemas, generated ahead of time from their pydantic models.

Generating a model's JSON schema costs 2-4 ms; the first request carries every built-in tool's,
so generating them at start-up cost that request about as much as importing ``httpx``. They are
generated once, by ``python tools/tool_schemas.py`` (``schema_table.py``), into
``params_schemas.json`` beside this module, and read from there. The models stay the one source
of truth: the file holds nothing a model did not produce, and ``tests/test_tool_schemas.py``
fails when any entry differs from what its model generates now, or a tool has none.

An entry is keyed by the model's module and name, so a model that moved or is not built in (a
tool from an extension) simply has none: its schema is generated when first asked for, as
before. What a lookup returns is the caller's own copy.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

TABLE_PATH = Path(__file__).with_name("params_schemas.json")


def key(params: type[BaseModel]) -> str:
    return f"{params.__module__}.{params.__qualname__}"


@functools.cache
def _table() -> dict[str, str]:
    """Each entry as its JSON text: parsing it again is the cheapest deep copy."""
    try:
        entries = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing or damaged: every schema is generated, as before
        return {}
    if not isinstance(entries, dict):
        return {}
    return {name: json.dumps(schema) for name, schema in entries.items()}


def lookup(params: type[BaseModel]) -> dict[str, Any] | None:
    """The schema generated ahead for ``params``, or None when the table has none."""
    text = _table().get(key(params))
    if text is None:
        return None
    schema: dict[str, Any] = json.loads(text)
    return schema

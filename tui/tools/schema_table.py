"""The built-in tools' parameter schemas, generated ahead of time from their pydantic models.

Generating a model's JSON schema costs 2-4 ms; the first request carries every built-in tool's,
so generating them at start-up cost that request about as much as all of ``httpx``'s import.
They are generated once, by ``python tools/tool_schemas.py``, into ``params_schemas.json`` beside
this module, and read from there. The models stay the one source of truth: the file holds
nothing a model did not produce, and ``tests/test_tool_schemas.py`` fails when any entry differs
from what its model generates now (or a model has none), naming the command that writes it anew.

An entry is keyed by the model's module and name, so a model that moved or is not built in
(a tool from an extension) simply has none: its schema is generated when first asked for, as
before. What a lookup returns is the caller's own copy.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.tools.base import Tool, ToolParams

TABLE_PATH = Path(__file__).with_name("params_schemas.json")
BUILTIN_PACKAGES = ("tui.tools", "tui.agent")
"""Where the built-in tools are defined: every ``Tool`` class under them gets an entry."""
REGENERATE = "python tools/tool_schemas.py"


def key(params: type[ToolParams]) -> str:
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


def lookup(params: type[ToolParams]) -> dict[str, Any] | None:
    """The schema generated ahead for ``params``, or None when the table has none."""
    text = _table().get(key(params))
    if text is None:
        return None
    schema: dict[str, Any] = json.loads(text)
    return schema


def tool_classes(packages: Iterable[str] = BUILTIN_PACKAGES) -> Iterator[type[Tool[Any]]]:
    """Every concrete ``Tool`` class defined in a module under ``packages`` (all imported)."""
    import importlib
    import inspect
    import pkgutil

    from tui.tools.base import Tool

    seen: set[type[Tool[Any]]] = set()
    for package in packages:
        root = importlib.import_module(package)
        names = [package]
        names += [m.name for m in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")]
        for name in names:
            module = importlib.import_module(name)
            for value in vars(module).values():
                if (
                    inspect.isclass(value)
                    and issubclass(value, Tool)
                    and value.__module__ == name
                    and value not in seen
                ):
                    seen.add(value)
                    yield value


def generate(packages: Iterable[str] = BUILTIN_PACKAGES) -> dict[str, dict[str, Any]]:
    """The table as the code produces it now: one entry per ``Params`` model of a tool whose
    schema is its model's (tools with a schema from elsewhere, ``SchemaTool``, have none)."""
    from tui.tools.base import generated_schema
    from tui.tools.schema_tool import SchemaTool

    table: dict[str, dict[str, Any]] = {}
    for tool in tool_classes(packages):
        params = getattr(tool, "Params", None)
        if params is None or issubclass(tool, SchemaTool):
            continue
        table[key(params)] = generated_schema(params)
    return dict(sorted(table.items()))


def render(table: dict[str, dict[str, Any]]) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False, sort_keys=True) + "\n"

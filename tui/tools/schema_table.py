"""Generating ``params_schemas.json``, the schemas ``ready_schemas.py`` serves, from the code.

Used by ``python tools/tool_schemas.py`` (which writes the file) and by the test that holds the
file to the models.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Iterable, Iterator
from typing import Any

from tui.tools.base import Tool, generated_schema
from tui.tools.ready_schemas import key
from tui.tools.schema_tool import SchemaTool

BUILTIN_PACKAGES = ("tui.tools", "tui.agent")
"""Where the built-in tools are defined: every ``Tool`` class under them gets an entry."""
REGENERATE = "python tools/tool_schemas.py"


def tool_classes(packages: Iterable[str] = BUILTIN_PACKAGES) -> Iterator[type[Tool[Any]]]:
    """Every ``Tool`` class defined in a module under ``packages`` (all imported)."""
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
    table: dict[str, dict[str, Any]] = {}
    for tool in tool_classes(packages):
        params = getattr(tool, "Params", None)
        if params is None or issubclass(tool, SchemaTool):
            continue
        table[key(params)] = generated_schema(params)
    return dict(sorted(table.items()))


def render(table: dict[str, dict[str, Any]]) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False, sort_keys=True) + "\n"

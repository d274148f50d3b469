"""The built-in tools' schemas generated ahead (``tui/tools/params_schemas.json``) are what
their pydantic models generate now: the models stay the one source of truth."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from tui.tools import ready_schemas
from tui.tools.base import ToolParams, generated_schema, params_schema
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.builtin.tmux import tmux_tools
from tui.tools.ready_schemas import TABLE_PATH, lookup
from tui.tools.schema_table import REGENERATE, generate, render


@pytest.fixture
def fresh_table() -> Iterator[None]:
    ready_schemas._table.cache_clear()
    yield
    ready_schemas._table.cache_clear()


def test_the_file_is_what_the_models_generate_now() -> None:
    assert TABLE_PATH.read_text(encoding="utf-8") == render(generate()), (
        f"a tool's parameters changed: run `{REGENERATE}` and commit the file"
    )


def test_every_built_in_tool_is_served_from_the_table(tmp_path: Path) -> None:
    """None of the tools a session offers pays for generating its schema at start-up."""
    tools = [*builtin_tools(None, tmp_path), *tmux_tools()]
    missing = [tool.name for tool in tools if lookup(tool.Params) is None]
    assert not missing, f"no schema generated ahead for {missing}: run `{REGENERATE}`"
    for tool in tools:
        assert tool.parameters_schema()["type"] == "object"


def test_a_lookup_is_the_callers_own_copy() -> None:
    from tui.tools.builtin.shell.tools import RunShellParams

    first = params_schema(RunShellParams)
    first["properties"].clear()
    assert params_schema(RunShellParams) == generated_schema(RunShellParams)
    assert params_schema(RunShellParams)["properties"]


class Unlisted(ToolParams):
    """A model from elsewhere (an extension's tool): not in the table."""

    depth: int = Field(default=1, description="How deep.")


def test_a_model_not_in_the_table_is_generated_when_asked() -> None:
    assert lookup(Unlisted) is None
    schema = params_schema(Unlisted)
    assert schema["properties"]["depth"] == {
        "default": 1,
        "description": "How deep.",
        "type": "integer",
    }


@pytest.mark.parametrize("content", [None, "{not json", "[1, 2]"])
def test_a_missing_or_damaged_file_means_generating_every_schema(
    content: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_table: None
) -> None:
    from tui.tools.builtin.shell.tools import RunShellParams

    table = tmp_path / "params_schemas.json"
    if content is not None:
        table.write_text(content)
    monkeypatch.setattr(ready_schemas, "TABLE_PATH", table)
    assert lookup(RunShellParams) is None
    assert params_schema(RunShellParams) == generated_schema(RunShellParams)


def test_an_entry_is_served_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_table: None
) -> None:
    """What the table holds is what the model is sent: the reason the file is checked."""
    from tui.tools.builtin.shell.tools import RunShellParams

    written: dict[str, Any] = {"type": "object", "properties": {"marker": {"type": "string"}}}
    table = tmp_path / "params_schemas.json"
    table.write_text(json.dumps({ready_schemas.key(RunShellParams): written}))
    monkeypatch.setattr(ready_schemas, "TABLE_PATH", table)
    assert params_schema(RunShellParams) == written

"""notebook_edit on real .ipynb files, through the real registry, policy and LocalBackend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat as _nbformat

from tests.conftest import Harness
from tui.exec.local import LocalBackend
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.security.settings import SecuritySettings
from tui.tools.base import missing_description_sections
from tui.tools.builtin.notebook import NotebookEditTool, notebook_tools
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult

nbformat: Any = _nbformat


def nb_harness(workspace: Path, settings: SecuritySettings | None = None) -> Harness:
    policy = SecurityPolicy(workspace, settings, approval_mode=ApprovalMode.FULL_AUTO)
    backend = LocalBackend(default_cwd=str(workspace))
    return Harness(workspace, policy, ToolRegistry(notebook_tools()), backend)


def sample(path: Path, minor: int = 5) -> Any:
    """Three cells: markdown, code with an output, code; written the way Jupyter writes."""
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = minor
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell(
            "x = 1\nprint(x)",
            execution_count=3,
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")],
            metadata={"tags": ["keep-me"]},
        ),
        nbformat.v4.new_code_cell("y = 2"),
    ]
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    nbformat.validate(nb)
    nbformat.write(nb, str(path))
    return nb


def reread(path: Path) -> Any:
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    return nb


async def edit(h: Harness, **arguments: Any) -> ToolResult:
    return await h.call("notebook_edit", arguments)


async def test_insert_replace_delete(workspace: Path) -> None:
    h = nb_harness(workspace)
    path = workspace / "a.ipynb"
    sample(path)
    inserted = await edit(
        h, path="a.ipynb", action="insert", cell_index=1, cell_type="markdown", source="## Part"
    )
    assert not inserted.is_error, inserted.text
    assert inserted.text == "Inserted a markdown cell at index 1 (a.ipynb now has 4 cells)."
    nb = reread(path)
    assert [c.cell_type for c in nb.cells] == ["markdown", "markdown", "code", "code"]
    assert nb.cells[1].source == "## Part" and nb.cells[1].id
    assert len({c.id for c in nb.cells}) == 4
    appended = await edit(h, path="a.ipynb", action="insert", cell_index=4, source="z = 3")
    assert "code cell at index 4" in appended.text and "5 cells" in appended.text
    assert reread(path).cells[4].source == "z = 3"
    deleted = await edit(h, path="a.ipynb", action="delete", cell_index=0)
    assert not deleted.is_error, deleted.text
    assert deleted.text.startswith("Deleted cell 0 (markdown: '# Title')")
    assert deleted.details["before"]["source"] == "# Title" and deleted.details["after"] is None
    nb = reread(path)
    assert [c.source for c in nb.cells] == ["## Part", "x = 1\nprint(x)", "y = 2", "z = 3"]
    assert path.read_text().endswith("\n")


async def test_replace_clears_outputs_and_keeps_id_and_metadata(workspace: Path) -> None:
    h = nb_harness(workspace)
    path = workspace / "a.ipynb"
    original = sample(path)
    result = await edit(h, path="a.ipynb", action="replace", cell_index=1, source="x = 10\nx")
    assert not result.is_error, result.text
    assert "Replaced cell 1 (code, its 1 output cleared)" in result.text
    cell = reread(path).cells[1]
    assert cell.source == "x = 10\nx"
    assert cell.outputs == [] and cell.execution_count is None
    assert cell.id == original.cells[1].id
    assert cell.metadata["tags"] == ["keep-me"]
    details = result.details
    assert details["before"]["outputs"] == 1 and details["before"]["execution_count"] == 3
    assert details["after"]["outputs"] == 0 and details["after"]["source"] == "x = 10\nx"
    assert "-x = 1" in details["diff"] and "+x = 10" in details["diff"]
    retyped = await edit(
        h, path="a.ipynb", action="replace", cell_index=2, cell_type="markdown", source="*y*"
    )
    assert "code → markdown" in retyped.text
    cell = reread(path).cells[2]
    assert cell.cell_type == "markdown" and "outputs" not in cell


async def test_missing_notebook_is_created_by_insert_only(workspace: Path) -> None:
    h = nb_harness(workspace)
    missing = await edit(h, path="new/b.ipynb", action="replace", cell_index=0, source="x")
    assert missing.is_error and "NotFound" in missing.text and "creates a notebook" in missing.text
    wrong_index = await edit(h, path="new/b.ipynb", action="insert", cell_index=2, source="x")
    assert wrong_index.is_error and "InvalidArguments" in wrong_index.text
    created = await edit(
        h, path="new/b.ipynb", action="insert", cell_index=0, cell_type="raw", source="raw text"
    )
    assert not created.is_error, created.text
    assert created.text.startswith("Created new/b.ipynb as a new notebook")
    assert created.details["created"] is True
    nb = reread(workspace / "new" / "b.ipynb")
    assert nb.nbformat == 4 and nb.nbformat_minor >= 5
    assert [(c.cell_type, c.source) for c in nb.cells] == [("raw", "raw text")]


async def test_invalid_notebooks_are_left_untouched(workspace: Path) -> None:
    h = nb_harness(workspace)
    broken = workspace / "broken.ipynb"
    broken.write_bytes(b'{"cells": [ {"cell_type": "code", ')
    before = broken.read_bytes()
    result = await edit(h, path="broken.ipynb", action="insert", cell_index=0, source="x")
    assert result.is_error and "not a valid notebook" in result.text
    assert "not valid JSON" in result.text and "left untouched" in result.text
    assert broken.read_bytes() == before
    schema_bad = workspace / "schema.ipynb"
    schema_bad.write_text(
        '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, '
        '"cells": [{"cell_type": "code", "id": "a1", "source": "x", "metadata": {}}]}'
    )
    before = schema_bad.read_bytes()
    result = await edit(h, path="schema.ipynb", action="delete", cell_index=0)
    assert result.is_error and "not a valid notebook" in result.text
    assert schema_bad.read_bytes() == before
    not_nb = workspace / "list.ipynb"
    not_nb.write_text("[1, 2]")
    result = await edit(h, path="list.ipynb", action="delete", cell_index=0)
    assert result.is_error and "not a Jupyter notebook" in result.text


async def test_out_of_range_indexes_name_the_valid_range(workspace: Path) -> None:
    h = nb_harness(workspace)
    path = workspace / "a.ipynb"
    sample(path)
    before = path.read_bytes()
    replace = await edit(h, path="a.ipynb", action="replace", cell_index=3, source="x")
    assert replace.is_error and "InvalidArguments" in replace.text
    assert "has 3 cells, numbered 0 to 2" in replace.text
    insert = await edit(h, path="a.ipynb", action="insert", cell_index=4, source="x")
    assert insert.is_error and "use 0 to 3 (3 appends)" in insert.text
    negative = await edit(h, path="a.ipynb", action="delete", cell_index=-1)
    assert negative.is_error and "InvalidArguments" in negative.text
    no_source = await edit(h, path="a.ipynb", action="replace", cell_index=0)
    assert no_source.is_error and "source is required" in no_source.text
    assert path.read_bytes() == before


async def test_path_outside_workspace_is_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.ipynb"
    sample(outside)
    before = outside.read_bytes()
    strict = nb_harness(workspace, SecuritySettings(workspace_only=True))
    for raw in (str(outside), "../outside.ipynb"):
        result = await edit(strict, path=raw, action="delete", cell_index=0)
        assert result.is_error and "PermissionDenied" in result.text, result.text
    assert outside.read_bytes() == before
    other = await edit(strict, path="notes.txt", action="insert", cell_index=0, source="x")
    assert other.is_error and ".ipynb" in other.text


async def test_old_format_notebooks_get_no_ids(workspace: Path) -> None:
    h = nb_harness(workspace)
    path = workspace / "old.ipynb"
    sample(path, minor=4)
    result = await edit(h, path="old.ipynb", action="insert", cell_index=0, source="import os")
    assert not result.is_error, result.text
    nb = reread(path)
    assert nb.nbformat_minor == 4
    assert all("id" not in cell for cell in nb.cells)
    replaced = await edit(h, path="old.ipynb", action="replace", cell_index=2, source="x = 2")
    assert not replaced.is_error and "id" not in reread(path).cells[2]


async def test_missing_ids_in_a_new_format_notebook_are_repaired(workspace: Path) -> None:
    h = nb_harness(workspace)
    path = workspace / "noids.ipynb"
    path.write_text(
        '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": ['
        '{"cell_type": "markdown", "source": "a", "metadata": {}},'
        '{"cell_type": "markdown", "source": "b", "metadata": {}}]}'
    )
    result = await edit(h, path="noids.ipynb", action="delete", cell_index=0)
    assert not result.is_error, result.text
    assert "gave 2 cells the id" in result.text
    nb = reread(path)
    assert [c.source for c in nb.cells] == ["b"] and nb.cells[0].id


async def test_aliases_and_description(workspace: Path) -> None:
    h = nb_harness(workspace)
    sample(workspace / "a.ipynb")
    result = await h.call(
        "notebook_edit",
        {"notebook_path": "a.ipynb", "action": "replace", "index": 0, "new_source": "# New"},
    )
    assert not result.is_error, result.text
    assert reread(workspace / "a.ipynb").cells[0].source == "# New"
    assert missing_description_sections(NotebookEditTool.description) == []

"""``notebook_edit``: insert, replace or delete one cell of a Jupyter notebook.

Why it is built this way:

* A notebook is JSON with a schema; editing it as text (edit_file) easily breaks it. Here it
  is parsed and written with ``nbformat`` (v4) and validated before anything is written, so
  the file on disk is either the old valid notebook or a new valid one, never half of each.
* Bytes move through ``ctx.backend`` like every file tool, so a notebook in a container or on
  an SSH host is edited the same way; the path is the policy-checked one.
* A replaced code cell loses its outputs and execution count: they belonged to the old code
  and would mislead whoever reads the notebook next.
* Cell ids exist from nbformat 4.5 on and are *forbidden* before it, so new cells get an id
  exactly when the notebook's version wants one.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from tui.diffs import unified_diff
from tui.errors import ExecutionFailed, InvalidArguments
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.files.access import (
    display_path,
    encode_text,
    not_found,
    plural,
    read_existing,
    write_bytes,
)
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult


class _OnFirstUse:
    """A module imported on first use: nbformat costs ~40 ms at every start, and most runs
    never open a notebook. Untyped upstream, so one ``Any`` here instead of an ignore a call."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)


nbformat: Any = _OnFirstUse("nbformat")


def generate_corpus_id() -> str:
    return str(importlib.import_module("nbformat.corpus.words").generate_corpus_id())


CellType = Literal["code", "markdown", "raw"]
Action = Literal["insert", "replace", "delete"]

MAX_ERROR_CHARS = 400
"""Of a schema validation message, which can quote a whole cell."""
PREVIEW_CHARS = 80


class NotebookInvalid(Exception):
    """The bytes are not a notebook nbformat can read, or it fails its schema."""


@dataclass
class Loaded:
    notebook: Any
    """An ``nbformat.NotebookNode`` (untyped upstream)."""
    created: bool = False
    converted_from: int | None = None
    ids_added: int = 0


def _first_line(message: str) -> str:
    text = message.strip().split("\n\n", 1)[0].replace("\n", " ")
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _needs_ids(notebook: Any) -> bool:
    return (int(notebook.get("nbformat", 4)), int(notebook.get("nbformat_minor", 0))) >= (4, 5)


def _fresh_id(notebook: Any) -> str:
    taken = {cell.get("id") for cell in notebook.cells}
    while True:
        candidate = generate_corpus_id()
        if candidate not in taken:
            return str(candidate)


def validate(notebook: Any) -> None:
    """Raise NotebookInvalid with the schema's first complaint (nbformat warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nbformat.validate(notebook)
        except nbformat.ValidationError as error:
            where = "/".join(str(part) for part in getattr(error, "absolute_path", []))
            place = f" at {where}" if where else ""
            raise NotebookInvalid(f"{_first_line(error.message)}{place}") from None


def parse_notebook(data: bytes) -> Loaded:
    """A v4 notebook from file bytes; ids added to cells a 4.5+ notebook left without one."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookInvalid(f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookInvalid(
            f"not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("nbformat"), int):
        raise NotebookInvalid("not a Jupyter notebook (no top-level nbformat version number)")
    original = raw["nbformat"]
    if original not in (3, 4):
        raise NotebookInvalid(f"nbformat {original} is not supported (only 3 and 4)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            notebook = nbformat.reads(text, as_version=4)
        except Exception as error:  # nbformat raises many kinds for malformed input
            raise NotebookInvalid(_first_line(f"{type(error).__name__}: {error}")) from None
    if not isinstance(notebook.get("cells"), list):
        raise NotebookInvalid("the notebook has no list of cells")
    ids_added = 0
    if _needs_ids(notebook):
        # nbformat may already have filled them in while reading; count from the raw JSON.
        raw_cells = raw.get("cells")
        if isinstance(raw_cells, list) and original == 4:
            ids_added = sum(1 for c in raw_cells if isinstance(c, dict) and not c.get("id"))
        for cell in notebook.cells:
            if isinstance(cell, dict) and not cell.get("id"):
                cell["id"] = _fresh_id(notebook)
    validate(notebook)
    return Loaded(notebook, converted_from=original if original != 4 else None, ids_added=ids_added)


def new_notebook() -> Loaded:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["language_info"] = {"name": "python"}
    return Loaded(notebook, created=True)


def make_cell(notebook: Any, cell_type: CellType, source: str, old: Any | None = None) -> Any:
    """A new cell; a replacement keeps the old cell's id and metadata, never its outputs."""
    metadata = dict(old.get("metadata", {})) if old is not None else {}
    if cell_type == "code":
        cell = nbformat.v4.new_code_cell(source=source, metadata=metadata)
    elif cell_type == "markdown":
        cell = nbformat.v4.new_markdown_cell(source=source, metadata=metadata)
    else:
        cell = nbformat.v4.new_raw_cell(source=source, metadata=metadata)
    if not _needs_ids(notebook):
        cell.pop("id", None)
    elif old is not None and old.get("id"):
        cell["id"] = old["id"]
    else:
        cell["id"] = _fresh_id(notebook)
    return cell


def cell_view(cell: Any, index: int) -> dict[str, Any]:
    """What the UI shows of one cell."""
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(source)
    view: dict[str, Any] = {"index": index, "cell_type": cell.get("cell_type"), "source": source}
    if cell.get("id"):
        view["id"] = cell["id"]
    if cell.get("cell_type") == "code":
        view["outputs"] = len(cell.get("outputs", []))
        view["execution_count"] = cell.get("execution_count")
    return view


def preview(source: str) -> str:
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    if not line:
        return "empty"
    return repr(line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…")


def dump_notebook(notebook: Any) -> bytes:
    text: str = nbformat.writes(notebook, version=4)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


class NotebookEditParams(ToolParams):
    path: str = Field(
        description=(
            "The .ipynb file; relative paths start at the workspace (on a tmux "
            "backend: where its shell stands)."
        )
    )
    action: Action = Field(
        description="insert: add a new cell at cell_index; replace: change the cell at "
        "cell_index; delete: remove the cell at cell_index."
    )
    cell_index: int = Field(
        ge=0,
        description="0-based cell position. For insert, the new cell's position: 0 puts it "
        "first, the cell count appends it.",
    )
    cell_type: CellType | None = Field(
        default=None,
        description="code, markdown or raw. Insert: default code. Replace: default the "
        "cell's current type.",
    )
    source: str | None = Field(
        default=None, description="The cell's complete new text (insert and replace)."
    )


class NotebookEditTool(Tool[NotebookEditParams]):
    name = "notebook_edit"
    label = "Notebook"
    Params = NotebookEditParams
    permission = PermissionMode.WORKSPACE_WRITE
    aliases: ClassVar[dict[str, str]] = {
        "notebook_path": "path",
        "file_path": "path",
        "edit_mode": "action",
        "new_source": "source",
        "index": "cell_index",
    }
    description = """Insert, replace or delete one cell of a Jupyter notebook (.ipynb).

When to use: changing a notebook's code or markdown cells; adding a cell; removing one.
A missing notebook is created by an insert at cell_index 0.
When NOT to use: any other file (use edit_file or write_file); running a notebook's code (use
python_repl or run_shell with jupyter nbconvert --execute).
Disambiguation: cells are counted from 0; read the notebook first (read_file) to find the
index. source is the cell's whole new text, not a patch. A replaced code cell loses its
outputs and execution count. The notebook is validated before it is written; if it is not a
valid notebook it is left untouched and the error says why.
Examples: {"path": "analysis.ipynb", "action": "insert", "cell_index": 0, "cell_type":
"markdown", "source": "# Sales analysis"}; {"path": "analysis.ipynb", "action": "replace",
"cell_index": 3, "source": "df.groupby('region').sum()"}; {"path": "analysis.ipynb",
"action": "delete", "cell_index": 5}"""

    def access(self, params: NotebookEditParams) -> ToolAccess:
        return ToolAccess(
            permission=PermissionMode.WORKSPACE_WRITE,
            write_paths=[params.path],
            subject=params.path,
        )

    async def execute(self, params: NotebookEditParams, ctx: ToolContext) -> ToolResult:
        if params.action != "delete" and params.source is None:
            raise InvalidArguments(f"source is required to {params.action} a cell")
        if params.action == "delete" and (params.source or params.cell_type):
            raise InvalidArguments("delete takes only path and cell_index (no source or cell_type)")
        if params.source is not None:
            encode_text(params.source, "source")  # a lone surrogate cannot be written
        path = ctx.resolve_path(params.path, write=True)
        if path.suffix.lower() != ".ipynb":
            raise InvalidArguments(
                f"{params.path} is not a .ipynb notebook; edit other files with edit_file"
            )
        name = display_path(path, ctx.workspace)
        loaded = await self._load(ctx, path, params)
        notebook = loaded.notebook
        summary, before, after = self._apply(notebook, params, name, loaded.created)
        try:
            validate(notebook)
        except NotebookInvalid as error:
            raise ExecutionFailed(
                f"the edit would make {name} an invalid notebook ({error}); nothing was written"
            ) from None
        data = await asyncio.to_thread(dump_notebook, notebook)
        await write_bytes(ctx, path, params.path, data)
        count = len(notebook.cells)
        notes = []
        if loaded.converted_from is not None:
            notes.append(f"converted from nbformat {loaded.converted_from} to 4")
        if loaded.ids_added:
            notes.append(f"gave {plural(loaded.ids_added, 'cell')} the id nbformat 4.5 requires")
        text = f"{summary} ({name} now has {plural(count, 'cell')})."
        if notes:
            text += " Also " + "; ".join(notes) + "."
        old_source = before["source"] if before else ""
        new_source = after["source"] if after else ""
        diff, added, removed = unified_diff(
            old_source + "\n" if old_source else "",
            new_source + "\n" if new_source else "",
            f"{name}#cell{params.cell_index}",
        )
        details: dict[str, Any] = {
            "path": str(path),
            "action": params.action,
            "cell_index": params.cell_index,
            "cell_count": count,
            "created": loaded.created,
            "before": before,
            "after": after,
            "diff": diff,
            "added_lines": added,
            "removed_lines": removed,
        }
        return ToolResult(text, details)

    async def _load(self, ctx: ToolContext, path: Path, params: NotebookEditParams) -> Loaded:
        data = await read_existing(
            ctx, path, params.path, wanted="the path of a .ipynb file", must_read=True
        )
        if data is None:
            if params.action != "insert":
                raise await not_found(
                    ctx, path, params.path, extra=" An insert at cell_index 0 creates a notebook."
                )
            if params.cell_index != 0:
                raise InvalidArguments(
                    f"{params.path} does not exist yet: a new notebook starts with an insert at "
                    "cell_index 0"
                )
            return new_notebook()
        try:
            return await asyncio.to_thread(parse_notebook, data)
        except NotebookInvalid as error:
            raise ExecutionFailed(
                f"{params.path} is not a valid notebook: {error}. It was left untouched; repair "
                "it with edit_file (or recreate it) before editing cells"
            ) from None

    def _apply(
        self, notebook: Any, params: NotebookEditParams, name: str, created: bool
    ) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
        """Change the cell list in place: a summary, and the cell before and after."""
        cells = notebook.cells
        count = len(cells)
        index = params.cell_index
        if params.action == "insert":
            if index > count:
                raise InvalidArguments(
                    f"cell_index {index} is out of range for insert: {name} has "
                    f"{plural(count, 'cell')}, so use 0 to {count} ({count} appends)"
                )
            cell = make_cell(notebook, params.cell_type or "code", params.source or "")
            cells.insert(index, cell)
            after = cell_view(cell, index)
            lead = f"Created {name} as a new notebook and inserted" if created else "Inserted"
            return f"{lead} a {cell.cell_type} cell at index {index}", None, after
        if count == 0:
            raise InvalidArguments(
                f"{name} has no cells, so there is nothing to {params.action}; "
                "insert at cell_index 0 instead"
            )
        if index >= count:
            raise InvalidArguments(
                f"cell_index {index} is out of range: {name} has {plural(count, 'cell')}, "
                f"numbered 0 to {count - 1}"
            )
        old = cells[index]
        before = cell_view(old, index)
        if params.action == "delete":
            del cells[index]
            return (
                f"Deleted cell {index} ({old.get('cell_type')}: {preview(before['source'])})",
                before,
                None,
            )
        cell_type: CellType = params.cell_type or old.get("cell_type", "code")
        cell = make_cell(notebook, cell_type, params.source or "", old)
        cells[index] = cell
        after = cell_view(cell, index)
        change = (
            f"{old.get('cell_type')} → {cell_type}"
            if old.get("cell_type") != cell_type
            else cell_type
        )
        cleared = ""
        if old.get("cell_type") == "code" and (old.get("outputs") or old.get("execution_count")):
            cleared = f", its {plural(len(old.get('outputs', [])), 'output')} cleared"
        return f"Replaced cell {index} ({change}{cleared})", before, after


def notebook_tools() -> list[Tool[Any]]:
    return [NotebookEditTool()]

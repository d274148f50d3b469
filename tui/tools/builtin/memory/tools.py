"""``memory_store``, ``memory_recall``, ``memory_forget``: notes that outlive a session.

The notes live in a SQLite database in agent-tui's data folder (``store``), read and written
in a worker thread, so the event loop never waits on the disk.

Two memories: the global one, which every workspace reads, and one per workspace. A workspace
the person has not trusted writes to its own (``MemoryScope``): a cloned repository must not be
able to plant instructions for every later session elsewhere. Writing to — or forgetting in —
the global memory from there is a call that asks the person (it needs danger-full-access, as a
write outside the workspace does). Recall reads both, the workspace's notes first.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from tui.errors import ExecutionFailed, InvalidArguments, NotFound
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.memory.store import (
    Category,
    forget_memory,
    fts_query,
    memory_db_path,
    recall_memories,
    store_memory,
)
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult

Scope = Literal["workspace", "global"]

RECALL_CONTENT_LIMIT = 500


@dataclass(frozen=True)
class MemoryScope:
    """Which memory a session writes by default.

    Args:
        workspace: The workspace's real path (its notes' own database is named from it).
        trusted: The person trusts this workspace: notes go to the global memory unasked.
    """

    workspace: str
    trusted: bool = False


SCOPE_DESCRIPTION = (
    "Where the note is kept: global (read in every workspace) or workspace (read only here). "
    "Default: global when the user trusts this workspace, else workspace; global from an "
    "untrusted workspace asks the user first."
)


class _MemoryTool:
    """Shared plumbing: the databases, which one a call uses, and what that call touches."""

    writes: ClassVar[bool] = False
    """Whether a call changes a memory (store, forget) rather than reading it."""

    def __init__(self, path: Path | None = None, scope: MemoryScope | None = None) -> None:
        self._path = path
        self.scope = scope

    @property
    def path(self) -> Path:
        """The global memory."""
        return self._path if self._path is not None else memory_db_path()

    def workspace_path(self) -> Path | None:
        """This workspace's own memory (None without a scope: the global one only)."""
        if self.scope is None:
            return None
        digest = hashlib.sha256(self.scope.workspace.encode("utf-8", "surrogateescape"))
        return self.path.parent / "memory-workspaces" / f"{digest.hexdigest()[:16]}.sqlite3"

    def target(self, scope: Scope | None) -> Scope:
        """Which memory a call means: the one asked for, else the session's default."""
        if scope is not None:
            return scope if self.scope is not None else "global"
        return "global" if self.scope is None or self.scope.trusted else "workspace"

    def path_of(self, scope: Scope) -> Path:
        workspace = self.workspace_path()
        return workspace if scope == "workspace" and workspace is not None else self.path

    def access(self, params: Any) -> ToolAccess:
        scope: Scope | None = getattr(params, "scope", None)
        if self.writes and self.target(scope) == "global" and self.scope and not self.scope.trusted:
            # The global memory is read by every later session, wherever it runs: from a
            # workspace nobody trusted, changing it is the person's call.
            return ToolAccess(
                permission=PermissionMode.DANGER_FULL_ACCESS,
                subject="global memory",
                acting=True,
            )
        # Only agent-tui's own database is written: nothing in the workspace or the system.
        return ToolAccess(permission=PermissionMode.READ_ONLY, acting=False)

    async def _run(self, func: Any, *args: Any, path: Path | None = None) -> Any:
        try:
            return await asyncio.to_thread(func, path or self.path, *args)
        except sqlite3.Error as exc:
            raise ExecutionFailed(f"memory database error: {exc}") from None
        except OSError as exc:
            raise ExecutionFailed(f"cannot open the memory database: {exc}") from None


class MemoryStoreParams(ToolParams):
    key: str = Field(
        min_length=1,
        max_length=200,
        description="A short unique name for the note; storing an existing key replaces it.",
    )
    content: str = Field(min_length=1, description="The text to remember.")
    category: Category = Field(
        default="core",
        description="core: lasting facts and preferences; daily: today's notes; "
        "conversation: context from this conversation.",
    )
    scope: Scope | None = Field(default=None, description=SCOPE_DESCRIPTION)


class MemoryStoreTool(_MemoryTool, Tool[MemoryStoreParams]):
    writes = True
    name = "memory_store"
    label = "Remember"
    Params = MemoryStoreParams
    permission = PermissionMode.READ_ONLY
    description = """Save a note to long-term memory, kept across sessions and restarts.

When to use: a fact worth knowing next time (the user's preferences, project conventions, a
decision and its reason, where something lives); to update a note, store it again by key.
When NOT to use: for files of the project (use write_file); for scratch work needed only in
this turn; never for secrets such as passwords or tokens.
Disambiguation: writes agent-tui's own memory database, not the workspace files: the global
memory when the user trusts this workspace, else this workspace's own ("scope" chooses; global
from an untrusted workspace asks the user). Read it back with memory_recall, delete with
memory_forget.
Examples: {"key": "test-command", "content": "Run tests with `make test`, not pytest"};
{"key": "standup-2026-01-05", "content": "Fixed the login bug", "category": "daily"}"""

    async def execute(self, params: MemoryStoreParams, ctx: ToolContext) -> ToolResult:
        where = self.target(params.scope)
        replaced = await self._run(
            store_memory, params.key, params.content, params.category, path=self.path_of(where)
        )
        verb = "Updated" if replaced else "Stored"
        place = "this workspace's memory" if where == "workspace" else "the global memory"
        return ToolResult(
            f"{verb} memory {params.key!r} ({params.category}) in {place}.",
            {"key": params.key, "category": params.category, "replaced": replaced, "scope": where},
        )


class MemoryRecallParams(ToolParams):
    query: str = Field(min_length=1, description="Words to search the notes' keys and text for.")
    limit: int = Field(default=5, ge=1, le=50, description="Most notes to return (1-50).")
    category: Category | None = Field(
        default=None, description="Only notes of this category; default: all."
    )


class MemoryRecallTool(_MemoryTool, Tool[MemoryRecallParams]):
    name = "memory_recall"
    label = "Recall"
    Params = MemoryRecallParams
    permission = PermissionMode.READ_ONLY
    description = """Search long-term memory; the best matches come first.

When to use: at the start of a task, to find what earlier sessions learned (preferences,
conventions, past decisions); before asking the user something they may have said before.
When NOT to use: to search project files (use grep or find_files); to list the workspace.
Disambiguation: full-text search over notes saved with memory_store; any word may match and
the most relevant notes rank first. Each note's text is cut at 500 characters.
Examples: {"query": "test command"}; {"query": "login bug", "category": "daily", "limit": 10}"""

    async def execute(self, params: MemoryRecallParams, ctx: ToolContext) -> ToolResult:
        if fts_query(params.query) is None:
            raise InvalidArguments("query: give at least one word with a letter or digit")
        found: list[tuple[str, tuple[str, str, str, str]]] = []
        workspace = self.workspace_path()
        if workspace is not None and workspace.exists():
            rows = await self._run(
                recall_memories, params.query, params.limit, params.category, path=workspace
            )
            found += [("workspace", row) for row in rows]
        rows = await self._run(recall_memories, params.query, params.limit, params.category)
        found += [("global", row) for row in rows]
        found = found[: params.limit]
        if not found:
            return ToolResult(f"No memories match {params.query!r}.", {"count": 0})
        blocks = []
        for where, (key, category, updated, content) in found:
            text = content
            if len(text) > RECALL_CONTENT_LIMIT:
                text = text[:RECALL_CONTENT_LIMIT] + f"… [{len(content)} chars in all]"
            mark = ", this workspace's" if where == "workspace" else ""
            blocks.append(f"## {key} ({category}{mark}, updated {updated})\n{text}")
        keys = [row[0] for _, row in found]
        return ToolResult("\n\n".join(blocks), {"count": len(found), "keys": keys})


class MemoryForgetParams(ToolParams):
    key: str = Field(min_length=1, description="The key of the note to delete.")
    scope: Scope | None = Field(default=None, description=SCOPE_DESCRIPTION)


class MemoryForgetTool(_MemoryTool, Tool[MemoryForgetParams]):
    writes = True
    name = "memory_forget"
    label = "Forget"
    Params = MemoryForgetParams
    permission = PermissionMode.READ_ONLY
    description = """Delete one note from long-term memory by its key.

When to use: a note is wrong, outdated, or the user asks you to forget it.
When NOT to use: to change a note (store it again under the same key with memory_store);
to delete files (use run_shell).
Disambiguation: removes exactly one key from agent-tui's memory database; find keys with
memory_recall.
Examples: {"key": "test-command"}"""

    async def execute(self, params: MemoryForgetParams, ctx: ToolContext) -> ToolResult:
        where = self.target(params.scope)
        if not await self._run(forget_memory, params.key, path=self.path_of(where)):
            other = "global" if where == "workspace" else "workspace"
            hint = f' (it may be in the {other} memory: "scope": "{other}")' if self.scope else ""
            raise NotFound(f"no memory with key {params.key!r}{hint}; find keys with memory_recall")
        return ToolResult(f"Forgot memory {params.key!r}.", {"key": params.key, "scope": where})


def memory_tools(path: Path | None = None, scope: MemoryScope | None = None) -> list[Tool[Any]]:
    """The three memory tools, on ``path`` (default: ``data_dir()/memory.sqlite3``) and, with
    a ``scope``, the workspace's own memory beside it."""
    return [
        MemoryStoreTool(path, scope),
        MemoryRecallTool(path, scope),
        MemoryForgetTool(path, scope),
    ]

"""The notes' SQLite store: one table with an FTS5 index, and the three things done to it.

The index is kept in sync by triggers, so a write and its index update are one transaction.
Each call opens its own connection (``sqlite_db``: WAL and a busy timeout, so several
agent-tui processes write at once); callers run these functions in a worker thread, so the
event loop never waits on the disk.
"""

from __future__ import annotations

import datetime
import sqlite3
from pathlib import Path
from typing import Any, Literal

from tui.locations import data_dir
from tui.tools.builtin.memory.sqlite_db import connect, split_statements

Category = Literal["core", "daily", "conversation"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    key TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    category TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    key, content, content='memories', content_rowid='rowid'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, key, content) VALUES (new.rowid, new.key, new.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content)
        VALUES ('delete', old.rowid, old.key, old.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content)
        VALUES ('delete', old.rowid, old.key, old.content);
    INSERT INTO memories_fts(rowid, key, content) VALUES (new.rowid, new.key, new.content);
END;
"""


def memory_db_path() -> Path:
    return data_dir() / "memory.sqlite3"


_STATEMENTS = split_statements(_SCHEMA)


def _connect(path: Path) -> sqlite3.Connection:
    return connect(path, _STATEMENTS, marker="memories")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def store_memory(path: Path, key: str, content: str, category: str = "core") -> bool:
    """Insert or replace the note ``key``; True when it replaced an existing one."""
    conn = _connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            existed = (
                conn.execute("SELECT 1 FROM memories WHERE key = ?", (key,)).fetchone() is not None
            )
            now = _now()
            conn.execute(
                "INSERT INTO memories (key, content, category, created, updated)"
                " VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET content = excluded.content,"
                " category = excluded.category, updated = excluded.updated",
                (key, content, category, now, now),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return existed
    finally:
        conn.close()


def fts_query(text: str) -> str | None:
    """``text`` as an FTS5 query: every term quoted (so ``*``, ``"``, ``(`` are literal), OR-ed.

    None when no term has a letter or digit to search for.
    """
    terms = [term for term in text.split() if any(ch.isalnum() for ch in term)]
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def recall_memories(
    path: Path, query: str, limit: int = 5, category: str | None = None
) -> list[tuple[str, str, str, str]]:
    """(key, category, updated, content) of the best matches, most relevant first."""
    match = fts_query(query)
    if match is None:
        return []
    sql = (
        "SELECT m.key, m.category, m.updated, m.content FROM memories_fts"
        " JOIN memories AS m ON m.rowid = memories_fts.rowid"
        " WHERE memories_fts MATCH ?"
    )
    args: list[Any] = [match]
    if category is not None:
        sql += " AND m.category = ?"
        args.append(category)
    sql += " ORDER BY bm25(memories_fts, 2.0, 1.0), m.updated DESC LIMIT ?"
    args.append(limit)
    conn = _connect(path)
    try:
        return [tuple(row) for row in conn.execute(sql, args).fetchall()]
    finally:
        conn.close()


def forget_memory(path: Path, key: str) -> bool:
    """Delete the note ``key``; False when there was none."""
    conn = _connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            deleted = conn.execute("DELETE FROM memories WHERE key = ?", (key,)).rowcount
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return deleted > 0
    finally:
        conn.close()

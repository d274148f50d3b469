"""One SQLite file shared by several tools and several agent-tui processes at once.

Each call opens its own short-lived connection (in a worker thread, by the caller), with WAL
so readers never wait for a writer, a long busy timeout so concurrent writers queue instead of
failing, and the caller's schema created on first use inside one ``BEGIN IMMEDIATE`` so two
processes starting together cannot half-create it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

BUSY_TIMEOUT_MS = 30_000


def split_statements(script: str) -> list[str]:
    """``script`` as single statements (``executescript`` would commit our transaction)."""
    statements: list[str] = []
    buffer = ""
    for line in script.strip().splitlines():
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return statements


def connect(path: Path, schema: Sequence[str], *, marker: str) -> sqlite3.Connection:
    """An autocommit connection to ``path`` with ``schema`` in place; rows are ``sqlite3.Row``.

    ``marker`` names a table of ``schema``: when it exists the whole schema does (it is created
    in one transaction), so the common case costs one lookup instead of every statement.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (marker,)
        ).fetchone()
        if found is None:
            _create_schema(conn, schema)
    except BaseException:
        conn.close()
        raise
    return conn


def _create_schema(conn: sqlite3.Connection, schema: Sequence[str]) -> None:
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in schema:
                    conn.execute(statement)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextlib.contextmanager
def transaction(path: Path, schema: Sequence[str], *, marker: str) -> Iterator[sqlite3.Connection]:
    """A connection inside ``BEGIN IMMEDIATE``: committed on success, rolled back otherwise."""
    conn = connect(path, schema, marker=marker)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


@contextlib.contextmanager
def reading(path: Path, schema: Sequence[str], *, marker: str) -> Iterator[sqlite3.Connection]:
    """A connection for reads, closed afterwards."""
    conn = connect(path, schema, marker=marker)
    try:
        yield conn
    finally:
        conn.close()

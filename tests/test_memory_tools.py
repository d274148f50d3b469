"""The memory tools against a real SQLite database, through the real registry and policy."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import Harness, make_harness
from tui.locations import data_dir
from tui.security.permissions import ApprovalMode
from tui.tools.builtin.memory.store import memory_db_path, recall_memories

WRITER = """
import sys
from pathlib import Path
from tui.tools.builtin.memory.store import store_memory
path, prefix = Path(sys.argv[1]), sys.argv[2]
for i in range(50):
    store_memory(path, f"{prefix}-{i}", f"record {i} from {prefix}", "daily")
"""


async def store(h: Harness, key: str, content: str, category: str = "core") -> None:
    result = await h.call("memory_store", {"key": key, "content": content, "category": category})
    assert not result.is_error, result.text


async def test_recall_ranks_the_more_relevant_note_first(harness: Harness) -> None:
    await store(harness, "pets", "The user has a cat. Also likes music and hiking.")
    await store(harness, "cats", "Cat cat cat: the cat is named Miso; the cat eats fish.")
    await store(harness, "weather", "Rain expected all week.")
    result = await harness.call("memory_recall", {"query": "cat"})
    assert not result.is_error, result.text
    assert result.details["keys"] == ["cats", "pets"]
    assert "weather" not in result.text
    assert "(core, updated " in result.text
    assert memory_db_path() == data_dir() / "memory.sqlite3"
    assert memory_db_path().is_file()


async def test_category_filter_and_limit(harness: Harness) -> None:
    await store(harness, "a", "deploy notes", "daily")
    await store(harness, "b", "deploy checklist", "core")
    await store(harness, "c", "deploy talk", "conversation")
    daily = await harness.call("memory_recall", {"query": "deploy", "category": "daily"})
    assert daily.details["keys"] == ["a"]
    one = await harness.call("memory_recall", {"query": "deploy", "limit": 1})
    assert one.details["count"] == 1
    bad = await harness.call("memory_recall", {"query": "deploy", "category": "weekly"})
    assert bad.is_error and "InvalidArguments" in bad.text


async def test_upsert_replaces_and_long_content_is_cut(harness: Harness) -> None:
    await store(harness, "k", "old banana text")
    result = await harness.call("memory_store", {"key": "k", "content": "new apple " * 100})
    assert "Updated" in result.text and result.details["replaced"] is True
    assert (await harness.call("memory_recall", {"query": "banana"})).details["count"] == 0
    recalled = await harness.call("memory_recall", {"query": "apple"})
    assert recalled.details["keys"] == ["k"]
    assert "[1000 chars in all]" in recalled.text
    assert len(recalled.text) < 700


async def test_forget_and_missing_key(harness: Harness) -> None:
    await store(harness, "gone", "ephemeral fact")
    result = await harness.call("memory_forget", {"key": "gone"})
    assert not result.is_error, result.text
    assert (await harness.call("memory_recall", {"query": "ephemeral"})).details["count"] == 0
    missing = await harness.call("memory_forget", {"key": "gone"})
    assert missing.is_error and "NotFound" in missing.text


async def test_fts_syntax_in_queries_never_errors(harness: Harness) -> None:
    await store(harness, "q", 'He said "hello" (loudly) with stars * and NEAR AND OR NOT')
    for query in ['"hello', "(loudly", "*", "hel*", "NEAR(a b)", "AND OR", "'; DROP", "a:b", "^x"]:
        result = await harness.call("memory_recall", {"query": query})
        assert "memory database error" not in result.text, (query, result.text)
    assert (await harness.call("memory_recall", {"query": '"hello" (loudly)'})).details["keys"] == [
        "q"
    ]
    only_symbols = await harness.call("memory_recall", {"query": '* ( " )'})
    assert only_symbols.is_error and "InvalidArguments" in only_symbols.text


async def test_persists_across_a_new_registry(workspace: Path) -> None:
    first = make_harness(workspace)
    await store(first, "durable", "survives restarts")
    second = make_harness(workspace, mode=ApprovalMode.READ_ONLY)
    result = await second.call("memory_recall", {"query": "restarts"})
    assert result.details["keys"] == ["durable"]
    # Read-only mode still allows agent-tui's own memory.
    assert not (await second.call("memory_store", {"key": "x", "content": "y"})).is_error


def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    db = tmp_path / "shared" / "memory.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(db), prefix], env=env)
        for prefix in ("left", "right")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    rows = recall_memories(db, "record", limit=50)
    assert len(rows) == 50
    for prefix in ("left", "right"):
        assert len(recall_memories(db, prefix, limit=50)) == 50
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 100
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

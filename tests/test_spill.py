"""The one spill writer: a flush means "everything queued before me is done", even when
parallel calls flush at once."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tui.spill import SpillWriter


def test_a_flush_waits_for_the_writes_queued_before_it_not_for_an_earlier_flush(
    tmp_path: Path,
) -> None:
    """Two calls each write, then flush, while the writer is stuck on the first write (a FIFO
    opens only once someone reads it). The first flush is done when the first write is; the
    second must still wait for the second write, stuck in turn."""
    first, second = tmp_path / "first.fifo", tmp_path / "second.fifo"
    os.mkfifo(first)
    os.mkfifo(second)
    writer = SpillWriter()
    results: dict[str, bool] = {}

    def flush(name: str, timeout: float) -> threading.Thread:
        thread = threading.Thread(target=lambda: results.update({name: writer.flush(timeout)}))
        thread.start()
        return thread

    writer.write(first, "one\n")  # the writer blocks opening it until a reader comes
    flush_first = flush("first", 30)
    writer.write(second, "two\n")
    flush_second = flush("second", 1.0)
    reader = os.open(first, os.O_RDONLY | os.O_NONBLOCK)  # the first write goes through
    try:
        flush_first.join(30)
        flush_second.join(30)
        assert results == {"first": True, "second": False}  # "two" waits for its reader
        other = os.open(second, os.O_RDONLY | os.O_NONBLOCK)
        try:
            assert writer.flush(30) is True
            assert os.read(other, 100) == b"two\n"
        finally:
            os.close(other)
        assert os.read(reader, 100) == b"one\n"
    finally:
        os.close(reader)

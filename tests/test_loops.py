"""The two loop detectors on call sequences: what must trip them and what must not."""

from __future__ import annotations

import pytest

from tui.tools.loops import Key, LoopDetected, LoopMemory, LoopWarning
from tui.tools.result import ToolResult

A: Key = ("read_file", '{"path":"a.txt"}')
B: Key = ("run_shell", '{"command":"cat a.txt"}')
C: Key = ("grep_search", '{"pattern":"x"}')


def ok(text: str) -> ToolResult:
    return ToolResult(text)


def run(memory: LoopMemory, key: Key, text: str) -> LoopWarning | None:
    """What the registry does: check, run (here: the given output), record."""
    memory.check(key)
    return memory.record(key, ok(text))


def test_ping_pong_warns_at_the_configured_cycle_then_blocks_the_next_call() -> None:
    memory = LoopMemory(ping_pong_cycles=3, no_progress_repeats=0)
    warnings = [run(memory, key, "same") for key in (A, B, A, B, A)]
    assert warnings == [None] * 5
    warning = run(memory, B, "same")
    assert warning is not None and warning.loop == "ping_pong"
    assert "alternated 3 times" in warning.note and "read_file and run_shell" in warning.note
    with pytest.raises(LoopDetected) as blocked:
        memory.check(A)
    assert blocked.value.loop == "ping_pong" and "was not run" in blocked.value.msg
    # Something else lifts it; the pair may run again afterwards.
    assert run(memory, C, "other") is None
    assert run(memory, A, "same") is None


def test_ping_pong_needs_the_same_results_each_time() -> None:
    """sleep then look, with something new each look: polling, not a loop."""
    memory = LoopMemory(ping_pong_cycles=2, no_progress_repeats=0)
    for index in range(10):
        assert run(memory, B, "") is None  # the sleep, always silent
        assert run(memory, A, f"line {index}") is None  # what it looks at changes


def test_ping_pong_needs_the_same_arguments() -> None:
    memory = LoopMemory(ping_pong_cycles=2, no_progress_repeats=0)
    for index in range(10):
        assert run(memory, ("read_file", f'{{"path":"{index}.txt"}}'), "same") is None
        assert run(memory, B, "same") is None


def test_ping_pong_off_at_zero() -> None:
    memory = LoopMemory(ping_pong_cycles=0, no_progress_repeats=0)
    for _ in range(20):
        assert run(memory, A, "same") is None
        assert run(memory, B, "same") is None


def test_no_progress_warns_then_blocks_an_immediate_repeat() -> None:
    memory = LoopMemory(ping_pong_cycles=0, no_progress_repeats=3)
    assert run(memory, A, "same") is None
    assert run(memory, A, "same") is None
    warning = run(memory, A, "same")
    assert warning is not None and warning.loop == "no_progress"
    assert "same output 3 times" in warning.note
    with pytest.raises(LoopDetected) as blocked:
        memory.check(A)
    assert blocked.value.loop == "no_progress"
    with pytest.raises(LoopDetected):  # still blocked: nothing happened in between
        memory.check(A)
    assert run(memory, C, "x") is None
    assert run(memory, A, "same") is None  # runs again, counted afresh


def test_no_progress_counts_only_in_a_row() -> None:
    """The same silent sleep between looks at something that moves is no loop."""
    memory = LoopMemory(ping_pong_cycles=0, no_progress_repeats=2)
    sleep: Key = ("run_shell", '{"command":"sleep 1"}')
    for index in range(10):
        assert run(memory, sleep, "exit code: 0") is None
        assert run(memory, A, f"line {index}") is None


def test_no_progress_needs_the_same_output() -> None:
    """Polling a pane whose output grows never trips it."""
    memory = LoopMemory(ping_pong_cycles=0, no_progress_repeats=2)
    capture: Key = ("tmux_capture_pane", '{"target":"agent"}')
    for index in range(10):
        assert run(memory, capture, f"building… {index}%") is None


def test_no_progress_ignores_failures_and_off_at_zero() -> None:
    memory = LoopMemory(ping_pong_cycles=0, no_progress_repeats=2)
    for _ in range(5):
        memory.check(A)
        assert memory.record(A, ToolResult.error("ExecutionFailed", "no")) is None
    off = LoopMemory(ping_pong_cycles=0, no_progress_repeats=0)
    for _ in range(10):
        assert run(off, A, "same") is None


def test_a_repeat_long_after_is_a_recheck() -> None:
    memory = LoopMemory(ping_pong_cycles=0, no_progress_repeats=2)
    assert run(memory, A, "same") is None
    for index in range(25):
        run(memory, ("grep_search", f'{{"pattern":"{index}"}}'), str(index))
    assert run(memory, A, "same") is None

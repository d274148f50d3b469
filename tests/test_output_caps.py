"""Honest caps: a 3,000,000-line ``seq`` (21 MB, past the backend's 16 MiB collection cap)
through the real tool, backend and app. Every cap that cuts says so, and where the rest is; the
saved full output holds every line up to the disk cap and then a line saying it stopped.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from tests.conftest import Harness, make_harness
from tests.scripted_server import ScriptedServer
from tests.test_ui_app import app_for, send, shell_step, turn_done, until
from tui.config import load_settings
from tui.events import ToolCallCompleted, ToolOutputChunk
from tui.spill import DEFAULT_DISK_CAP, SPILL, CappedSpill
from tui.ui.tools.pager import OutputPager
from tui.wiring import build_session

pytestmark = pytest.mark.timeout(180)

LINES = 3_000_000
SEQ = f"seq 1 {LINES}"
EVERYTHING_BYTES = sum(  # seq's whole output, digits and newlines: 22,888,896 bytes
    (min(LINES, 10**digits - 1) - 10 ** (digits - 1) + 1) * (digits + 1)
    for digits in range(1, len(str(LINES)) + 1)
)
SMALL_CAP = 1_000_000


def seq_prefix_ok(text: str) -> int:
    """``text`` is seq's output from 1, whole lines only; the number of lines."""
    lines = text.split("\n")
    assert lines[-1] == "", "the saved output ends mid-line"
    lines.pop()
    assert lines[:3] == ["1", "2", "3"]
    assert lines[-1] == str(len(lines)), "a line is missing or out of order"
    # Spot-check the whole file cheaply: every line is its own number.
    for index in range(0, len(lines), 997):
        assert lines[index] == str(index + 1)
    return len(lines)


async def run_seq(h: Harness) -> tuple[str, ToolCallCompleted, list[ToolOutputChunk]]:
    result = await h.call("run_shell", {"command": SEQ, "timeout": 120})
    assert not result.is_error, result.text[:500]
    (done,) = [e for e in h.events if isinstance(e, ToolCallCompleted)]
    info = [e for e in h.events if isinstance(e, ToolOutputChunk) and e.stream == "info"]
    return result.text, done, info


async def test_default_cap_saves_every_line_and_the_model_is_told(workspace: Path) -> None:
    h = make_harness(workspace)
    text, done, info = await run_seq(h)
    assert text.startswith("exit code: 0\n")
    # The model: head, the true number left out, the true tail, and the saved file's path.
    path = Path(str(done.full_output_path))
    assert f"full output ({EVERYTHING_BYTES} chars) saved to {path}" in text
    assert text.rstrip().split("\n")[-1].startswith("note: stdout kept to its first")
    assert "\n2999999\n3000000" in text  # the real end, not the end of the kept 16 MiB
    # The backend's collection cap is said live too (the block shows it).
    assert any("stdout kept to its first 16,777,216 characters" in e.text for e in info)
    # The saved file: every one of the 3,000,000 lines, nothing after them.
    saved = await asyncio.to_thread(path.read_text)
    assert len(saved) == EVERYTHING_BYTES
    assert await asyncio.to_thread(seq_prefix_ok, saved) == LINES
    assert done.cut_notes == []


async def test_a_small_disk_cap_stops_the_file_and_says_so(workspace: Path) -> None:
    h = make_harness(workspace)
    h.registry.get("run_shell").disk_cap = SMALL_CAP  # type: ignore[union-attr]
    text, done, _ = await run_seq(h)
    assert text.startswith("exit code: 0\n")  # the real exit code, with the cut said beside it
    path = Path(str(done.full_output_path))
    saved = await asyncio.to_thread(path.read_text)
    body, _, stop = saved.rstrip("\n").rpartition("\n")
    kept = await asyncio.to_thread(seq_prefix_ok, body + "\n")
    kept_bytes = len(body) + 1
    assert SMALL_CAP - 8 < kept_bytes <= SMALL_CAP  # every whole line that fits
    dropped = EVERYTHING_BYTES - kept_bytes
    assert stop == (
        "[agent-tui: the saved output stops here, at the disk cap of 976.6 KB "
        f"([agent] output_disk_cap); {dropped:,} more bytes of output were not saved]"
    )
    assert 100_000 < kept < LINES
    assert (
        "that file stops at the disk cap of 976.6 KB ([agent] output_disk_cap): "
        f"the last {dropped} bytes were not saved"
    ) in text
    assert done.cut_notes == [
        "the saved stdout stops at the disk cap of 976.6 KB ([agent] output_disk_cap): "
        f"the last {dropped:,} bytes were not saved"
    ]


# -- the block and the pager -------------------------------------------------------------------


@pytest.mark.parametrize("cap", [SMALL_CAP, None], ids=["small-cap", "default-cap"])
async def test_block_and_pager_state_the_cut(workspace: Path, cap: int | None) -> None:
    overrides: dict[str, Any] = {"approval": {"mode": "full-auto"}}
    if cap is not None:
        overrides["agent"] = {"output_disk_cap": cap}
    with ScriptedServer() as server:
        server.add(shell_step(SEQ, timeout=120), {"text": "Done."})
        provider = {"name": "openai", "model": "scripted"}
        provider.update(base_url=server.openai_base_url, api_key="test-key")
        overrides["provider"] = provider
        session = build_session(workspace, load_settings(workspace, overrides=overrides, env={}))
        assert session._loaded.settings.agent.output_disk_cap == (cap or DEFAULT_DISK_CAP)
        app = app_for(session)
        async with app.run_test(size=(160, 50)) as pilot:
            await send(pilot, app, "count")
            await turn_done(pilot, app, 2, server)
            block = app.tools.blocks["call_1"]
            state = block.state
            assert state.status == "ok" and state.exit_code == 0
            out = state.output
            assert out.truncated and out.spill is not None  # the per-block UI cap cut
            notes = block._note_text().plain
            subtitle = str(block.border_subtitle)
            assert "exit 0" in subtitle
            assert "the model saw a cut" in notes and str(state.full_output_path) in notes
            assert f"all of them: {out.spill_path}" in notes  # where the rest is
            assert "kept the last 1,000" in block._stats_text().plain
            app.block_actions.open_pager("call_1")
            await until(pilot, lambda: isinstance(app.screen, OutputPager), "the pager")
            pager = app.screen
            assert isinstance(pager, OutputPager)

            def info() -> str:
                return str(pager.query_one("#pager-info", Static).content)

            await until(pilot, lambda: "indexing" not in info(), "the pager's index", 60)
            source = pager.source
            last = source.line(len(source) - 1)
            if cap is None:
                assert "output cut" not in subtitle and not out.spill.capped
                assert len(source) == LINES + 1  # every line, and the collection-cap notice
                assert source.line(LINES - 1) == str(LINES)
                assert last.startswith("stdout kept to its first 16,777,216 characters")
            else:
                assert "output cut at the disk cap" in subtitle
                assert out.spill.capped and out.spill.cut_note("which") in notes
                assert "stops at the disk cap" in " ".join(state.cut_notes)
                assert "up to the disk cap" in info() and "were not saved" in info()
                assert last.startswith("[agent-tui: the saved output stops here, at the disk cap")
                assert source.line(len(source) - 2) == str(len(source) - 1)  # whole lines kept
    assert SPILL.flush()


# -- a tmux pane: past the collection cap the output still streams, so it is still saved --------


def test_command_stream_past_its_cap_streams_the_rest_live() -> None:
    from tests.test_tmux_control import NONCE, _marker
    from tui.exec.tmux.markers import CommandStream

    stream = CommandStream(NONCE, keep_limit=100)
    live: list[str] = []
    stream.feed(_marker(1, "go"))
    for n in range(1, 51):
        stream.feed(f"line {n:03d} ".encode() + b"x" * 20 + b"\r\n")
        live.append(stream.take_live())
    end = _marker(1, "0")
    stream.feed(b"last\r\n" + end[:12])  # the end marker split across two reads
    live.append(stream.take_live())
    stream.feed(end[12:] + b"prompt$ ")
    live.append(stream.take_live())
    assert stream.done and stream.capped and stream.exit_code == 0
    expected = "".join(f"line {n:03d} " + "x" * 20 + "\n" for n in range(1, 51)) + "last\n"
    assert "".join(live) == expected


@pytest.mark.skipif(__import__("shutil").which("tmux") is None, reason="needs tmux")
async def test_tmux_output_past_the_collection_cap_is_saved_whole(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.tmux_helpers import kill_server, new_socket_name, tmux_backends
    from tui.exec.tmux import jobs as tmux_module

    monkeypatch.setattr(tmux_module, "KEEP_LIMIT", 200_000)
    count = 100_000
    everything = "".join(f"{n}\n" for n in range(1, count + 1))
    socket = new_socket_name()
    try:
        async with tmux_backends(socket, workspace) as make:
            h = make_harness(workspace, backend=make())
            result = await h.call("run_shell", {"command": f"seq 1 {count}", "timeout": 120})
            assert not result.is_error, result.text[:500]
            assert result.text.startswith("exit code: 0\n")
            (done,) = [e for e in h.events if isinstance(e, ToolCallCompleted)]
            live = "".join(
                e.text for e in h.events if isinstance(e, ToolOutputChunk) and e.stream == "stdout"
            )
            assert live == everything  # the block got every line
            saved = await asyncio.to_thread(Path(str(done.full_output_path)).read_text)
            assert saved == everything  # and so did the saved full output
            assert f"full output ({len(everything)} chars)" in result.text
            assert f"\n{count - 1}\n{count}" in result.text  # the model's tail is the real end
            assert "output kept to its first 200,000 bytes in this result" in result.text
    finally:
        kill_server(socket)


async def test_reused_call_ids_never_share_or_grow_a_saved_output(workspace: Path) -> None:
    """Local servers number calls ``call_0`` every turn: each run's saved output is its own
    file, as long as what the result says it is, run after run."""
    h = make_harness(workspace)
    paths = []
    for lines in (20_000, 30_000, 20_000):
        result = await h.call(
            "run_shell", {"command": f"seq 1 {lines}"}, h.context("run_shell", "call_0")
        )
        done = [e for e in h.events if isinstance(e, ToolCallCompleted)][-1]
        path = Path(str(done.full_output_path))
        size = sum(len(str(n)) + 1 for n in range(1, lines + 1))
        assert f"full output ({size} chars) saved to {path}" in result.text
        assert len(path.read_text()) == size
        paths.append(path)
    assert len(set(paths)) == 3
    assert seq_prefix_ok(paths[0].read_text()) == 20_000  # never appended to


def test_a_spill_file_reused_by_name_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "call_0.log"
    for text in ("first run\n", "second\n"):
        spill = CappedSpill(path, 1_000)
        spill.write(text)
        spill.close()
        assert SPILL.flush()
        assert path.read_text() == text

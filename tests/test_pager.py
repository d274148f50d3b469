"""The pager on saved outputs: search, n / N, :N, wrap, and a large file opened without loading it.

The large-file tests generate their file (150 MB of short lines) in a temporary directory: with
an offset per line the index alone would take 150 MB, so the RSS bound below fails unless the
index is sparse.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import Static

from tests.test_ui_app import app_for, make_session, send, until
from tui.ui.tools import pager_index, pager_search
from tui.ui.tools.pager import LinesView, OutputPager
from tui.ui.tools.pager_index import LineSource
from tui.ui.tools.pager_search import SearchResult, search
from tui.ui.tools.pager_view import CURRENT, MATCH

pytestmark = pytest.mark.timeout(120)


def expected_lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") and len(lines) > 1 else lines


CASES = {
    "empty": "",
    "one line, no newline": "a",
    "blank lines": "\n\n\n",
    "a very long line": "x" * 300_000 + "\nafter\n" + "y" * 70_000 + "\nlast",
    "short lines": "".join(f"{n}\n" for n in range(60_000)),
    "matches across chunks": "".join(f"row {n} needle Needle\n" for n in range(20_000)) + "end",
}


@pytest.mark.parametrize("name", list(CASES))
def test_sparse_index_and_search_agree_with_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Small chunks and steps put line and match boundaries across every read."""
    monkeypatch.setattr(pager_index, "CHUNK", 4099)
    monkeypatch.setattr(pager_index, "STEP", 1021)
    monkeypatch.setattr(pager_search, "CHUNK", 4099)
    text = CASES[name]
    path = tmp_path / "out.log"
    path.write_bytes(text.encode())
    source = LineSource(path=path)
    source.index()
    lines = expected_lines(text)
    assert len(source) == len(lines)
    assert source.checkpoints() <= len(text) // 1021 + 2  # sparse: one per step, not per line
    for number in [*range(min(len(lines), 300)), *range(len(lines) - 1, -1, -331)]:
        assert source.raw_line(number) == lines[number].encode()[: pager_index.MAX_LINE_BYTES]
    for needle in ("needle", "Needle", "9 n"):
        result = SearchResult(needle)
        search(source, needle, result)
        fold = needle.islower()
        want = [
            n
            for n, line in enumerate(lines)
            for _ in range((line.lower() if fold else line).count(needle))
        ]
        assert result.done and result.total == len(want) and list(result.lines) == want


def rss() -> int:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class PagerApp(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def on_mount(self) -> None:
        self.push_screen(OutputPager("big", "", self.path, "saved output"))


async def test_a_large_saved_output_opens_and_searches_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    lines = 19 << 20  # 152 MB of eight-byte lines
    with path.open("wb") as file:
        block = b"abcdefg\n" * (1 << 20)
        for _ in range(19):
            file.write(block)
        file.write(b"the needle is here\n")
    gc.collect()
    before = rss()
    app = PagerApp(path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, OutputPager), "the pager")
        pager = app.screen
        assert isinstance(pager, OutputPager)
        view = pager.query_one(LinesView)
        await until(pilot, lambda: pager.source.done, "the index", 60)
        assert len(pager.source) == lines + 1
        await pilot.press("g", "slash", *"needle", "enter")
        await until(pilot, lambda: pager.match is not None, "the match near the end", 60)
        assert view.top_line() <= lines < view.top_line() + 28
        assert "match 1 of 1" in str(pager.query_one("#pager-info", Static).content)
        grown = rss() - before
    assert grown < 100 * 1024 * 1024, f"RSS grew {grown / 2**20:.0f} MiB"


def marked(view: LinesView) -> dict[int, list[str]]:
    """Screen row -> the texts drawn in the match (or current match) colours."""
    rows: dict[int, list[str]] = {}
    for y in range(view.scrollable_content_region.height):
        for segment in view.render_line(y):
            colour = segment.style.bgcolor if segment.style else None
            if colour in (MATCH.bgcolor, CURRENT.bgcolor):
                tag = "*" if colour == CURRENT.bgcolor else ""
                rows.setdefault(y, []).append(tag + segment.text)
    return rows


async def test_search_next_previous_jump_and_wrap_on_a_spilled_output(workspace: Path) -> None:
    app = app_for(make_session(workspace, None))
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "!seq 1 20000")
        await until(pilot, lambda: app.tools.blocks, "a block")
        (block,) = app.tools.blocks.values()
        await until(pilot, lambda: block.state.finished, "the command")
        await pilot.press("ctrl+l")
        await until(pilot, lambda: isinstance(app.screen, OutputPager), "the pager")
        pager = app.screen
        assert isinstance(pager, OutputPager)
        assert pager.source.path is not None  # the spilled file, not the kept tail
        view = pager.query_one(LinesView)

        def info() -> str:
            return str(pager.query_one("#pager-info", Static).content)

        await until(pilot, lambda: pager.source.done and view.top_line() > 0, "index, end")
        assert "of 20,000" in info()

        # 1777, 2777, ..., 7770-7779, 17770-17779 ...: every line holding "777".
        want = [n for n in range(1, 20001) if "777" in str(n)]
        await pilot.press("g", "slash", *"777", "enter")
        await until(pilot, lambda: pager.result and pager.result.done, "the search")
        assert pager.match == 0 and f"match 1 of {len(want)}" in info()
        await pilot.pause()
        rows = marked(view)
        assert ["*777"] in rows.values()  # line 777 holds the current match
        await pilot.press("n")
        assert f"match 2 of {len(want)}" in info()
        assert view.current == (want[1] - 1, 0)
        await pilot.press("N", "N")  # back past the first: wraps to the last
        assert pager.match == len(want) - 1 and "no more matches above, wrapped" in info()
        assert view.top_line() <= want[-1] - 1 < view.top_line() + 38
        await pilot.press("n")
        assert pager.match == 0 and "no more matches below, wrapped" in info()

        await pilot.press("colon", *"12345", "enter")
        assert view.top_line() <= 12344 < view.top_line() + 38
        assert "lines" in info() and "12,3" in info()
        await pilot.press("colon", *"99999", "enter")
        assert "past the end (20,000 lines)" in info()
        await pilot.press("slash", *"zzz", "enter")
        await until(pilot, lambda: "no matches for 'zzz'" in info(), "no matches")
        await pilot.press("slash", "escape")  # Esc closes the prompt, not the pager
        assert isinstance(app.screen, OutputPager) and view.has_focus

        await pilot.press("w")
        assert view.wrap and "wrap" in info()
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, OutputPager), "the pager closed")


async def test_wrap_shows_a_long_line_whole(tmp_path: Path) -> None:
    path = tmp_path / "wide.log"
    wide = "".join(f"{n:05d}" for n in range(400))  # 2,000 characters
    path.write_text(f"first\n{wide}\nlast\n")
    app = PagerApp(path)
    async with app.run_test(size=(80, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, OutputPager), "the pager")
        pager = app.screen
        assert isinstance(pager, OutputPager)
        view = pager.query_one(LinesView)
        await until(pilot, lambda: pager.source.done, "the index")
        await pilot.press("g")

        def shown() -> str:
            height = view.scrollable_content_region.height
            return "".join(view.render_line(y).text for y in range(height))

        assert "00399" not in shown()  # cut at the screen's edge
        await pilot.press("w")
        await pilot.pause()
        assert "00399" in shown() and "last" in shown()
        await pilot.press("w")
        assert "00399" not in shown()


def test_a_search_stops_when_cancelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing the pager or starting another search cancels the worker: it reads no further."""
    monkeypatch.setattr(pager_search, "CHUNK", 4096)
    path = tmp_path / "out.log"
    path.write_bytes(b"no match here\n" * 10_000)
    source = LineSource(path=path)
    source.index()
    result = SearchResult("needle")
    chunks: list[int] = []
    search(
        source, "needle", result, lambda: chunks.append(result.scanned), lambda: len(chunks) >= 2
    )
    assert not result.done and result.scanned == 2 * 4096

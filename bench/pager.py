"""The pager on a saved output of 1 GiB: first screen, full index, memory, search, jump.

    python bench/pager.py [--size-mib 1024] [--keep]

Writes a log-like file (about 80 bytes a line, so some 13 million lines) in a temporary
directory with one needle line 1 MiB before the end, opens it in ``OutputPager`` inside a
headless app and measures:

1. **First screen**: from pushing the pager to its view holding the first lines.
2. **Full index**: until the sparse line index covers the whole file.
3. **Search**: ``/needle`` from the top, until the match is the current one.
4. **Jump**: ``:N`` to a line near the end, until it is on screen.
5. **RSS**: before opening, the peak while open (sampled every 10 ms), and the growth.

The file is read cold only if the page cache does not hold it; the figures say which.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.app import App

from tui.ui.tools.pager import LinesView, OutputPager

NEEDLE = "needle4f1c9e"


def rss() -> int:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) * 1024
    return 0


def generate(path: Path, size: int) -> int:
    """Write ``size`` bytes of log lines with the needle 1 MiB before the end; return its line."""
    lines = 0
    needle_line = -1
    written = 0
    with path.open("wb") as file:
        while written < size:
            rows = [
                f"2026-09-21T13:{n // 60 % 60:02d}:{n % 60:02d}Z worker-{n % 8} INFO "
                f"processed job {n} in {n % 997} ms\n"
                for n in range(lines, lines + 5_000)
            ]
            if needle_line < 0 and written >= size - (1 << 20):
                rows[0] = f"ERROR {NEEDLE}: the one failure\n"
                needle_line = lines
            block = "".join(rows).encode()
            file.write(block)
            written += len(block)
            lines += len(rows)
    assert needle_line >= 0, "the file is too small for a needle 1 MiB before its end"
    return needle_line


class Bench(App[None]):
    pass


async def measure(path: Path, needle_line: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    peak = [rss()]
    figures["rss_before_mib"] = peak[0] / 2**20
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.01):
            peak[0] = max(peak[0], rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    app = Bench()
    async with app.run_test(size=(160, 50)) as pilot:

        async def until(check: object, timeout: float = 300.0) -> float:
            start = time.perf_counter()
            while not check():  # type: ignore[operator]
                if time.perf_counter() - start > timeout:
                    raise TimeoutError
                await asyncio.sleep(0.002)
            return time.perf_counter() - start

        opened = time.perf_counter()
        pager = OutputPager("bench", "", path, "1 GiB saved output")
        await app.push_screen(pager)
        view = pager.query_one(LinesView)
        await until(lambda: len(pager.source) >= 50 and view.render_line(0).text.strip())
        figures["first_screen_s"] = time.perf_counter() - opened
        await until(lambda: pager.source.done)
        figures["full_index_s"] = time.perf_counter() - opened
        figures["lines"] = len(pager.source)
        figures["checkpoints"] = pager.source.checkpoints()
        await pilot.press("g", "slash", *NEEDLE)
        start = time.perf_counter()
        await pilot.press("enter")
        await until(lambda: pager.match is not None)
        figures["search_s"] = time.perf_counter() - start
        assert pager.result is not None and pager.result.lines[0] == needle_line
        target = len(pager.source) - 1000
        await pilot.press("colon", *str(target))
        start = time.perf_counter()
        await pilot.press("enter")
        await until(
            lambda: (
                view.top_line() <= target - 1 < view.top_line() + 40
                and str(target) in view.render_line(target - 1 - view.top_line()).text
            )
        )
        figures["jump_s"] = time.perf_counter() - start
    stop.set()
    sampler.join()
    figures["rss_peak_mib"] = peak[0] / 2**20
    figures["rss_growth_mib"] = figures["rss_peak_mib"] - figures["rss_before_mib"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="agent-tui-pager-bench-"))
    path = folder / "saved-output.log"
    try:
        start = time.perf_counter()
        needle_line = generate(path, args.size_mib << 20)
        size = path.stat().st_size
        print(f"generated {size / 2**30:.2f} GiB in {time.perf_counter() - start:.1f} s")
        figures = asyncio.run(measure(path, needle_line))
        for name, value in figures.items():
            print(f"{name:>18}: {value:,.3f}" if isinstance(value, float) else f"{name}: {value}")
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
            folder.rmdir()


if __name__ == "__main__":
    main()

"""What the ``browser`` tool costs against bare Playwright driving the same Chromium.

One run, same machine, same Debian Chromium, same loopback page (``tests/browser_site.py``):

* **open + read text, per call**: the tool through ``ToolRegistry.execute`` (full-auto
  ``SecurityPolicy``: parse, policy, the host guard fetching every request through the
  guarded client and fulfilling the browser, truncation), two calls (``open``, then ``read``
  with format=text), vs bare Playwright's ``page.goto`` + ``document.body.innerText`` (the
  tool reads the same way) in a browser with the same quiet flags and no interception.
  Interleaved round by round in a rotating order, medians reported.
* **(breakdown)** bare Playwright with a route that fulfils every request through the same
  guarded httpx client, without the tool around it: what interception itself costs.
* **start**: the first call (driver + Chromium launch + context + first page) vs bare
  Playwright's ``start`` + ``launch`` + ``new_page``.

    python bench/browser.py [--rounds 40] [--starts 3]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``tests`` and ``tui`` importable
    sys.path.insert(0, str(ROOT))

from playwright.async_api import Browser, Page, Playwright, Route, async_playwright

from tests.browser_site import Site
from tui.exec.local import LocalBackend
from tui.security.hosts import HostPolicy
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.tools.builtin.browser.guard import RequestGuard
from tui.tools.builtin.browser.launch import BASE_FLAGS, dead_port, flags
from tui.tools.builtin.browser.tools import BrowserTool
from tui.tools.context import ToolContext
from tui.tools.loops import LoopMemory
from tui.tools.registry import ToolRegistry

Call = Callable[[int], Awaitable[None]]
_ids = itertools.count(1)
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class Ours:
    def __init__(self, workspace: Path, base: str) -> None:
        self.policy = SecurityPolicy(workspace, approval_mode=ApprovalMode.FULL_AUTO)
        self.backend = LocalBackend(default_cwd=str(workspace))
        self.tool = BrowserTool()
        self.registry = ToolRegistry([self.tool], loops=LoopMemory(0, 0))
        self.base = base

    async def call(self, arguments: str) -> None:
        ctx = ToolContext(f"bench_{next(_ids)}", "browser", self.backend, self.policy)
        result = await self.registry.execute("browser", arguments, ctx)
        if result.is_error:
            raise SystemExit(f"browser failed: {result.text}")

    async def open_read(self, index: int) -> None:
        await self.call(f'{{"action": "open", "url": "{self.base}/plain?n={index}"}}')
        await self.call('{"action": "read"}')


class Bare:
    """Playwright alone: optionally with the guard's route, never with the tool around it."""

    def __init__(self, base: str, *, guarded: bool) -> None:
        self.base = base
        self.guarded = guarded
        self.playwright: Playwright | None = None
        self.browser: Browser | None = None
        self.page: Page | None = None
        self.guard = RequestGuard(HostPolicy.from_lists(None, []))
        self.held = dead_port()

    async def start(self) -> None:
        self.playwright = await async_playwright().start()
        # Both with the tool's quiet flags (no background traffic); only the guarded one gets
        # the proxy that goes nowhere.
        args = flags(self.held.getsockname()[1]) if self.guarded else list(BASE_FLAGS)
        self.browser = await self.playwright.chromium.launch(
            executable_path=CHROMIUM, chromium_sandbox=False, args=args
        )
        context = await self.browser.new_context()
        if self.guarded:
            self.guard.context = context

            async def route(route: Route) -> None:
                await self.guard.handle(route)

            await context.route("**/*", route)
        self.page = await context.new_page()

    async def open_read(self, index: int) -> None:
        assert self.page is not None
        await self.page.goto(f"{self.base}/plain?n={index}")
        text = await self.page.evaluate("document.body.innerText")  # as the tool reads
        assert "A plain page." in text

    async def stop(self) -> None:
        if self.browser is not None:
            await self.browser.close()
        if self.playwright is not None:
            await self.playwright.stop()
        await self.guard.aclose()
        self.held.close()


async def interleaved(contenders: dict[str, Call], rounds: int, warm: int = 5) -> dict[str, float]:
    counter = itertools.count()
    for call in contenders.values():
        for _ in range(warm):
            await call(next(counter))
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            await contenders[name](next(counter))
            samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


async def starts(workspace: Path, base: str, count: int) -> dict[str, float]:
    ours: list[float] = []
    bare: list[float] = []
    for _ in range(count):
        tool = Ours(workspace, base)
        started = time.perf_counter()
        await tool.call('{"action": "tabs"}')
        ours.append(time.perf_counter() - started)
        await tool.tool.aclose()
        plain = Bare(base, guarded=False)
        started = time.perf_counter()
        await plain.start()
        bare.append(time.perf_counter() - started)
        await plain.stop()
    return {
        "browser tool: first call (start + tabs)": statistics.median(ours) * 1000,
        "bare Playwright: start + launch + new_page": statistics.median(bare) * 1000,
    }


def report(title: str, medians: dict[str, float], baseline: str, count: int) -> None:
    print(f"{title} (median of {count} each)")
    floor = medians[baseline]
    for name, ms in medians.items():
        ratio = "" if name == baseline else f"   x{ms / floor:5.2f} vs bare"
        print(f"  {name:<48} {ms:8.2f} ms{ratio}")


async def main(rounds: int, start_count: int) -> None:
    site = Site()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        ours = Ours(workspace, site.base)
        bare = Bare(site.base, guarded=False)
        guarded = Bare(site.base, guarded=True)
        await bare.start()
        await guarded.start()
        try:
            medians = await interleaved(
                {
                    "bare Playwright: goto + body.innerText": bare.open_read,
                    "browser tool: open + read (2 calls)": ours.open_read,
                    "(breakdown) Playwright + the guard's route": guarded.open_read,
                },
                rounds,
            )
        finally:
            await ours.tool.aclose()
            await bare.stop()
            await guarded.stop()
        print(f"Chromium: {CHROMIUM}; page: {site.base}/plain (loopback)")
        report("open + read text of a local page", medians, next(iter(medians)), rounds)
        started = await starts(workspace, site.base, start_count)
        report("start", started, "bare Playwright: start + launch + new_page", start_count)
    site.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--starts", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.starts))

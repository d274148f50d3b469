"""The session's one browser: started on first use, its tabs and what they said, and its end.

Imported only when a ``browser`` call runs, so a session that never browses never loads
Playwright. One ``BrowserSession`` per tool object, so one Chromium per agent session; it is
closed with the session (``BrowserTool.aclose``), and the watchdog ends it if agent-tui dies.

A browser that went away (a crash, a ``kill``, an out-of-memory kill) is noticed through
Playwright's ``disconnected`` event: the call that was running gets an error saying so, and
the next call starts a fresh browser and says that every tab and cookie was lost. A page that
stops answering past the call's time is killed with its browser, for the same reason: an
action that never returns would hold the tool forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from playwright.async_api import BrowserContext, ConsoleMessage, Download, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from tui.errors import ExecutionFailed, PermissionDenied
from tui.exec.sandbox.sandbox import Sandbox
from tui.security.hosts import HostPolicy
from tui.tools.builtin.browser.guard import FileJudge, RequestGuard
from tui.tools.builtin.browser.launch import Launched, find_chromium, kill, launch, shut
from tui.tools.truncation import spill_file_name

log = logging.getLogger(__name__)

T = TypeVar("T")

GRACE = 5.0
"""Seconds past an action's own timeout before the page is taken for hung."""
CONSOLE_KEPT = 100
CONSOLE_CHARS = 500
VIEWPORT = {"width": 1280, "height": 800}


@dataclass
class BrowserOptions:
    """What the session's settings and policy decide about its browser."""

    hosts: HostPolicy
    executable: str | None = None
    workspace: Path | None = None
    judge_file: FileJudge | None = None
    allow_downloads: bool = False
    download_dir: Path | None = None
    sandbox: Sandbox | None = None
    """This machine's sandbox: the browser runs inside it where it is active."""


@dataclass
class Tab:
    page: Page
    console: deque[str] = field(default_factory=lambda: deque(maxlen=CONSOLE_KEPT))
    console_new: int = 0
    """Errors not yet mentioned in a result."""


class BrowserGone(ExecutionFailed):
    """The browser process ended (or stopped answering) during a call."""


class BrowserSession:
    def __init__(self, options: BrowserOptions) -> None:
        self.options = options
        self.guard = RequestGuard(options.hosts, options.judge_file)
        self.launched: Launched | None = None
        self.context: BrowserContext | None = None
        self.tabs: list[Tab] = []
        self.current = 0
        self.notes: list[str] = []
        """Said with the next result: new tabs, downloads, a lost browser."""
        self._lost: str | None = None
        self._opening = False

    @property
    def alive(self) -> bool:
        launched = self.launched
        return launched is not None and self._lost is None and launched.browser.is_connected()

    @property
    def pid(self) -> int | None:
        return self.launched.pid if self.launched is not None else None

    # -- start and stop ---------------------------------------------------------------------

    async def ready(self) -> None:
        """A running browser with a context and at least one tab (raises ExecutionFailed)."""
        if self.alive:
            if not self.tabs:
                await self._new_tab()
            return
        lost = self._lost
        if self.launched is not None:
            await self._discard()
        executable = find_chromium(self.options.executable, self.options.workspace)
        launched = await launch(executable, self.options.sandbox)
        self.launched, self._lost = launched, None
        launched.browser.on("disconnected", lambda _: self._disconnected())
        context = await launched.browser.new_context(
            accept_downloads=self.options.allow_downloads,
            service_workers="block",
            viewport=VIEWPORT,  # type: ignore[arg-type]
        )
        self.context = context
        self.guard.context = context
        await context.route("**/*", self.guard.handle)
        await context.route_web_socket("**/*", self._refuse_websocket)
        context.on("page", self._attach)
        if lost:
            self.notes.append(
                f"{lost}; a fresh browser was started: earlier tabs, cookies and logins are gone"
            )
        await self._new_tab()

    async def aclose(self) -> None:
        await self._discard()
        await self.guard.aclose()

    async def _discard(self) -> None:
        launched, self.launched = self.launched, None
        self.context, self.guard.context = None, None
        self.tabs, self.current = [], 0
        if launched is not None:
            await shut(launched)

    def _disconnected(self) -> None:
        if self._lost is None:
            self._lost = "the browser process ended (it crashed or was killed)"

    def abandon(self, why: str) -> None:
        """Kill a browser that stopped answering; the next call starts a fresh one."""
        self._lost = why
        kill(self.pid)

    # -- tabs -------------------------------------------------------------------------------

    async def _new_tab(self) -> Page:
        assert self.context is not None
        self._opening = True  # our own tab: no note that the page opened one
        try:
            page = await self.context.new_page()
        finally:
            self._opening = False
        self._attach(page)
        self.current = self._index(page)
        return page

    def _attach(self, page: Page) -> None:
        """Follow a tab: ours, or one a page opened (a link with target=_blank, a popup)."""
        if any(tab.page is page for tab in self.tabs):
            return
        tab = Tab(page)
        self.tabs.append(tab)
        page.on("console", lambda message: self._console(tab, message))
        page.on("pageerror", lambda error: self._said(tab, f"uncaught {error}"))
        page.on("close", lambda closed: self._closed(closed))
        page.on("download", lambda download: asyncio.ensure_future(self._download(download)))
        if not self._opening:
            self.notes.append(f"tab {len(self.tabs)} opened: {page.url or 'about:blank'}")

    def _index(self, page: Page) -> int:
        for index, tab in enumerate(self.tabs):
            if tab.page is page:
                return index
        raise ValueError("not one of our tabs")

    def _closed(self, page: Page) -> None:
        for index, tab in enumerate(self.tabs):
            if tab.page is page:
                del self.tabs[index]
                if self.current >= index and self.current > 0:
                    self.current -= 1
                return

    @property
    def tab(self) -> Tab:
        return self.tabs[self.current]

    @property
    def page(self) -> Page:
        return self.tab.page

    async def open_tab(self) -> Page:
        return await self._new_tab()

    def switch(self, number: int) -> Tab:
        if not 1 <= number <= len(self.tabs):
            raise ExecutionFailed(f"there is no tab {number}; open tabs: 1..{len(self.tabs)}")
        self.current = number - 1
        return self.tab

    # -- what pages say ---------------------------------------------------------------------

    def _console(self, tab: Tab, message: ConsoleMessage) -> None:
        # A resource the guard blocked is reported with the blocking reason already.
        if message.type == "error" and "ERR_BLOCKED_BY_CLIENT" not in message.text:
            self._said(tab, message.text)

    def _said(self, tab: Tab, text: str) -> None:
        text = text.strip()
        if len(text) > CONSOLE_CHARS:
            text = text[:CONSOLE_CHARS] + "…"
        tab.console.append(text)
        tab.console_new += 1

    async def _download(self, download: Download) -> None:
        name = spill_file_name(download.suggested_filename or "download")
        if not self.options.allow_downloads or self.options.download_dir is None:
            self.notes.append(
                f"download refused: {download.url} ({name}); [browser] allow_downloads is off"
            )
            with contextlib.suppress(PlaywrightError):
                await download.cancel()
            return
        folder = self.options.download_dir
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = _free_name(folder, name)
            await download.save_as(path)
        except (PlaywrightError, OSError) as error:
            self.notes.append(f"download of {download.url} failed: {_first_line(error)}")
            return
        self.notes.append(f"downloaded {download.url} to {path} ({path.stat().st_size} bytes)")

    async def _refuse_websocket(self, socket: object) -> None:
        from playwright.async_api import WebSocketRoute

        assert isinstance(socket, WebSocketRoute)
        self.guard.refused(socket.url, "WebSockets are not carried by the browser's host guard")
        with contextlib.suppress(PlaywrightError):
            await socket.close(code=1008, reason="refused by agent-tui's host policy")

    # -- running one action -----------------------------------------------------------------

    async def run(self, action: Callable[[], Awaitable[T]], timeout: float, what: str) -> T:
        """Run one action against the browser with its timeout, and explain how it failed.

        Playwright's own timeouts answer first (each action gets ``timeout``); past that plus
        ``GRACE`` the page is taken for hung and its browser is killed.
        """
        assert self.context is not None
        self.context.set_default_timeout(timeout * 1000)
        self.context.set_default_navigation_timeout(timeout * 1000)
        try:
            async with asyncio.timeout(timeout + GRACE):
                return await action()
        except TimeoutError:
            self.abandon(f"the browser did not answer within {timeout + GRACE:g}s ({what})")
            raise BrowserGone(
                f"{what}: the page stopped answering for {timeout + GRACE:g}s, so its browser "
                "was killed; the next call starts a fresh one (tabs and logins are lost)"
            ) from None
        except PlaywrightTimeout as error:
            raise ExecutionFailed(
                f"{what}: timed out after {timeout:g}s\n{_brief(error)}"
            ) from None
        except PlaywrightError as error:
            if "ERR_BLOCKED_BY_CLIENT" in str(error):
                raise PermissionDenied(
                    f"{what}: refused by the host policy ({_brief(error, 1)})"
                ) from None
            if not self.alive:
                raise BrowserGone(
                    f"{what}: the browser process ended during the action (it crashed or was "
                    "killed); the next call starts a fresh one, without earlier tabs or logins"
                ) from None
            raise ExecutionFailed(f"{what}: {_brief(error)}") from None

    def take_notes(self) -> list[str]:
        """New tabs, downloads, refused requests and console errors since the last result."""
        notes, self.notes = self.notes, []
        refusals, dropped = self.guard.take_refusals()
        for refusal in refusals:
            notes.append(f"blocked {refusal.url}: {refusal.reason}")
        if dropped:
            notes.append(f"… and {dropped} more requests blocked")
        if self.tabs:
            tab = self.tab
            if tab.console_new:
                notes.append(f"{tab.console_new} new console error(s): action=console reads them")
                tab.console_new = 0
        return notes


def _free_name(folder: Path, name: str) -> Path:
    path = folder / name
    stem, suffix, n = path.stem, path.suffix, 1
    while path.exists():
        n += 1
        path = folder / f"{stem}-{n}{suffix}"
    return path


_NOISE = re.compile(r"^(={3,}.*|\s*-\s*waiting for.*)$")


def _brief(error: Exception, lines: int = 6) -> str:
    """Playwright's message without its log's noise, bounded."""
    text = str(error).strip()
    text = re.sub(r"^\w+\.\w+: ", "", text)  # "Page.goto: " — the action is said already
    text = text.split("Call log:")[0]
    kept = [line for line in text.splitlines() if line.strip() and not _NOISE.match(line)]
    return "\n".join(kept[:lines]) or type(error).__name__


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


__all__ = ["BrowserGone", "BrowserOptions", "BrowserSession", "Tab"]

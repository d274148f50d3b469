"""What each ``browser`` action does to the page, and the text the model reads back.

Every result starts with one line naming the action, the page's address and what came of it
(the tool block shows that line as the call's summary); a screenshot's line names its file and
size. Page text and trees can be long: the tool's truncation rule keeps a head and a tail and
saves the whole text to a file whose path the marker gives, as for shell output.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from playwright.async_api import Locator, Page

from tui.errors import ExecutionFailed, InvalidArguments, PermissionDenied
from tui.locations import tool_output_dir
from tui.spill import human_bytes
from tui.tools.builtin.browser.params import BrowserParams
from tui.tools.builtin.browser.running import BrowserSession
from tui.tools.truncation import spill_file_name

EVAL_CHARS = 20_000


@dataclass
class Outcome:
    text: str
    details: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[BrowserSession, BrowserParams, str], Awaitable[Outcome]]


def check_open_url(url: str, session: BrowserSession) -> str:
    """An address ``open`` may go to: http(s) judged by the host policy, ``file://`` only when
    allowed and by the path rules; anything else refused."""
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        raise InvalidArguments(f"not a valid URL: {url!r}") from None
    scheme = parts.scheme.lower()
    if scheme == "file":
        judge = session.options.judge_file
        if judge is None:
            raise PermissionDenied(
                "file:// URLs are refused in the browser; [browser] allow_file_urls turns them on"
            )
        judge(url)
        return url
    if scheme not in ("http", "https"):
        raise InvalidArguments(f"open takes an http:// or https:// URL, got {url!r}")
    if not parts.hostname:
        raise InvalidArguments(f"URL has no host: {url!r}")
    session.options.hosts.check(url)
    return url


async def title_of(page: Page) -> str:
    try:
        return await page.title()
    except Exception:  # a page between documents has none to give
        return ""


async def where(page: Page) -> str:
    title = await title_of(page)
    return f'{page.url} "{title}"' if title else page.url


async def settle(session: BrowserSession, page: Page, *, loaded: bool = False) -> None:
    """Wait until the page has arrived: past any redirect the guard stood in for (each hop
    comes back as a navigation; the predicate is asked at every one), then loaded."""
    if not session.guard.settled(page.url):
        await page.wait_for_url(session.guard.settled, wait_until="load")
    elif not loaded:
        await page.wait_for_load_state("load")


def locate(page: Page, params: BrowserParams) -> Locator:
    if params.ref is not None:
        return page.locator(f"aria-ref={params.ref.strip()}")
    if params.role is not None:
        role = cast(Any, params.role.strip())
        if params.name is not None:
            return page.get_by_role(role, name=params.name, exact=True)
        return page.get_by_role(role)
    assert params.selector is not None
    return page.locator(params.selector)


async def do_open(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    assert params.url is not None
    url = check_open_url(params.url, session)
    page = await session.open_tab() if params.new_tab else session.page
    response = await page.goto(url, wait_until="load")
    await settle(session, page, loaded=True)
    status = session.guard.statuses.get(page.url.partition("#")[0])
    if status is None and response is not None and session.guard.settled(response.url):
        status = response.status
    shown = f"HTTP {status}" if status is not None else "no HTTP status"
    tab = f"tab {session.current + 1} of {len(session.tabs)}"
    return Outcome(
        f"opened {await where(page)} ({shown}, {tab})",
        {"url": page.url, "status": status, "tab": session.current + 1},
    )


async def do_read(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    page = session.page
    await page.wait_for_load_state("load")
    if params.format == "tree":
        body = await page.aria_snapshot(mode="ai")
        head = f"accessibility tree of {await where(page)} (refs like e12 act on elements)"
    else:
        title, body = await page.evaluate(READ_TEXT)  # one round trip for both
        shown = f'{page.url} "{title}"' if title else page.url
        head = f"text of {shown} ({len(body)} chars)"
    return Outcome(f"{head}\n\n{body}", {"url": page.url, "format": params.format or "text"})


READ_TEXT = "() => [document.title, document.body ? document.body.innerText : '']"
"""The page's title and rendered text (``innerText``: what is shown, as laid out)."""


async def do_click(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    page = session.page
    await locate(page, params).click()
    await settle(session, page)
    return Outcome(f"clicked {params.target()}; now at {await where(session.page)}")


async def do_type(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    page = session.page
    element = locate(page, params)
    text = params.text or ""
    await element.fill(text)
    said = f"typed {len(text)} chars into {params.target()}"
    if params.submit:
        await element.press("Enter")
        await settle(session, page)
        said += f" and pressed Enter; now at {await where(page)}"
    return Outcome(said)


async def do_select(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    chosen = await locate(session.page, params).select_option(params.values or [])
    return Outcome(f"selected {', '.join(map(repr, chosen)) or 'nothing'} in {params.target()}")


async def do_press(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    page = session.page
    key = params.key or ""
    if params.target() is not None:
        await locate(page, params).press(key)
    else:
        await page.keyboard.press(key)
    await settle(session, page)
    on = f" on {params.target()}" if params.target() else ""
    return Outcome(f"pressed {key}{on}; now at {await where(page)}")


async def do_wait(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    page = session.page
    if params.target() is not None:
        await locate(page, params).first.wait_for(state="visible")
        return Outcome(f"{params.target()} is visible on {await where(page)}")
    state = params.state or "networkidle"
    await page.wait_for_load_state(state)
    return Outcome(f"{state} reached on {await where(page)}")


async def do_back(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    page = session.page
    response = await page.go_back(wait_until="load")
    if response is None and page.url in ("", "about:blank"):
        return Outcome("no earlier page in this tab's history")
    await settle(session, page)
    return Outcome(f"went back to {await where(page)}")


async def do_screenshot(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    page = session.page
    folder = tool_output_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spill_file_name(call_id)}-screenshot.png"
    if params.target() is not None:
        await locate(page, params).screenshot(path=path)
    else:
        await page.screenshot(path=path, full_page=bool(params.full_page))
    size = path.stat().st_size
    width, height = png_size(path)
    return Outcome(
        f"screenshot of {page.url}: {width}x{height} px, {human_bytes(size)}\n"
        f"saved to {path} (read_file shows it)",
        {"url": page.url, "path": str(path), "bytes": size, "width": width, "height": height},
    )


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's header (no image library needed)."""
    with path.open("rb") as file:
        head = file.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return 0, 0
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


async def do_console(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    tab = session.tab
    messages = list(tab.console)
    tab.console.clear()
    tab.console_new = 0
    head = f"console errors of {tab.page.url}: {len(messages)}"
    return Outcome("\n".join([head, *messages]), {"count": len(messages)})


async def do_tabs(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    lines = [f"{len(session.tabs)} tab(s); the current one is {session.current + 1}"]
    for number, tab in enumerate(session.tabs, 1):
        mark = "*" if number == session.current + 1 else " "
        lines.append(f"{mark} {number}. {await where(tab.page)}")
    return Outcome("\n".join(lines), {"tabs": len(session.tabs)})


async def do_switch(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    tab = session.switch(params.tab or 0)
    await tab.page.bring_to_front()
    return Outcome(f"switched to tab {session.current + 1}: {await where(tab.page)}")


async def do_close_tab(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    number = params.tab or session.current + 1
    tab = session.switch(number)
    url = tab.page.url
    await tab.page.close()
    left = len(session.tabs)
    now = f"; now on tab {session.current + 1}" if left else "; no tab is open"
    return Outcome(f"closed tab {number} ({url}){now}")


async def do_eval(session: BrowserSession, params: BrowserParams, call_id: str) -> Outcome:
    page = session.page
    value = await page.evaluate(params.script or "")
    try:
        shown = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):
        shown = repr(value)
    if len(shown) > EVAL_CHARS:
        raise ExecutionFailed(
            f"the script's value is {len(shown)} chars; return less (at most {EVAL_CHARS})"
        )
    return Outcome(f"script ran on {page.url}; its value:\n{shown}")


HANDLERS: dict[str, Handler] = {
    "open": do_open,
    "read": do_read,
    "click": do_click,
    "type": do_type,
    "select": do_select,
    "press": do_press,
    "wait": do_wait,
    "back": do_back,
    "screenshot": do_screenshot,
    "console": do_console,
    "tabs": do_tabs,
    "switch": do_switch,
    "close_tab": do_close_tab,
    "eval": do_eval,
}


__all__ = ["HANDLERS", "Outcome", "check_open_url", "png_size"]

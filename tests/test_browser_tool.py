"""``browser`` on Debian's real headless Chromium, against pages served on loopback.

Each test goes through the registry as the app does (parse, policy, approval, execute,
truncation). The blocked host is a second real server on 127.0.0.2 that counts what reaches
it, so "blocked" is checked where it matters: nothing arrived there.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_site import Site
from tests.conftest import Harness, make_harness
from tests.waiting import until, until_blocking
from tui.locations import tool_output_dir
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.settings import SecuritySettings
from tui.tools.builtin.browser.tools import BrowserTool

try:
    import playwright  # noqa: F401

    HAVE_PLAYWRIGHT = True
except ImportError:
    HAVE_PLAYWRIGHT = False

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does)",
    ),
    pytest.mark.skipif(
        not HAVE_PLAYWRIGHT,
        reason="Playwright's Python package is missing (pip install -e '.[browser]')",
    ),
]


@pytest.fixture
def site() -> Iterator[Site]:
    served = Site()
    yield served
    served.close()


async def browser_harness(workspace: Path, **security: Any) -> Harness:
    settings = SecuritySettings(blocked_hosts=["127.0.0.2"], **security)
    return make_harness(workspace, settings=settings)


def tool_of(harness: Harness) -> BrowserTool:
    tool = harness.registry.get("browser")
    assert isinstance(tool, BrowserTool)
    return tool


@pytest.fixture
async def harness(workspace: Path) -> AsyncIterator[Harness]:
    made = await browser_harness(workspace)
    yield made
    await tool_of(made).aclose()


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent counts as gone
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


BROWSER_WAIT = 15.0
"""Seconds to wait for what Chromium does on its own time (a download, a popup, its exit)."""


async def test_a_form_is_filled_and_submitted_and_the_login_holds(
    harness: Harness, site: Site
) -> None:
    opened = await harness.call("browser", {"action": "open", "url": f"{site.base}/login"})
    assert not opened.is_error, opened.text
    assert opened.text.startswith(f'opened {site.base}/login "Sign in" (HTTP 200')

    tree = await harness.call("browser", {"action": "read", "format": "tree"})
    assert 'textbox "User"' in tree.text and 'button "Sign in"' in tree.text
    user_ref = next(
        line.split("[ref=")[1].split("]")[0]
        for line in tree.text.splitlines()
        if 'textbox "User"' in line
    )
    again = await harness.call("browser", {"action": "read", "format": "tree"})
    assert f"[ref={user_ref}]" in again.text  # refs are stable while the page is

    typed = await harness.call("browser", {"action": "type", "ref": user_ref, "text": "alice"})
    assert typed.text.startswith(f"typed 5 chars into ref {user_ref}"), typed.text
    await harness.call(
        "browser", {"action": "type", "selector": "input[name=password]", "text": "hunter2"}
    )
    chosen = await harness.call(
        "browser", {"action": "select", "role": "combobox", "values": ["Development"]}
    )
    assert "'dev'" in chosen.text, chosen.text
    clicked = await harness.call(
        "browser", {"action": "click", "role": "button", "name": "Sign in"}
    )
    assert not clicked.is_error, clicked.text
    # POST → 303 → /home: the redirect was followed, and its cookie kept.
    assert f'now at {site.base}/home "Home"' in clicked.text
    text = await harness.call("browser", {"action": "read"})
    assert "Welcome alice:dev" in text.text

    back = await harness.call("browser", {"action": "back"})
    assert "went back to" in back.text and "/login" in back.text
    reopened = await harness.call("browser", {"action": "open", "url": f"{site.base}/home"})
    assert "Home" in reopened.text
    assert "Welcome alice:dev" in (await harness.call("browser", {"action": "read"})).text


async def test_content_rendered_by_javascript_is_read_after_waiting(
    harness: Harness, site: Site
) -> None:
    await harness.call("browser", {"action": "open", "url": f"{site.base}/js"})
    waited = await harness.call("browser", {"action": "wait", "selector": "#done"})
    assert not waited.is_error, waited.text
    text = await harness.call("browser", {"action": "read"})
    assert "Items: alpha, beta, gamma" in text.text and "all rendered" in text.text
    assert "1 new console error(s)" in waited.text + text.text
    console = await harness.call("browser", {"action": "console"})
    assert "item list is short" in console.text
    assert "0" in (await harness.call("browser", {"action": "console"})).text.split("\n")[0]


async def test_redirects_are_followed_hop_by_hop(harness: Harness, site: Site) -> None:
    opened = await harness.call("browser", {"action": "open", "url": f"{site.base}/chain"})
    assert opened.text.startswith(f'opened {site.base}/home "Home" (HTTP 200'), opened.text
    assert site.hits.get("/chain") == 1 and site.hits.get("/chain2") == 1


async def test_a_redirect_to_a_blocked_host_is_refused_and_never_reaches_it(
    harness: Harness, site: Site
) -> None:
    result = await harness.call("browser", {"action": "open", "url": f"{site.base}/to-blocked"})
    assert result.is_error
    assert result.details.get("error_type") == "PermissionDenied", result.text
    assert f"its redirect to {site.blocked_base}/secret was refused" in result.text
    assert "blocked_hosts" in result.text
    assert site.hits.get("/to-blocked") == 1
    assert site.forbidden_hits == []
    direct = await harness.call("browser", {"action": "open", "url": f"{site.blocked_base}/x"})
    assert direct.is_error and "blocked_hosts" in direct.text
    assert site.forbidden_hits == []


async def test_sub_resources_from_a_blocked_host_are_refused_in_every_spelling(
    harness: Harness, site: Site
) -> None:
    opened = await harness.call("browser", {"action": "open", "url": f"{site.base}/embeds-blocked"})
    assert not opened.is_error, opened.text
    await harness.call("browser", {"action": "wait", "state": "networkidle"})
    port = site.forbidden.server_address[1]
    blocked_lines = [line for line in opened.text.splitlines() if "[browser] blocked" in line]
    assert any(f"{site.blocked_base}/pixel.png" in line for line in blocked_lines), opened.text
    assert any(f":{port}/tracker.js" in line for line in blocked_lines), opened.text
    assert any(f":{port}/frame" in line for line in blocked_lines), opened.text
    assert all("blocked_hosts" in line for line in blocked_lines)
    assert site.forbidden_hits == []
    # The page's own requests still went through: its script fetched the items.
    tabs = await harness.call("browser", {"action": "tabs"})
    assert '"Embeds 3"' in tabs.text


async def test_a_page_that_never_finishes_loading_is_a_timeout_and_the_browser_goes_on(
    harness: Harness, site: Site
) -> None:
    started = time.monotonic()
    result = await harness.call(
        "browser", {"action": "open", "url": f"{site.base}/hang", "timeout": 2}
    )
    assert result.is_error and "timed out after 2s" in result.text, result.text
    assert time.monotonic() - started < 15
    after = await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    assert not after.is_error and '"Plain"' in after.text


async def test_a_page_whose_script_never_yields_gets_its_browser_killed(
    harness: Harness, site: Site
) -> None:
    await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    pid = tool_of(harness).pid
    assert pid is not None and process_alive(pid)
    stuck = await harness.call(
        "browser", {"action": "eval", "script": "while (true) {}", "timeout": 1}
    )
    assert stuck.is_error and "stopped answering" in stuck.text, stuck.text
    await until(lambda: not process_alive(pid), timeout=BROWSER_WAIT)
    again = await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    assert not again.is_error, again.text
    assert "a fresh browser was started" in again.text


async def test_the_browser_killed_mid_action_is_an_error_then_a_fresh_browser(
    harness: Harness, site: Site
) -> None:
    await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    pid = tool_of(harness).pid
    assert pid is not None
    call = asyncio.create_task(
        harness.call("browser", {"action": "open", "url": f"{site.base}/hang", "timeout": 30})
    )
    await until(site.hanging.is_set, timeout=BROWSER_WAIT)
    os.killpg(pid, signal.SIGKILL)
    result = await asyncio.wait_for(call, 20)
    assert result.is_error
    assert "the browser process ended during the action" in result.text, result.text
    again = await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    assert not again.is_error, again.text
    assert "crashed or was killed" in again.text and "fresh browser" in again.text
    assert tool_of(harness).pid not in (None, pid)


async def test_no_chromium_is_a_clear_error(workspace: Path, site: Site) -> None:
    harness = await browser_harness(workspace)
    tool_of(harness).executable = str(workspace / "no-such-chromium")
    result = await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    assert result.is_error and "is not an executable file" in result.text
    planted = workspace / "bin" / "chromium"  # a repository's own "chromium" is never run
    planted.parent.mkdir()
    planted.write_text("#!/bin/sh\ntouch ran\n")
    planted.chmod(0o755)
    harness = await browser_harness(workspace)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = str(planted.parent)
    try:
        result = await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    finally:
        os.environ["PATH"] = old_path
    assert result.is_error and "apt-get install chromium" in result.text, result.text
    assert not (workspace / "ran").exists()


async def test_file_urls_and_downloads_are_refused_unless_allowed(
    workspace: Path, site: Site
) -> None:
    (workspace / "page.html").write_text("<title>Local</title><p>from disk</p>")
    harness = await browser_harness(workspace)
    try:
        refused = await harness.call(
            "browser", {"action": "open", "url": f"file://{workspace}/page.html"}
        )
        assert refused.is_error and "allow_file_urls" in refused.text
        await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
        clicked = await harness.call(
            "browser",
            {"action": "eval", "script": f"location.href = '{site.base}/download'; 1"},
        )
        assert not clicked.is_error, clicked.text
        await until(lambda: site.hits.get("/download") == 1, timeout=BROWSER_WAIT)
        refusing = tool_of(harness)._session  # the download event comes on its own time
        await until(
            lambda: refusing is not None and any("download" in n for n in refusing.notes),
            timeout=BROWSER_WAIT,
        )
        notes = await harness.call("browser", {"action": "tabs"})
        assert "download refused" in notes.text and "allow_downloads" in notes.text
    finally:
        await tool_of(harness).aclose()

    allowed = await browser_harness(workspace)
    tool = tool_of(allowed)
    tool.allow_file_urls = tool.allow_downloads = True
    try:
        opened = await allowed.call(
            "browser", {"action": "open", "url": f"file://{workspace}/page.html"}
        )
        assert not opened.is_error and '"Local"' in opened.text, opened.text
        await allowed.call("browser", {"action": "open", "url": f"{site.base}/plain"})
        await allowed.call(
            "browser", {"action": "eval", "script": f"location.href = '{site.base}/download'; 1"}
        )
        folder = tool_output_dir() / "downloads"
        await until(lambda: (folder / "report.bin").exists(), timeout=BROWSER_WAIT)
        session = tool._session  # the note is written once the save has returned
        await until(
            lambda: session is not None and any("downloaded" in n for n in session.notes),
            timeout=BROWSER_WAIT,
        )
        assert (folder / "report.bin").read_bytes() == b"file body"
        said = (await allowed.call("browser", {"action": "tabs"})).text
        assert f"/download to {folder / 'report.bin'} (9 bytes)" in said, said
    finally:
        await tool.aclose()


async def test_tabs_opened_by_a_page_are_listed_and_switched_to(
    harness: Harness, site: Site
) -> None:
    await harness.call("browser", {"action": "open", "url": f"{site.base}/newtab"})
    clicked = await harness.call("browser", {"action": "click", "role": "link"})
    await until(
        lambda: tool_of(harness).tab_count == 2, timeout=BROWSER_WAIT
    )  # the popup opens on its own time
    tabs = await harness.call("browser", {"action": "tabs"})
    assert "[browser] tab 2 opened" in clicked.text + tabs.text, clicked.text + tabs.text
    assert "2 tab(s); the current one is 1" in tabs.text
    switched = await harness.call("browser", {"action": "switch", "tab": 2})
    assert "switched to tab 2" in switched.text
    await harness.call("browser", {"action": "wait", "selector": "h1"})
    assert "Welcome" in (await harness.call("browser", {"action": "read"})).text
    closed = await harness.call("browser", {"action": "close_tab"})
    assert "closed tab 2" in closed.text and "now on tab 1" in closed.text
    missing = await harness.call("browser", {"action": "switch", "tab": 5})
    assert missing.is_error and "no tab 5" in missing.text


async def test_a_screenshot_is_a_png_file_the_result_names(harness: Harness, site: Site) -> None:
    await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    shot = await harness.call("browser", {"action": "screenshot"})
    assert not shot.is_error, shot.text
    path = Path(shot.details["path"])
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    first, second = shot.text.splitlines()[:2]
    assert first.startswith(f"screenshot of {site.base}/plain: 1280x800 px, ")
    assert first.endswith("KB") and second.startswith(f"saved to {path} ")
    assert shot.details["bytes"] == path.stat().st_size


async def test_page_text_is_bounded_with_the_whole_saved(harness: Harness, site: Site) -> None:
    await harness.call("browser", {"action": "open", "url": f"{site.base}/big"})
    text = await harness.call("browser", {"action": "read"})
    assert len(text.text) < 16_000
    assert "THE END" in text.text  # the tail is kept
    saved = Path(text.details["full_output_path"])
    assert "word19999" in saved.read_text()


async def test_javascript_needs_danger_full_access_and_clicks_need_write(
    workspace: Path, site: Site
) -> None:
    harness = make_harness(
        workspace,
        settings=SecuritySettings(permission_ceiling=PermissionMode.WORKSPACE_WRITE),
        mode=ApprovalMode.FULL_AUTO,
    )
    try:
        denied = await harness.call("browser", {"action": "eval", "script": "1 + 1"})
        assert denied.is_error and denied.details.get("error_type") == "PermissionDenied"
        assert tool_of(harness).pid is None  # refused before any browser started
    finally:
        await tool_of(harness).aclose()
    tool = BrowserTool()
    looks = [{"action": "open", "url": "http://x"}, {"action": "read"}, {"action": "tabs"}]
    for args in looks:
        assert tool.access(tool.Params.model_validate(args)).permission is PermissionMode.READ_ONLY
    click = tool.Params.model_validate({"action": "click", "ref": "e1"})
    assert (
        tool.access(click).permission is PermissionMode.WORKSPACE_WRITE
        and tool.access(click).is_acting
    )


async def test_bad_arguments_say_what_is_missing(harness: Harness) -> None:
    for args, said in [
        ({"action": "open"}, "needs url"),
        ({"action": "click"}, "needs an element"),
        ({"action": "click", "ref": "e1", "selector": "a"}, "not several"),
        ({"action": "open", "url": "ftp://example.com/"}, "http:// or https://"),
    ]:
        result = await harness.call("browser", args)
        assert result.is_error and said in result.text, (args, result.text)
    assert tool_of(harness).pid is None  # none of them started a browser


def test_the_browser_ends_when_agent_tui_is_killed(tmp_path: Path) -> None:
    """A ``kill -9`` of the process holding the browser: the watchdog ends Chromium."""
    script = textwrap.dedent(
        """
        import asyncio, sys
        from pathlib import Path
        from tests.browser_site import Site
        from tests.conftest import make_harness

        async def main():
            site = Site()
            harness = make_harness(Path(sys.argv[1]))
            await harness.call("browser", {"action": "open", "url": site.base + "/plain"})
            print(harness.registry.get("browser").pid, flush=True)
            await asyncio.sleep(120)

        asyncio.run(main())
        """
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {
        **os.environ,
        "AGENT_TUI_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(workspace)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout is not None
        pid = int(holder.stdout.readline())
        assert process_alive(pid)
        holder.kill()
        holder.wait(10)
        until_blocking(
            lambda: not process_alive(pid), "Chromium to end with the process that started it", 15
        )
    finally:
        holder.kill()


def test_registering_the_tool_does_not_import_playwright() -> None:
    code = (
        "import sys\n"
        "from tui.tools.builtin.catalog import builtin_tools\n"
        "tools = builtin_tools()\n"
        "assert any(t.name == 'browser' for t in tools)\n"
        "print(sorted(m for m in sys.modules if m.startswith('playwright') "
        "or m.startswith('tui.tools.builtin.browser')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    light = ["tui.tools.builtin.browser", "tui.tools.builtin.browser.params"]
    assert out.stdout.strip() == str([*light, "tui.tools.builtin.browser.tools"]), out.stdout

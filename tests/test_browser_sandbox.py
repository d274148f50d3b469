"""Chromium inside the sandbox: its own PID and network namespaces, nothing writable but its
profile and downloads, and still every feature the browser tool has (pages through the
guard, a workspace file by file://, a download)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.browser_site import Site
from tests.conftest import Harness, make_harness
from tests.sandbox_support import SKIP_REASON, bwrap_works
from tests.test_browser_tool import BROWSER_WAIT, site
from tests.test_browser_tool import pytestmark as browser_marks
from tests.waiting import until
from tui.exec.sandbox.sandbox import Sandbox
from tui.locations import tool_output_dir
from tui.security.secrets import SECRET_PATHS
from tui.security.settings import SecuritySettings
from tui.tools.builtin.browser.tools import BrowserTool

__all__ = ["site"]  # the test site fixture

pytestmark = [*browser_marks, pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON)]


@pytest.fixture
async def sandboxed(workspace: Path) -> AsyncIterator[tuple[Harness, BrowserTool, Sandbox]]:
    sandbox = Sandbox(workspace, patterns=SECRET_PATHS)
    assert await sandbox.start() is None
    harness = make_harness(workspace, settings=SecuritySettings(blocked_hosts=["127.0.0.2"]))
    tool = harness.registry.get("browser")
    assert isinstance(tool, BrowserTool)
    tool.sandbox = sandbox
    try:
        yield harness, tool, sandbox
    finally:
        await tool.aclose()
        await sandbox.close()


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def namespace(pid: int | str, kind: str) -> str:
    return os.readlink(f"/proc/{pid}/ns/{kind}")


async def test_chromium_runs_in_namespaces_of_its_own_and_still_browses(
    sandboxed: tuple[Harness, BrowserTool, Sandbox], site: Site
) -> None:
    harness, tool, _ = sandboxed
    opened = await harness.call("browser", {"action": "open", "url": f"{site.base}/login"})
    assert not opened.is_error and '"Sign in"' in opened.text, opened.text
    session = tool._session
    assert session is not None and session.pid is not None
    with open(f"/proc/{session.pid}/cmdline", "rb") as cmdline:
        assert cmdline.read().split(b"\0")[0].endswith(b"bwrap")
    chromium = [
        pid
        for pid in descendants(session.pid)
        if os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("chromium")
    ]
    assert chromium, "no Chromium process under the sandbox"
    for pid in chromium:
        assert namespace(pid, "pid") != namespace("self", "pid")
        assert namespace(pid, "net") != namespace("self", "net")
    # The host policy still judges what it asks for: a blocked host is refused.
    blocked = await harness.call("browser", {"action": "open", "url": "http://127.0.0.2:9/"})
    assert blocked.is_error and "blocked_hosts" in blocked.text
    await tool.aclose()
    await until(
        lambda: not any(os.path.exists(f"/proc/{pid}") for pid in chromium), timeout=BROWSER_WAIT
    )


async def test_a_workspace_file_and_a_download_still_work_inside(
    sandboxed: tuple[Harness, BrowserTool, Sandbox], site: Site, workspace: Path
) -> None:
    harness, tool, _ = sandboxed
    tool.allow_file_urls = tool.allow_downloads = True
    (workspace / "page.html").write_text("<title>Local</title><p>from disk</p>")
    opened = await harness.call(
        "browser", {"action": "open", "url": f"file://{workspace}/page.html"}
    )
    assert not opened.is_error and '"Local"' in opened.text, opened.text
    await harness.call("browser", {"action": "open", "url": f"{site.base}/plain"})
    await harness.call(
        "browser", {"action": "eval", "script": f"location.href = '{site.base}/download'; 1"}
    )
    folder = tool_output_dir() / "downloads"
    await until(lambda: (folder / "report.bin").exists(), timeout=BROWSER_WAIT)
    assert (folder / "report.bin").read_bytes() == b"file body"

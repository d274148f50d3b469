"""Starting the session's headless Chromium: which binary, with which flags, watched how.

* The binary is the system's (Debian's ``chromium``), never one downloaded at run time: a
  configured path or name, else the usual names on PATH, skipping PATH entries that are
  relative or inside the workspace (a repository could ship its own ``chromium``).
* Flags: headless, no GPU, none of Chromium's own background traffic (component updates,
  sync, safe browsing lists, first-run pings: on a closed network they only fail and retry),
  no QUIC, WebRTC only through the proxy, and a proxy that goes nowhere: a loopback port this
  process holds bound and never listens on, loopback itself included (``<-loopback>``). Every
  request the guard does not answer fails there (see ``guard``).
* As root Chromium refuses its own sandbox, so it runs with ``--no-sandbox`` then only (the
  guard, not Chromium's sandbox, is what keeps a page off the network).
* The profile is Playwright's fresh temporary one per launch, removed when the browser closes.
* Chromium runs in a session of its own (Playwright starts it detached); its session id goes
  to the agent's watchdog (``tui.exec.watchdog``), so a crash or ``kill -9`` of agent-tui
  still ends it. Playwright's driver ends by itself when our end of its pipe closes.
* Where this machine has the sandbox, Chromium runs inside it (``sandboxed_executable``): a
  read-only file system but for its profile and its downloads, secret places hidden, and no
  network at all — it needs none, since every request is fetched by the guard, here. A page
  that broke out of the renderer (Chromium's own sandbox is off as root) would find itself in
  ours. Playwright talks to it over pipes, which the sandbox keeps.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tui.errors import ExecutionFailed
from tui.exec import watchdog
from tui.exec.sandbox.sandbox import Sandbox
from tui.scratch import private_folder, remove_private_folder
from tui.security.confinement import Confinement

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

BROWSER_WALLS = Confinement("read-only", "none")
"""The browser's sandbox: it writes only its profile and downloads (bound in), and needs no
network of its own: the guard fetches every request here."""

CANDIDATES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
LAUNCH_TIMEOUT = 30.0

BASE_FLAGS = (
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-quic",
    "--dns-prefetch-disable",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--metrics-recording-only",
    "--no-pings",
)


class NoBrowser(ExecutionFailed):
    """No Chromium to run, or no Playwright to run it with."""


def find_chromium(configured: str | None, workspace: Path | None) -> str:
    """The Chromium binary to run (raises NoBrowser with what to install)."""
    names = (configured,) if configured else CANDIDATES
    for name in names:
        found = _which(name, workspace)
        if found is not None:
            return found
    if configured:
        raise NoBrowser(
            f"[browser] executable {configured!r} is not an executable file (or not on PATH "
            "outside the workspace)"
        )
    raise NoBrowser(
        "no Chromium found (looked for " + ", ".join(CANDIDATES) + " on PATH): install "
        "Debian's chromium (apt-get install chromium) or set [browser] executable"
    )


def _which(name: str, workspace: Path | None) -> str | None:
    if os.sep in name:
        path = Path(name).expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    folders = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if workspace is not None and Path(entry).resolve().is_relative_to(workspace.resolve()):
            continue
        folders.append(entry)
    return shutil.which(name, path=os.pathsep.join(folders))


def dead_port() -> socket.socket:
    """A loopback TCP port bound and never listened on: connecting to it is refused at once,
    and no other program can take it while we hold it."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind(("127.0.0.1", 0))
    return held


def flags(proxy_port: int) -> list[str]:
    proxy = [f"--proxy-server=http://127.0.0.1:{proxy_port}", "--proxy-bypass-list=<-loopback>"]
    return [*BASE_FLAGS, *proxy]


@dataclass
class Launched:
    """A running browser and what keeps it contained."""

    playwright: Playwright
    browser: Browser
    executable: str
    pid: int | None
    held_port: socket.socket
    scratch: Path | None = None
    """The sandboxed browser's own folder (its wrapper, pid file, downloads), removed at shut."""


async def sandboxed_executable(chromium: str, sandbox: Sandbox) -> tuple[str, Path]:
    """A wrapper that starts ``chromium`` inside ``sandbox``; its path and its folder.

    The wrapper writes its own pid (bwrap's, after ``exec``: a session leader, since
    Playwright starts the browser detached) to ``pid`` in the folder: inside the sandbox's PID
    namespace Chromium's own idea of its pid means nothing here. The profile folder Playwright
    names on the command line and the downloads folder are the only writable places.
    """
    scratch = Path(private_folder("browser"))
    downloads = scratch / "downloads"
    downloads.mkdir()
    argv = await sandbox.wrap([chromium], BROWSER_WALLS, cwd=str(scratch))
    split = argv.index("--chdir")
    prefix, tail = argv[:split], argv[split:]
    script = "\n".join(
        [
            "#!/bin/sh",
            'profile=""',
            'for a in "$@"; do case "$a" in --user-data-dir=*) profile="${a#--user-data-dir=}";;'
            " esac; done",
            f"echo $$ > {shlex.quote(str(scratch / 'pid'))}",
            f"exec {shlex.join(prefix)} --bind {shlex.quote(str(scratch))} "
            f"{shlex.quote(str(scratch))} "
            '${profile:+--bind "$profile" "$profile"} '
            f'{shlex.join(tail)} "$@"',
            "",
        ]
    )
    wrapper = scratch / "chromium"
    wrapper.write_text(script)
    wrapper.chmod(0o700)
    return str(wrapper), scratch


async def launch(executable: str, sandbox: Sandbox | None = None) -> Launched:
    """Start Playwright's driver and the browser (raises NoBrowser / ExecutionFailed).

    With an active ``sandbox`` the browser runs inside it (see the module docstring)."""
    try:
        from playwright.async_api import Error, async_playwright
    except ImportError:
        raise NoBrowser(
            "the browser tool needs Playwright's Python package: "
            "pip install 'agent-tui-cli[browser]'"
        ) from None
    held = dead_port()
    scratch: Path | None = None
    program = executable
    if sandbox is not None and sandbox.active:
        program, scratch = await sandboxed_executable(executable, sandbox)
    manager = async_playwright()
    try:
        playwright = await manager.start()
    except Exception as error:
        held.close()
        raise ExecutionFailed(f"could not start Playwright's driver: {error}") from None
    try:
        browser = await playwright.chromium.launch(
            executable_path=program,
            downloads_path=str(scratch / "downloads") if scratch is not None else None,
            headless=True,
            chromium_sandbox=False,
            args=flags(held.getsockname()[1]),
            handle_sigint=False,
            handle_sigterm=False,
            handle_sighup=False,
            timeout=LAUNCH_TIMEOUT * 1000,
        )
    except Error as error:
        await _stop_quietly(playwright)
        held.close()
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ExecutionFailed(f"Chromium ({executable}) did not start: {first}") from None
    pid = _wrapper_pid(scratch) if scratch is not None else await browser_pid(browser)
    if pid is not None and _leads_session(pid):
        guard = await watchdog.shared()
        if guard is not None:
            guard.watch(pid)
    return Launched(playwright, browser, executable, pid, held, scratch)


def _wrapper_pid(scratch: Path) -> int | None:
    try:
        return int((scratch / "pid").read_text().strip())
    except (OSError, ValueError):
        return None


async def browser_pid(browser: Browser) -> int | None:
    """The browser process's id, asked of Chromium itself (Playwright does not say it)."""
    try:
        cdp = await browser.new_browser_cdp_session()
        info = await cdp.send("SystemInfo.getProcessInfo")
        await cdp.detach()
    except Exception:
        return None
    for process in info.get("processInfo", []):
        if process.get("type") == "browser":
            return int(process["id"])
    return None


def _leads_session(pid: int) -> bool:
    """Only a browser in a session of its own is handed to the watchdog: it stops whole
    sessions, and ours must never be one of them."""
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False


def kill(pid: int | None) -> None:
    """End the browser at once (a hung or unreachable browser): its whole session when it
    leads one, else the process alone."""
    if pid is None:
        return
    try:
        if _leads_session(pid):
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


async def _stop_quietly(playwright: Playwright) -> None:
    try:
        async with asyncio.timeout(10):
            await playwright.stop()
    except Exception:
        pass


async def shut(launched: Launched) -> None:
    """Close the browser, then the driver; a browser that will not close is killed."""
    try:
        async with asyncio.timeout(10):
            await launched.browser.close()
    except Exception:
        kill(launched.pid)
    await _stop_quietly(launched.playwright)
    launched.held_port.close()
    if launched.scratch is not None:
        remove_private_folder(str(launched.scratch))


__all__ = ["Launched", "NoBrowser", "find_chromium", "kill", "launch", "shut"]

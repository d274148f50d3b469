"""``browser``: a real headless Chromium the model can open, read, click and type in.

Why it is built this way:

* **Playwright's Python API over Debian's own Chromium** (``executable_path``), not a browser
  Playwright downloads and not hand-written CDP. Playwright is Microsoft's maintained driver;
  its Chromium support tracks current Chromium builds, and with it come the pieces a model
  needs that raw CDP leaves to us: actionability waits before a click, accessibility trees
  whose element refs (``aria-ref=e12``) stay the same across reads of an unchanged page, role
  locators, request interception, downloads and tab events. It launches Debian's build as it
  is; nothing is fetched at run time. The price is its driver process (Node, inside the
  wheel), measured by ``bench/browser.py`` against bare Playwright doing the same work.
* **Lazy**: this module holds only the schema and the permissions. Playwright, the session and
  the actions are imported on the first call, so start-up and the first model request never
  pay for them (``tests/test_import_hygiene.py`` holds that).
* **On this machine**: Chromium runs where agent-tui runs, whatever the command target (an
  SSH host or a container has no display stack to lend); ``localhost`` is this machine.
* **One browser per agent session**, started on the first call, closed with the session, and
  stopped by the watchdog if agent-tui dies; a fresh temporary profile, never the user's.
* **The host policy on every request**: see ``guard``: the browser is fulfilled with
  answers fetched by the same guarded client as ``fetch_url``, and reaches nothing by itself.
* **Screenshots are files, not pictures in the block.** The block's first lines name the
  file, its pixel size and bytes. The maintained Textual image widget (textual-image) does not
  fit: it must be imported before the app starts because it probes the terminal then (every
  run would pay for a picture few runs take), tmux — where the app usually runs — passes no
  Kitty graphics and only some Sixel, and a tool block draws lines, not child widgets.
* **Permissions per action**: looking (open, read, wait, back, screenshot, console, tabs) is
  read-only like ``fetch_url``; acting on a page (click, type, select, press) can change what
  a site holds, like ``http_request``'s POST, so it needs workspace-write; running JavaScript
  in the page is danger-full-access.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import unquote, urlsplit

from tui.errors import ExecutionFailed, InvalidArguments, NotFound, PermissionDenied, ToolError
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess
from tui.tools.builtin.browser.params import ACTING, BrowserParams
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult
from tui.tools.truncation import TruncationRule

if TYPE_CHECKING:
    from tui.exec.sandbox.sandbox import Sandbox
    from tui.tools.builtin.browser.running import BrowserSession

DEFAULT_TIMEOUT = 30.0
START_TIMEOUT = 60.0
"""Seconds for Playwright's driver and Chromium to start."""


class BrowserTool(Tool[BrowserParams]):
    name = "browser"
    label = "Browser"
    Params = BrowserParams
    permission = PermissionMode.WORKSPACE_WRITE
    truncation = TruncationRule.head(12_000, keep_tail=3_000)
    aliases: ClassVar[dict[str, str]] = {"js": "script", "expression": "script"}
    description = """A real headless Chromium: open pages, read them, click, type, submit.

Pages run JavaScript and keep cookies and logins between calls. open a URL, read it
(format=text, or format=tree: an accessibility tree whose elements carry refs like e12), act
on an element by ref (or role + name, or CSS selector), read again. Requests obey [security]
hosts; blocked ones are listed in the result.
When to use: checking a web app after a change or deploy; pages built by JavaScript; logging
in and submitting forms; a screenshot of what a person sees.
When NOT to use: static pages, docs, JSON APIs (fetch_url is faster); raw HTTP (http_request).
Disambiguation: refs come from the current tab's latest tree. type replaces a field's text.
eval (JavaScript in the page) needs danger-full-access. Screenshots are PNG files (read_file
shows them). file:// and downloads are refused unless [browser] allows them.
Examples: {"action": "open", "url": "http://localhost:3000/login"};
{"action": "read", "format": "tree"}; {"action": "type", "ref": "e7", "text": "admin"};
{"action": "click", "role": "button", "name": "Sign in"}; {"action": "console"}"""

    def __init__(self) -> None:
        self.executable: str | None = None
        """``[browser] executable`` (None: the usual names on PATH)."""
        self.allow_downloads = False
        self.allow_file_urls = False
        self.action_timeout = DEFAULT_TIMEOUT
        self._session: BrowserSession | None = None
        self.sandbox: Sandbox | None = None
        """This machine's sandbox (the composition root sets it): Chromium runs inside it."""
        self._lock = asyncio.Lock()

    def parameters_schema(self) -> dict[str, Any]:
        """The schema without ``null`` alternatives: every optional field is simply left out,
        and the model reads each field once, not a union for each (it is sent every turn)."""
        schema = super().parameters_schema()
        for name, field in schema.get("properties", {}).items():
            options = [o for o in field.get("anyOf", []) if o != {"type": "null"}]
            if len(options) == 1 and field.get("default", 0) is None:
                rest = {k: v for k, v in field.items() if k not in ("anyOf", "default")}
                schema["properties"][name] = {**options[0], **rest}
        return schema

    def access(self, params: BrowserParams) -> ToolAccess:
        reads: list[str] = []
        if params.action == "open" and params.url:
            parts = urlsplit(params.url.strip())
            if parts.scheme.lower() == "file":
                reads.append(unquote(parts.path))
        return ToolAccess(
            permission=params.permission(),
            subject=params.subject(),
            read_paths=reads,
            acting=params.action in ACTING or params.action == "eval",
        )

    @property
    def pid(self) -> int | None:
        """The running browser's process id, if one runs."""
        return self._session.pid if self._session is not None else None

    @property
    def tab_count(self) -> int:
        """Tabs open in the running browser (0 when none runs)."""
        session = self._session
        return len(session.tabs) if session is not None and session.alive else 0

    async def execute(self, params: BrowserParams, ctx: ToolContext) -> ToolResult:
        async with self._lock:
            session = self._ready_session(ctx)
            try:
                return await self._run(session, params, ctx)
            except ToolError as error:
                raise _with_notes(error, session.take_notes()) from None

    async def aclose(self) -> None:
        """Close the browser with the session."""
        session, self._session = self._session, None
        if session is not None:
            await session.aclose()

    def _ready_session(self, ctx: ToolContext) -> BrowserSession:
        if self._session is not None:
            return self._session
        try:
            from tui.tools.builtin.browser.running import BrowserOptions, BrowserSession
        except ImportError:
            raise ExecutionFailed(
                "the browser tool needs Playwright's Python package: "
                "pip install 'agent-tui-cli[browser]'"
            ) from None
        policy = ctx.policy

        def judge_file(url: str) -> None:
            policy.resolve_path(unquote(urlsplit(url).path))

        from tui.locations import tool_output_dir

        self._session = BrowserSession(
            BrowserOptions(
                hosts=policy.hosts,
                executable=self.executable,
                workspace=_local_workspace(ctx),
                judge_file=judge_file if self.allow_file_urls else None,
                allow_downloads=self.allow_downloads,
                download_dir=tool_output_dir() / "downloads",
                sandbox=self.sandbox,
            )
        )
        return self._session

    async def _run(
        self, session: BrowserSession, params: BrowserParams, ctx: ToolContext
    ) -> ToolResult:
        from tui.tools.builtin.browser.actions import HANDLERS, check_open_url

        timeout = params.timeout or self.action_timeout
        if params.action == "open" and params.url:
            check_open_url(params.url, session)  # refused before any browser starts
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await session.ready()
        except TimeoutError:
            session.abandon("the browser did not start in time")
            raise ExecutionFailed(
                f"Chromium did not start within {START_TIMEOUT:g}s; try again"
            ) from None
        handler = HANDLERS[params.action]
        what = f"{params.action} {params.target() or params.url or ''}".strip()
        outcome = await session.run(
            lambda: handler(session, params, ctx.tool_call_id), timeout, what
        )
        notes = session.take_notes()
        text = outcome.text
        if notes:
            text += "\n\n" + "\n".join(f"[browser] {note}" for note in notes)
        details = {"action": params.action, **outcome.details}
        return ToolResult(text, details)


def _local_workspace(ctx: ToolContext) -> Path | None:
    try:
        return ctx.workspace
    except AttributeError:
        return None


def _with_notes(error: ToolError, notes: list[str]) -> ToolError:
    """The same error, with what the browser noticed meanwhile (blocked requests above all:
    they are usually why a navigation failed)."""
    if not notes:
        return error
    kind = type(error)
    if kind not in (ExecutionFailed, PermissionDenied, InvalidArguments, NotFound):
        kind = ExecutionFailed
    return kind(str(error) + "\n" + "\n".join(f"[browser] {note}" for note in notes))


def browser_tools() -> list[BrowserTool]:
    return [BrowserTool()]


__all__ = ["BrowserTool", "browser_tools"]

"""``[tools]``, ``[web]``, ``[browser]`` and ``[cron]``: which built-in tools are on and what they
reach."""

from __future__ import annotations

from pydantic import BaseModel, Field, RootModel

from tui.config.sections import SECTION, HttpUrl


class ToolsSettings(RootModel[dict[str, bool]]):
    """Per-tool switches, keyed by tool name.

    Names are not checked against the built-in set: MCP servers add tools later, and a switch
    for a tool that is not there is harmless.
    """

    root: dict[str, bool] = Field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        """A tool is on unless switched off explicitly."""
        return self.root.get(name, True)

    def disabled(self) -> list[str]:
        return sorted(name for name, on in self.root.items() if not on)


class WebSettings(BaseModel):
    """Where web_search sends queries."""

    model_config = SECTION

    search_url: HttpUrl | None = None
    """A SearXNG instance's search URL (its JSON API is used), e.g.
    ``http://127.0.0.1:8888/search``; unset uses DuckDuckGo's HTML endpoint."""


class BrowserSettings(BaseModel):
    """The ``browser`` tool's headless Chromium. Where it may connect is ``[security]``'s
    allowed_hosts and blocked_hosts, as for the web tools."""

    model_config = SECTION

    executable: str | None = None
    """The Chromium to run: a path, or a name looked up on PATH (never in the workspace). Unset
    tries ``chromium``, ``chromium-browser``, ``google-chrome-stable``, ``google-chrome``."""
    allow_downloads: bool = False
    """Let a page download files (saved under the tool output folder, the result names them);
    off, every download is refused and the result says so."""
    allow_file_urls: bool = False
    """Let the browser open ``file://`` pages, each path judged by ``[security]``'s path rules
    as a read; off, every ``file://`` request is refused."""
    action_timeout: float = Field(default=30, gt=0, le=600)
    """Seconds an action waits when the call gives no ``timeout``."""


class CronSettings(BaseModel):
    """Jobs scheduled with ``cron_add``: run by the app while it is open."""

    model_config = SECTION

    enabled: bool = True
    """Run due jobs; off keeps them stored but idle."""
    command_timeout: float = Field(default=600, gt=0)
    """Seconds a scheduled shell command may run."""

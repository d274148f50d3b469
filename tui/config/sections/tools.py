"""``[tools]``, ``[web]`` and ``[cron]``: which built-in tools are on and what they reach."""

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


class CronSettings(BaseModel):
    """Jobs scheduled with ``cron_add``: run by the app while it is open."""

    model_config = SECTION

    enabled: bool = True
    """Run due jobs; off keeps them stored but idle."""
    command_timeout: float = Field(default=600, gt=0)
    """Seconds a scheduled shell command may run."""

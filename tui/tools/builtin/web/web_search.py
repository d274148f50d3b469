"""``web_search``: titles, URLs and snippets from DuckDuckGo or a configured SearXNG.

DuckDuckGo answers HTML (two layouts, both parsed here, and a bot challenge that is reported
as rate limiting); a SearXNG instance is asked for JSON. Either way the model gets the same
numbered list and reads a result with ``fetch_url``.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from dataclasses import dataclass
from html.parser import HTMLParser

from pydantic import Field

from tui.errors import ExecutionFailed
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.web.request import charset_of, send_request, status_error
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult

DEFAULT_SEARCH_URL = "https://html.duckduckgo.com/html/"
SEARCH_URL_ENV = "AGENT_TUI_SEARCH_URL"


@dataclass
class SearchResult:
    title: str
    url: str
    snippet: str


def _classes(attrs: list[tuple[str, str | None]]) -> set[str]:
    for key, value in attrs:
        if key == "class" and value:
            return set(value.split())
    return set()


def unwrap_ddg_url(href: str) -> str:
    """The target of a ``//duckduckgo.com/l/?uddg=`` redirect; other URLs unchanged."""
    parsed = urllib.parse.urlsplit(href)
    if parsed.path.startswith("/l/") and "duckduckgo.com" in (parsed.netloc or "duckduckgo.com"):
        target = urllib.parse.parse_qs(parsed.query).get("uddg")
        if target:
            return target[0]
    if href.startswith("//"):
        return "https:" + href
    return href


class _DdgParser(HTMLParser):
    """Both layouts: html (``a.result__a`` + ``a.result__snippet``) and lite
    (``a.result-link`` rows followed by ``td.result-snippet``)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.results: list[SearchResult] = []
        self.lite: list[SearchResult] = []
        self.no_results = False
        self._capture: str | None = None  # "title", "snippet", "lite_title", "lite_snippet"
        self._capture_tag = ""
        self._depth = 0
        self._buffer: list[str] = []
        self._href = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = _classes(attrs)
        if "no-results" in classes or "result--no-result" in classes:
            self.no_results = True
        if self._capture:
            if tag == self._capture_tag:
                self._depth += 1
            return
        kind = None
        if tag == "a" and "result__a" in classes:
            kind = "title"
        elif "result__snippet" in classes:
            kind = "snippet"
        elif tag == "a" and "result-link" in classes:
            kind = "lite_title"
        elif tag == "td" and "result-snippet" in classes:
            kind = "lite_snippet"
        if kind:
            self._capture, self._capture_tag, self._depth = kind, tag, 1
            self._buffer = []
            self._href = dict(attrs).get("href") or ""

    def handle_endtag(self, tag: str) -> None:
        if not self._capture or tag != self._capture_tag:
            return
        self._depth -= 1
        if self._depth > 0:
            return
        text = re.sub(r"\s+", " ", "".join(self._buffer)).strip()
        kind, self._capture = self._capture, None
        if kind == "title":
            self.results.append(SearchResult(text, unwrap_ddg_url(self._href), ""))
        elif kind == "snippet" and self.results and not self.results[-1].snippet:
            self.results[-1].snippet = text
        elif kind == "lite_title":
            self.lite.append(SearchResult(text, unwrap_ddg_url(self._href), ""))
        elif kind == "lite_snippet" and self.lite and not self.lite[-1].snippet:
            self.lite[-1].snippet = text

    def handle_data(self, data: str) -> None:
        if self._capture:
            self._buffer.append(data)


def is_anomaly_page(status: int, html: str) -> bool:
    return status == 202 or bool(re.search(r"anomaly|challenge-form", html[:200_000], re.I))


def parse_search_results(html: str) -> list[SearchResult]:
    """Results from a DuckDuckGo page (html layout first, lite layout as the fallback)."""
    parser = _DdgParser()
    try:
        parser.feed(html)
        parser.close()
    except Exception:
        pass
    results = parser.results or parser.lite
    if parser.no_results:
        # The "EOF" pseudo-result DuckDuckGo shows before "no results" is not a result.
        results = [r for r in results if "google.com/search" not in r.url and r.title != "EOF"]
    return [r for r in results if r.title and r.url]


class WebSearchParams(ToolParams):
    query: str = Field(min_length=1, max_length=500, description="What to search for.")
    max_results: int = Field(default=8, ge=1, le=8, description="How many results (1-8).")


class WebSearchTool(Tool[WebSearchParams]):
    name = "web_search"
    label = "Web search"
    Params = WebSearchParams
    permission = PermissionMode.READ_ONLY
    description = """Search the web (DuckDuckGo) and return titles, URLs and snippets.

When to use: finding documentation, error messages, release notes, or any page you do not
have a URL for yet.
When NOT to use: when you already know the URL (use fetch_url); for code in the workspace
(use the file search tools).
Disambiguation: returns only result summaries; read a result with fetch_url. The engine is
DuckDuckGo unless the person configured another (a SearXNG instance).
Examples: {"query": "httpx AsyncClient follow_redirects"};
{"query": "python 3.12 release notes", "max_results": 3}"""

    def __init__(self, search_url: str | None = None) -> None:
        self.search_url = search_url
        """``[web] search_url``; unset falls back to ``AGENT_TUI_SEARCH_URL``, then DuckDuckGo."""

    def endpoint(self) -> str:
        return self.search_url or os.environ.get(SEARCH_URL_ENV) or DEFAULT_SEARCH_URL

    def access(self, params: WebSearchParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY, subject=self.endpoint())

    async def execute(self, params: WebSearchParams, ctx: ToolContext) -> ToolResult:
        endpoint = self.endpoint()
        form = {"q": params.query, "b": ""}
        if not _is_duckduckgo(endpoint):
            # SearXNG answers JSON when asked; an HTML-only endpoint ignores the field.
            form = {"q": params.query, "format": "json"}
        fetched = await send_request(
            "POST",
            endpoint,
            timeout=20,
            data=form,
            headers={"Accept": "application/json, text/html;q=0.9"},
            hosts=ctx.policy.hosts,
        )
        html = fetched.body.decode(charset_of(fetched.headers), errors="replace")
        if fetched.headers.get("content-type", "").startswith("application/json"):
            if not 200 <= fetched.status < 300:
                raise status_error(fetched)
            return _result_text(params.query, parse_searxng_results(html)[: params.max_results])
        if is_anomaly_page(fetched.status, html):
            raise ExecutionFailed(
                f"the search was rate-limited: DuckDuckGo answered with a bot challenge "
                f"(HTTP {fetched.status}); wait a while before searching again, or fetch a "
                "known URL with fetch_url"
            )
        if not 200 <= fetched.status < 300:
            raise status_error(fetched)
        return _result_text(params.query, parse_search_results(html)[: params.max_results])


def _result_text(query: str, results: list[SearchResult]) -> ToolResult:
    if not results:
        return ToolResult(f"No results for {query!r}.", {"count": 0})
    blocks = [
        f"{i}. {r.title}\n   {r.url}" + (f"\n   {r.snippet}" if r.snippet else "")
        for i, r in enumerate(results, 1)
    ]
    return ToolResult(
        f"Results for {query!r}:\n\n" + "\n\n".join(blocks),
        {"count": len(results), "urls": [r.url for r in results]},
    )


def _is_duckduckgo(url: str) -> bool:
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    return host == "duckduckgo.com" or host.endswith(".duckduckgo.com")


def parse_searxng_results(text: str) -> list[SearchResult]:
    """Results from a SearXNG ``format=json`` answer; anything malformed is skipped."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    items = data.get("results") if isinstance(data, dict) else None
    results: list[SearchResult] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        title, url = item.get("title"), item.get("url")
        if not (isinstance(title, str) and isinstance(url, str) and title.strip()):
            continue
        content = item.get("content")
        snippet = " ".join(content.split()) if isinstance(content, str) else ""
        results.append(SearchResult(" ".join(title.split()), url, snippet))
    return results

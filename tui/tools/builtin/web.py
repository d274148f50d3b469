"""``fetch_url``, ``http_request``, ``web_search``: reading the web without a browser.

Every call opens its own ``httpx.AsyncClient``; bodies are streamed and capped at
``MAX_BODY_BYTES`` so a huge download never fills memory. HTML is turned into readable text
with the stdlib parser, JSON is pretty-printed, other text is kept, binaries are refused.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Literal

import httpx
from pydantic import Field

from tui.errors import ExecutionFailed, InvalidArguments
from tui.security.hosts import HostPolicy
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.context import ToolContext
from tui.tools.netguard import guarded_client
from tui.tools.result import ToolResult

MAX_BODY_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
CONNECT_TIMEOUT = 10.0
USER_AGENT = "agent-tui/0.1 (+https://github.com)"
DEFAULT_SEARCH_URL = "https://html.duckduckgo.com/html/"
SEARCH_URL_ENV = "AGENT_TUI_SEARCH_URL"

# ---------------------------------------------------------------------------- fetching


@dataclass
class Fetched:
    status: int
    reason: str
    url: str
    headers: httpx.Headers
    body: bytes
    cut: bool


def _check_url(url: str) -> str:
    url = url.strip()
    try:
        parsed = urllib.parse.urlsplit(url)
    except ValueError:
        raise InvalidArguments(f"not a valid URL: {url!r}") from None
    if parsed.scheme.lower() not in ("http", "https"):
        raise InvalidArguments(f"only http:// and https:// URLs are supported, got {url!r}")
    if not parsed.hostname:
        raise InvalidArguments(f"URL has no host: {url!r}")
    return url


async def _request(
    method: str,
    url: str,
    *,
    timeout: float,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
    data: dict[str, str] | None = None,
    hosts: HostPolicy,
) -> Fetched:
    """Send one request, following redirects, reading at most ``MAX_BODY_BYTES``.

    ``hosts`` judges every request sent, redirects included: first on its URL (an early,
    clear refusal), then on the very addresses its connection dials (``netguard``).
    """
    url = _check_url(url)
    hosts.check(url)  # before httpx, which refuses some spellings (0177.0.0.1) less clearly

    async def judge(request: httpx.Request) -> None:
        hosts.check(str(request.url))

    limits = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))
    all_headers = {"User-Agent": USER_AGENT, **(headers or {})}
    try:
        async with (
            await guarded_client(
                hosts,
                follow_redirects=True,
                max_redirects=MAX_REDIRECTS,
                timeout=limits,
                event_hooks={"request": [judge]},
            ) as client,
            client.stream(method, url, headers=all_headers, content=content, data=data) as response,
        ):
            chunks: list[bytes] = []
            size = 0
            cut = False
            async for chunk in response.aiter_bytes():
                if size + len(chunk) > MAX_BODY_BYTES:
                    chunks.append(chunk[: MAX_BODY_BYTES - size])
                    cut = True
                    break
                chunks.append(chunk)
                size += len(chunk)
            return Fetched(
                response.status_code,
                response.reason_phrase,
                str(response.url),
                response.headers,
                b"".join(chunks),
                cut,
            )
    except httpx.TooManyRedirects:
        raise ExecutionFailed(f"too many redirects (more than {MAX_REDIRECTS}) for {url}") from None
    except httpx.TimeoutException as exc:
        raise ExecutionFailed(
            f"timed out after {timeout:g}s fetching {url} ({type(exc).__name__})"
        ) from None
    except httpx.ConnectError as exc:
        raise ExecutionFailed(f"could not connect to {url}: {exc or type(exc).__name__}") from None
    except httpx.InvalidURL as exc:
        raise InvalidArguments(f"not a valid URL: {url!r} ({exc})") from None
    except (httpx.HTTPError, httpx.StreamError) as exc:
        raise ExecutionFailed(f"request to {url} failed: {type(exc).__name__}: {exc}") from None
    except (ValueError, UnicodeError) as exc:
        raise InvalidArguments(f"bad request for {url!r}: {exc}") from None


def _charset(headers: httpx.Headers) -> str:
    match = re.search(r"charset=[\"']?([\w.:-]+)", headers.get("content-type", ""), re.I)
    if match:
        try:
            "".encode(match.group(1))
            return match.group(1)
        except LookupError:
            pass
    return "utf-8"


def _is_text_type(mime: str) -> bool:
    return (
        mime.startswith("text/")
        or mime.endswith(("+json", "+xml", "/json", "/xml"))
        or mime in ("application/javascript", "application/x-javascript", "application/ecmascript")
        or mime in ("application/x-www-form-urlencoded", "application/x-ndjson", "application/yaml")
    )


def _looks_binary(body: bytes) -> bool:
    return b"\x00" in body[:4096]


def decode_body(fetched: Fetched) -> str:
    """The body as text for the model, or ExecutionFailed for a binary content type."""
    content_type = fetched.headers.get("content-type", "")
    mime = content_type.split(";")[0].strip().lower()
    if not fetched.body:
        text = ""
    elif (mime and not _is_text_type(mime)) or (not mime and _looks_binary(fetched.body)):
        size = len(fetched.body)
        more = "+ (cut)" if fetched.cut else ""
        raise ExecutionFailed(
            f"refusing binary content: {content_type or 'unknown type'}, {size}{more} bytes "
            f"from {fetched.url}; only HTML, JSON and text are read"
        )
    else:
        raw = fetched.body.decode(_charset(fetched.headers), errors="replace")
        if mime in ("text/html", "application/xhtml+xml") or (
            not mime and raw.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
        ):
            text = html_to_text(raw)
        elif mime.endswith("json") and not fetched.cut:
            try:
                text = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
            except ValueError:
                text = raw
        else:
            text = raw
    if fetched.cut:
        text = (
            f"[body cut at the {MAX_BODY_BYTES // (1024 * 1024)} MB download limit; "
            "the rest was not read]\n" + text
        )
    return text


# ---------------------------------------------------------------------------- HTML to text

_SKIP = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCK = {
    "p", "div", "section", "article", "header", "footer", "nav", "main", "aside", "form",
    "table", "tr", "ul", "ol", "dl", "dt", "dd", "blockquote", "pre", "hr", "br", "figure",
    "h1", "h2", "h3", "h4", "h5", "h6", "li", "title", "td", "th",
}  # fmt: skip
_VOID = {
    "br",
    "hr",
    "img",
    "input",
    "meta",
    "link",
    "area",
    "base",
    "col",
    "embed",
    "source",
    "wbr",
}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_depth = 0
        self.pre_depth = 0
        self.title: str | None = None
        self._in_title = False
        self._href: str | None = None
        self._link_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self.skip_depth <= 1:
            self._in_title = True
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip_depth += 1
            return
        if self.skip_depth:
            return
        if tag in _BLOCK:
            self.parts.append("\n")
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self.parts.append("- ")
        elif tag == "pre":
            self.pre_depth += 1
        elif tag == "a":
            self._href = dict(attrs).get("href")
            self._link_text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if self.skip_depth:
            return
        if tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
        if tag == "a" and self._href:
            text = "".join(self._link_text).strip()
            href = self._href
            if text and href and not href.startswith(("#", "javascript:")) and href != text:
                self.parts.append(f" [{href}]")
            self._href = None
        if tag in _BLOCK and tag not in ("li", "td", "th", "dd", "dt"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = (self.title or "") + data
        if self.skip_depth:
            return
        if not self.pre_depth:
            data = re.sub(r"\s+", " ", data)
        self.parts.append(data)
        if self._href is not None:
            self._link_text.append(data)


def html_to_text(html: str) -> str:
    """Readable text from HTML: no scripts or styles, line breaks at block elements."""
    parser = _TextExtractor()
    try:
        parser.feed(html)
        parser.close()
    except Exception:
        pass
    text = "".join(parser.parts)
    lines = [line.strip() if "\t" not in line else line.rstrip() for line in text.split("\n")]
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = (parser.title or "").strip()
    if title and not out.startswith(title):
        out = f"Title: {title}\n\n{out}"
    return out


def _excerpt(fetched: Fetched, limit: int = 500) -> str:
    try:
        text = decode_body(Fetched(**{**fetched.__dict__, "cut": False}))
    except ExecutionFailed:
        return ""
    text = text.strip()
    return text[:limit] + ("…" if len(text) > limit else "")


def _status_error(fetched: Fetched) -> ExecutionFailed:
    excerpt = _excerpt(fetched)
    message = f"HTTP {fetched.status} {fetched.reason} from {fetched.url}"
    return ExecutionFailed(message + (f"\n{excerpt}" if excerpt else ""))


# ---------------------------------------------------------------------------- fetch_url


class FetchUrlParams(ToolParams):
    url: str = Field(description="The http:// or https:// URL to GET.")
    timeout: float = Field(
        default=20, gt=0, le=120, description="Seconds before giving up (default 20, max 120)."
    )


class FetchUrlTool(Tool[FetchUrlParams]):
    name = "fetch_url"
    label = "Fetch URL"
    Params = FetchUrlParams
    permission = PermissionMode.READ_ONLY
    description = """GET a web page or API URL and return it as readable text.

HTML becomes plain text (scripts and styles dropped, links kept as [href]), JSON is
pretty-printed, other text is returned as is. Binary content (images, PDFs, archives) is
refused. Redirects are followed (at most 5); bodies over 5 MB are cut.
When to use: reading documentation, a README, an issue, a JSON API response you have a URL for.
When NOT to use: to find pages (use web_search); to send data or use other methods (use
http_request); to download files into the workspace (use run_shell with curl).
Disambiguation: fetch_url is GET-only and sends no credentials; http_request sets method,
headers and body and shows the status line and headers.
Examples: {"url": "https://docs.python.org/3/library/json.html"};
{"url": "https://api.github.com/repos/python/cpython", "timeout": 10}"""

    def access(self, params: FetchUrlParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY, subject=params.url)

    async def execute(self, params: FetchUrlParams, ctx: ToolContext) -> ToolResult:
        fetched = await _request("GET", params.url, timeout=params.timeout, hosts=ctx.policy.hosts)
        if not 200 <= fetched.status < 300:
            raise _status_error(fetched)
        text = decode_body(fetched)
        header = f"{fetched.url} ({fetched.headers.get('content-type', 'unknown type')})\n\n"
        return ToolResult(
            header + text,
            {"status": fetched.status, "url": fetched.url, "bytes": len(fetched.body)},
        )


# ---------------------------------------------------------------------------- http_request

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]


class HttpRequestParams(ToolParams):
    method: Method = Field(default="GET", description="HTTP method.")
    url: str = Field(description="The http:// or https:// URL.")
    headers: dict[str, str] = Field(
        default_factory=dict, description='Request headers, e.g. {"Accept": "application/json"}.'
    )
    body: str | None = Field(default=None, description="Request body, sent as UTF-8.")
    timeout: float = Field(
        default=20, gt=0, le=120, description="Seconds before giving up (default 20, max 120)."
    )


class HttpRequestTool(Tool[HttpRequestParams]):
    name = "http_request"
    label = "HTTP request"
    Params = HttpRequestParams
    permission = PermissionMode.WORKSPACE_WRITE
    description = """Send one HTTP request and return the status line, response headers and body.

The body is decoded like fetch_url (HTML to text, JSON pretty-printed, binary refused).
Redirects are followed (at most 5). A non-2xx status is returned as a normal result.
When to use: testing a local dev server or an API endpoint, POSTing JSON, checking headers
or status codes.
When NOT to use: just reading a page (use fetch_url); searching (use web_search).
Disambiguation: GET and HEAD are read-only; POST, PUT, PATCH and DELETE change remote state
and need write permission. Hosts outside [security] allowed_hosts, or in blocked_hosts, are
refused (redirects included).
Examples: {"method": "GET", "url": "http://localhost:8000/health"};
{"method": "POST", "url": "http://localhost:8000/api/items",
"headers": {"Content-Type": "application/json"}, "body": "{\\"name\\": \\"x\\"}"}"""

    def access(self, params: HttpRequestParams) -> ToolAccess:
        if params.method in ("GET", "HEAD"):
            return ToolAccess(permission=PermissionMode.READ_ONLY, subject=params.url)
        return ToolAccess(
            permission=PermissionMode.WORKSPACE_WRITE, subject=params.url, acting=True
        )

    async def execute(self, params: HttpRequestParams, ctx: ToolContext) -> ToolResult:
        content = params.body.encode("utf-8", errors="replace") if params.body is not None else None
        fetched = await _request(
            params.method,
            params.url,
            timeout=params.timeout,
            headers=params.headers,
            content=content,
            hosts=ctx.policy.hosts,
        )
        lines = [f"HTTP {fetched.status} {fetched.reason}".rstrip(), f"URL: {fetched.url}"]
        lines += [f"{key}: {value}" for key, value in fetched.headers.items()]
        try:
            body = decode_body(fetched)
        except ExecutionFailed as exc:
            body = f"[{exc}]"
        text = "\n".join(lines) + "\n\n" + body
        return ToolResult(text, {"status": fetched.status, "url": fetched.url})


# ---------------------------------------------------------------------------- web_search


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
        fetched = await _request(
            "POST",
            endpoint,
            timeout=20,
            data=form,
            headers={"Accept": "application/json, text/html;q=0.9"},
            hosts=ctx.policy.hosts,
        )
        html = fetched.body.decode(_charset(fetched.headers), errors="replace")
        if fetched.headers.get("content-type", "").startswith("application/json"):
            if not 200 <= fetched.status < 300:
                raise _status_error(fetched)
            return _result_text(params.query, parse_searxng_results(html)[: params.max_results])
        if is_anomaly_page(fetched.status, html):
            raise ExecutionFailed(
                f"the search was rate-limited: DuckDuckGo answered with a bot challenge "
                f"(HTTP {fetched.status}); wait a while before searching again, or fetch a "
                "known URL with fetch_url"
            )
        if not 200 <= fetched.status < 300:
            raise _status_error(fetched)
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


def web_tools() -> list[Tool[Any]]:
    return [FetchUrlTool(), HttpRequestTool(), WebSearchTool()]

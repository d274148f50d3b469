"""``fetch_url`` and ``http_request``: reading the web without a browser.

Both send one request through ``request`` (guarded client, capped body) and return the
body as text; ``fetch_url`` is a plain GET that fails on a non-2xx status, ``http_request``
sets method, headers and body and shows the status line and headers whatever the status.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tui.errors import ExecutionFailed
from tui.security.permissions import PermissionMode
from tui.tools.base import Tool, ToolAccess, ToolParams
from tui.tools.builtin.web.request import decode_body, send_request, status_error
from tui.tools.builtin.web.web_search import WebSearchTool
from tui.tools.context import ToolContext
from tui.tools.result import ToolResult


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
        fetched = await send_request(
            "GET", params.url, timeout=params.timeout, hosts=ctx.policy.hosts
        )
        if not 200 <= fetched.status < 300:
            raise status_error(fetched)
        text = decode_body(fetched)
        header = f"{fetched.url} ({fetched.headers.get('content-type', 'unknown type')})\n\n"
        return ToolResult(
            header + text,
            {"status": fetched.status, "url": fetched.url, "bytes": len(fetched.body)},
        )


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
        fetched = await send_request(
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


def web_tools() -> list[Tool[Any]]:
    return [FetchUrlTool(), HttpRequestTool(), WebSearchTool()]

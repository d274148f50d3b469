"""A response as the model reads it: a status line, the content type, the body rendered.

JSON is pretty-printed, HTML becomes text, a binary body is described rather than shown, and
text past ``max_response_chars`` is cut with a marker (the whole of what was read saved to a
file). A status outside 2xx makes the result an error the model sees as ``HttpStatus``.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from tui.tools.adapters.openapi.auth import redact
from tui.tools.adapters.openapi.exchange import HttpResponse
from tui.tools.adapters.openapi.request import HttpRequest
from tui.tools.html_text import html_to_text
from tui.tools.result import ToolResult
from tui.tools.truncation import save_full_output


async def response_result(
    response: HttpResponse,
    request: HttpRequest,
    *,
    tool_name: str,
    path: str,
    limit: int,
    secrets: list[str],
) -> ToolResult:
    """The tool result for ``response`` to ``request`` (``path`` is the operation's template).

    Args:
        limit: Characters of the rendered body shown at most.
    """
    status, headers = response.status, response.headers
    content_type = headers.get("content-type", "")
    text = render_body(response.body, content_type, cut=response.cut)
    text = redact(text, secrets)
    details: dict[str, Any] = {
        "status": status,
        "method": request.method,
        "url": request.url,
        "bytes": len(response.body),
        "truncated_chars": 0,
    }
    notes: list[str] = []
    if response.cut:
        length = headers.get("content-length")
        total = f" of {length}" if length and length.isdigit() else ""
        notes.append(
            f"[download stopped after {response.cap} bytes{total}; the rest of the response "
            "was not read]"
        )
        details["download_cut"] = True
    if len(text) > limit:
        missing = len(text) - limit
        saved = await asyncio.to_thread(save_full_output, f"{tool_name}-{status}-{len(text)}", text)
        where = f"; the {len(text)} characters read are saved to {saved}" if saved else ""
        text = text[:limit]
        notes.append(f"[response cut at {limit} characters: {missing} more not shown{where}]")
        details["truncated_chars"] = missing
        if saved:
            details["full_output_path"] = saved
    lines = [f"HTTP {status} {response.reason}".rstrip()]
    lines.append(f"Content-Type: {content_type or '(none)'}")
    location = headers.get("location")
    if location:
        lines.append(f"Location: {redact(location, secrets)}")
    rendered = "\n".join(lines) + "\n\n" + text + "".join("\n" + note for note in notes)
    if 200 <= status < 300:
        return ToolResult(rendered, details)
    return ToolResult(
        f"Error (HttpStatus): {request.method} {path} answered {rendered}",
        {**details, "error_type": "HttpStatus"},
        is_error=True,
    )


def _is_text(mime: str) -> bool:
    return (
        mime.startswith("text/")
        or mime.endswith(("+json", "+xml", "/json", "/xml"))
        or mime
        in (
            "application/javascript",
            "application/x-www-form-urlencoded",
            "application/x-ndjson",
            "application/yaml",
            "application/problem+json",
        )
    )


def render_body(body: bytes, content_type: str, *, cut: bool) -> str:
    """``body`` as text for the model, decoded by its charset and shaped by its type."""
    if not body:
        return "(empty body)"
    mime = content_type.split(";")[0].strip().lower()
    if (mime and not _is_text(mime)) or (not mime and b"\x00" in body[:4096]):
        more = "+" if cut else ""
        kind = content_type or "unknown type"
        return f"[binary body: {kind}, {len(body)}{more} bytes, not shown]"
    match = re.search(r"charset=[\"']?([\w.:-]+)", content_type, re.IGNORECASE)
    charset = match.group(1) if match else "utf-8"
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if mime.endswith("json") and not cut:
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            return text
    if mime in ("text/html", "application/xhtml+xml"):
        return html_to_text(text)
    return text

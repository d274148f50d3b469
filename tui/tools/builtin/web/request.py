"""One HTTP request for the web tools, and its body as text a model can read.

Every call opens its own client from ``netguard`` (each connection judged by ``[security]``
hosts), follows at most ``MAX_REDIRECTS`` redirects, and streams the body, stopping at
``MAX_BODY_BYTES`` so a huge download never fills memory. HTML becomes text, JSON is
pretty-printed, other text is kept, binaries are refused.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass

import httpx2 as httpx

from tui.errors import ExecutionFailed, InvalidArguments
from tui.security.hosts import HostPolicy
from tui.tools.html_text import html_to_text
from tui.tools.netguard import USER_AGENT, guarded_client

MAX_BODY_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
CONNECT_TIMEOUT = 10.0


@dataclass
class Fetched:
    status: int
    reason: str
    url: str
    headers: httpx.Headers
    body: bytes
    cut: bool


def check_url(url: str) -> str:
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


async def send_request(
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
    url = check_url(url)
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


def charset_of(headers: httpx.Headers) -> str:
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
        raw = fetched.body.decode(charset_of(fetched.headers), errors="replace")
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


def _excerpt(fetched: Fetched, limit: int = 500) -> str:
    try:
        text = decode_body(Fetched(**{**fetched.__dict__, "cut": False}))
    except ExecutionFailed:
        return ""
    text = text.strip()
    return text[:limit] + ("…" if len(text) > limit else "")


def status_error(fetched: Fetched) -> ExecutionFailed:
    excerpt = _excerpt(fetched)
    message = f"HTTP {fetched.status} {fetched.reason} from {fetched.url}"
    return ExecutionFailed(message + (f"\n{excerpt}" if excerpt else ""))

"""Every request the browser makes, judged by ``[security]`` hosts and sent by us, not Chromium.

Why the browser never touches the network itself:

* A check on a URL followed by a connection Chromium makes is the gap the web tools close
  (``tui/tools/netguard.py``): another spelling of an address, or DNS answering one thing to
  the check and another to the connection. So each request is intercepted in the browser
  (Playwright's ``route``, which is CDP's ``Fetch`` domain), sent here through the same guarded
  client as ``fetch_url`` (every address judged where the socket is opened), and the browser
  is *fulfilled* with the answer.
* Playwright's routes do not see redirects a browser follows by itself, nor WebSockets, so the
  browser is started with its proxy set to a port we hold bound and never listen on, loopback
  included (``launch``): whatever is not fulfilled here fails with a connection error
  and reaches nothing. Redirects are therefore followed here, each hop judged like the first:
  a navigation gets a tiny page that replaces itself with the next hop (so the address bar,
  relative links and history stay right, and the next hop comes back through this guard), a
  sub-resource is followed to its end and fulfilled with the final answer.
* ``file://`` is refused unless ``[browser] allow_file_urls`` is on, and then each path is
  judged by the path rules as a read; schemes that reach nothing (``data:``, ``blob:``,
  ``about:``) pass; every other scheme is refused.

Every refusal is kept (``refusals``) so the next result tells the model what was blocked and
why, in the words of the host policy.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import httpx2 as httpx

from tui.errors import PermissionDenied
from tui.security.hosts import HostPolicy
from tui.tools.netguard import guarded_client

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Route

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 25 * 1024 * 1024
"""A response larger than this is refused, not read into memory."""
MAX_REDIRECTS = 10
REQUEST_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10.0
MAX_REFUSALS = 50
"""Refusals kept between two results (a page may try hundreds of blocked trackers)."""
REDIRECT_CODES = (301, 302, 303, 307, 308)
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",  # the body is handed over whole, decoded: the browser counts it again
    "content-encoding",
}
_PASSING_SCHEMES = ("data", "blob", "about")

FileJudge = Callable[[str], None]
"""Raises PermissionDenied when a ``file://`` URL's path may not be read."""


@dataclass(frozen=True)
class Refusal:
    url: str
    reason: str


@dataclass(frozen=True)
class Answer:
    """One response, read whole, as the browser will be fulfilled with it."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class RequestGuard:
    """The route handler for one browser context."""

    hosts: HostPolicy
    judge_file: FileJudge | None = None
    """None: ``file://`` is refused outright."""
    context: BrowserContext | None = None
    """Whose cookies go with each request (set once the context exists)."""
    refusals: list[Refusal] = field(default_factory=list)
    dropped: int = 0
    """Refusals past ``MAX_REFUSALS`` since the last ``take_refusals``."""
    requests: int = 0
    replacing: set[str] = field(default_factory=set)
    """Navigation URLs last answered with a page standing in for a redirect: a page whose
    address is one of these is still on its way somewhere else."""
    statuses: dict[str, int] = field(default_factory=dict)
    """The HTTP status each navigation URL was last answered with (what ``open`` reports)."""
    _client: httpx.AsyncClient | None = None

    def settled(self, url: str) -> bool:
        """Whether a page at ``url`` has arrived (is not a redirect on its way)."""
        return url.partition("#")[0] not in self.replacing

    def _landed(self, url: str, status: int, *, replaced: bool) -> None:
        if len(self.statuses) > 1000:
            self.statuses.clear()
            self.replacing.clear()
        self.statuses[url] = status
        if replaced:
            self.replacing.add(url)
        else:
            self.replacing.discard(url)

    def take_refusals(self) -> tuple[list[Refusal], int]:
        """The refusals since the last call, and how many more were not kept."""
        taken, dropped = self.refusals, self.dropped
        self.refusals, self.dropped = [], 0
        return taken, dropped

    def refused(self, url: str, reason: str) -> None:
        if len(self.refusals) < MAX_REFUSALS:
            self.refusals.append(Refusal(url, reason))
        else:
            self.dropped += 1

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def handle(self, route: Route) -> None:
        """Judge one intercepted request and answer it; never leaves a route hanging."""
        self.requests += 1
        request = route.request
        url = request.url
        try:
            scheme = urlsplit(url).scheme.lower()
            if scheme in _PASSING_SCHEMES:
                await route.continue_()
                return
            if scheme == "file":
                await self._file(route, url)
                return
            if scheme not in ("http", "https"):
                self.refused(url, f"the {scheme}: scheme is not allowed in the browser")
                await route.abort("blockedbyclient")
                return
            await self._http(route)
        except PermissionDenied as refusal:
            self.refused(url, str(refusal))
            await _abort(route, "blockedbyclient")
        except Exception as error:  # a handler that raises would leave the page waiting
            log.debug("browser request %s failed", url, exc_info=True)
            await _abort(route, _abort_code(error))

    async def _file(self, route: Route, url: str) -> None:
        if self.judge_file is None:
            raise PermissionDenied(
                "file:// URLs are refused in the browser; [browser] allow_file_urls turns them on"
            )
        self.judge_file(url)
        await route.continue_()

    async def _http(self, route: Route) -> None:
        request = route.request
        navigation = request.is_navigation_request()
        method = request.method
        body = request.post_data_buffer
        url = request.url
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        kept_cookies: list[tuple[str, str]] = []
        for _ in range(MAX_REDIRECTS + 1):
            answer = await self.fetch(method, url, headers, body, first_party=navigation)
            location = _location(answer)
            if location is None:
                if navigation:
                    self._landed(request.url, answer.status, replaced=False)
                await self._fulfill(route, answer, kept_cookies)
                return
            target = urljoin(answer.url, location)
            if urlsplit(target).scheme.lower() not in ("http", "https"):
                raise PermissionDenied(f"{answer.url} redirects to {target!r}, not an http(s) URL")
            try:
                self.hosts.check(target)
            except PermissionDenied as refusal:
                raise PermissionDenied(f"its redirect to {target} was refused: {refusal}") from None
            keeps_method = answer.status in (307, 308) and method not in ("GET", "HEAD")
            if navigation and not keeps_method:
                self._landed(request.url, answer.status, replaced=True)
                await route.fulfill(
                    status=200,
                    headers=_joined([*_set_cookies(answer), ("content-type", "text/html")]),
                    body=_replacing_page(target),
                )
                return
            # A sub-resource (or a method-keeping redirect): follow it here, each hop judged.
            if urlsplit(target).hostname == urlsplit(request.url).hostname:
                kept_cookies += _set_cookies(answer)
            if not keeps_method:
                method, body = "GET", None
                headers.pop("content-type", None)
            url = target
        raise PermissionDenied(f"more than {MAX_REDIRECTS} redirects from {request.url}")

    async def fetch(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        *,
        first_party: bool,
    ) -> Answer:
        """One request through the guarded client, with the browser's cookies for ``url``.

        Raises:
            PermissionDenied: the host policy refuses the URL or an address it resolves to.
            httpx.HTTPError: the request failed.
        """
        self.hosts.check(url)
        sent = dict(headers)
        cookie = await self._cookie_header(url, first_party=first_party)
        if cookie:
            sent["cookie"] = cookie
        client = await self._ready_client()
        async with client.stream(method, url, headers=sent, content=body) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise PermissionDenied(
                        f"the response from {url} is over {MAX_BODY_BYTES // (1024 * 1024)} MB; "
                        "the browser does not load it"
                    )
                chunks.append(chunk)
            return Answer(
                str(response.url),
                response.status_code,
                list(response.headers.multi_items()),
                b"".join(chunks),
            )

    async def _ready_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = await guarded_client(
                self.hosts,
                follow_redirects=False,
                timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=CONNECT_TIMEOUT),
            )
        return self._client

    async def _cookie_header(self, url: str, *, first_party: bool) -> str:
        """The browser's cookies for ``url``: Chromium adds them after interception, so a
        request we send ourselves must carry them. ``SameSite`` is honoured loosely: on a
        sub-resource only ``None`` cookies travel, so a page cannot borrow another site's
        session; a navigation carries all."""
        if self.context is None:
            return ""
        cookies = await self.context.cookies([url])
        kept = [
            f"{c.get('name', '')}={c.get('value', '')}"
            for c in cookies
            if first_party or c.get("sameSite") == "None"
        ]
        return "; ".join(kept)

    async def _fulfill(
        self, route: Route, answer: Answer, extra_cookies: list[tuple[str, str]]
    ) -> None:
        headers = [(k, v) for k, v in answer.headers if k.lower() not in _HOP_BY_HOP]
        await route.fulfill(
            status=answer.status, headers=_joined(headers + extra_cookies), body=answer.body
        )


def _location(answer: Answer) -> str | None:
    if answer.status not in REDIRECT_CODES:
        return None
    for key, value in answer.headers:
        if key.lower() == "location" and value.strip():
            return value.strip()
    return None


def _set_cookies(answer: Answer) -> list[tuple[str, str]]:
    return [(k, v) for k, v in answer.headers if k.lower() == "set-cookie"]


def _joined(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Playwright takes one value a name; repeated headers (``Set-Cookie``) join with a newline,
    which it splits again for the browser."""
    joined: dict[str, str] = {}
    for key, value in headers:
        name = key.lower()
        joined[name] = f"{joined[name]}\n{value}" if name in joined else value
    return joined


def _replacing_page(target: str) -> bytes:
    """A page standing in for a redirect: it replaces itself with ``target`` at once, so the
    browser asks for the next hop itself (through this guard) and history keeps no trace."""
    quoted = json.dumps(target).replace("</", "<\\/")
    page = f"<!doctype html><title>redirect</title><script>location.replace({quoted})</script>"
    return page.encode()


async def _abort(route: Route, code: str) -> None:
    try:
        await route.abort(code)
    except Exception:  # the page went away meanwhile: nothing is waiting for this request
        log.debug("could not abort a browser request", exc_info=True)


def _abort_code(error: Exception) -> str:
    if isinstance(error, httpx.TimeoutException):
        return "timedout"
    if isinstance(error, httpx.ConnectError | OSError):
        return "connectionrefused"
    return "failed"


__all__ = ["Answer", "FileJudge", "Refusal", "RequestGuard"]

"""fetch_url, http_request and web_search against a real loopback HTTP server."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest

from tests.conftest import Harness, make_harness
from tui.errors import PermissionDenied
from tui.security.hosts import HostPolicy
from tui.security.settings import SecuritySettings
from tui.tools.builtin.web.web_search import parse_search_results
from tui.tools.html_text import html_to_text

FIXTURES = Path(__file__).parent / "fixtures"

PAGE = b"""<!DOCTYPE html><html><head><title>Demo page</title>
<style>body { color: red }</style><script>var secret = "SCRIPT_CONTENT";</script></head>
<body><h1>Main heading</h1><p>First paragraph with a <a href="/next">link</a>.</p>
<noscript>NOSCRIPT_CONTENT</noscript><ul><li>one</li><li>two</li></ul></body></html>"""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/page":
            self._send(200, PAGE, "text/html; charset=utf-8")
        elif path == "/json":
            self._send(200, b'{"a":1,"b":[true,null]}', "application/json")
        elif path == "/text":
            self._send(200, b"plain  text\n", "text/plain")
        elif path == "/binary":
            self._send(200, bytes(range(256)) * 10, "image/png")
        elif path.startswith("/redirect/"):
            n = int(path.rsplit("/", 1)[1])
            target = "/text" if n == 0 else f"/redirect/{n - 1}"
            self._send(302, b"", "text/plain", Location=target)
        elif path.startswith("/away/"):
            # To the same server under another host name: localhost instead of 127.0.0.1.
            port = cast(tuple[str, int], self.server.server_address)[1]
            self._send(302, b"", "text/plain", Location=f"http://localhost:{port}/text")
        elif path.startswith("/to/"):
            # To another address of this machine, spelled as the path says.
            port = cast(tuple[str, int], self.server.server_address)[1]
            host = path.removeprefix("/to/")
            self._send(302, b"", "text/plain", Location=f"http://{host}:{port}/text")
        elif path == "/loop":
            self._send(302, b"", "text/plain", Location="/loop")
        elif path == "/missing":
            self._send(404, b"<html><body><p>No such page here</p></body></html>", "text/html")
        elif path == "/huge":
            size = 10 * 1024 * 1024
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            line = b"x" * 1023 + b"\n"
            try:
                for _ in range(size // 1024):
                    self.wfile.write(line)
            except OSError:
                pass
        elif path == "/malformed":
            body = b"<html><body><div><p>Unclosed <b>bold <a href='x'>link</div></span><<>>&bogus;"
            self._send(200, body + b"<script>never", "text/html")
        else:
            self._send(404, b"not found", "text/plain")

    def do_HEAD(self) -> None:
        self.do_GET()

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:
        body = self._body()
        path = self.path.split("?")[0]
        if path == "/echo":
            payload = {
                "method": self.command,
                "body": body.decode(),
                "x_test": self.headers.get("X-Test"),
            }
            self._send(201, json.dumps(payload).encode(), "application/json")
        elif path == "/searxng":
            # SearXNG's search endpoint: JSON when the form asks for it (a hand-written answer
            # in the shape SearXNG documents for format=json, with one malformed entry).
            form = urllib.parse.parse_qs(body.decode())
            if form.get("format") != ["json"]:
                self._send(200, b"<html>not json</html>", "text/html")
                return
            answer = {
                "query": form["q"][0],
                "number_of_results": 0,
                "results": [
                    {
                        "url": "https://docs.python.org/3/library/asyncio.html",
                        "title": "asyncio  —  Asynchronous I/O",
                        "content": "asyncio is a library\n to write concurrent code.",
                        "engine": "duckduckgo",
                        "score": 3.0,
                    },
                    {"url": 7, "title": None},
                    {"url": "https://example.org/q", "title": f"About {form['q'][0]}"},
                ],
                "answers": [],
                "suggestions": [],
            }
            self._send(200, json.dumps(answer).encode(), "application/json")
        elif path == "/searxng-broken":
            self._send(200, b'{"results": "nope"', "application/json")
        elif path.startswith("/search/"):
            name = path.removeprefix("/search/")
            status = 202 if "anomaly" in name else 200
            self._send(status, (FIXTURES / name).read_bytes(), "text/html; charset=utf-8")
        else:
            self._send(404, b"not found", "text/plain")

    do_PUT = do_POST


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def hung_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    sock.close()


async def test_html_page_becomes_text(harness: Harness, server: str) -> None:
    result = await harness.call("fetch_url", {"url": f"{server}/page"})
    assert not result.is_error, result.text
    assert "Main heading" in result.text and "First paragraph with a link" in result.text
    assert "SCRIPT_CONTENT" not in result.text and "color: red" not in result.text
    assert "NOSCRIPT_CONTENT" not in result.text
    assert "- one\n- two" in result.text
    assert "[/next]" in result.text


async def test_json_is_pretty_printed(harness: Harness, server: str) -> None:
    result = await harness.call("fetch_url", {"url": f"{server}/json"})
    assert not result.is_error
    assert '{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}' in result.text


async def test_binary_is_refused(harness: Harness, server: str) -> None:
    result = await harness.call("fetch_url", {"url": f"{server}/binary"})
    assert result.is_error
    assert "image/png" in result.text and "2560" in result.text


async def test_redirect_chain_is_followed(harness: Harness, server: str) -> None:
    result = await harness.call("fetch_url", {"url": f"{server}/redirect/3"})
    assert not result.is_error, result.text
    assert "plain  text" in result.text and "/text" in result.text


@pytest.mark.parametrize("path", ["/loop", "/redirect/9"])
async def test_too_many_redirects(harness: Harness, server: str, path: str) -> None:
    result = await harness.call("fetch_url", {"url": server + path})
    assert result.is_error and "too many redirects" in result.text


async def test_404_is_an_error_with_status(harness: Harness, server: str) -> None:
    result = await harness.call("fetch_url", {"url": f"{server}/missing"})
    assert result.is_error
    assert "404" in result.text and "No such page here" in result.text


async def test_hung_server_times_out(harness: Harness, hung_server: str) -> None:
    start = time.monotonic()
    result = await harness.call("fetch_url", {"url": hung_server, "timeout": 1})
    assert time.monotonic() - start < 5
    assert result.is_error and "timed out" in result.text


async def test_connection_refused_is_clear(harness: Harness) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    result = await harness.call("fetch_url", {"url": f"http://127.0.0.1:{port}/", "timeout": 2})
    assert result.is_error and "could not connect" in result.text


async def test_huge_response_is_cut(harness: Harness, server: str) -> None:
    result = await harness.call("fetch_url", {"url": f"{server}/huge", "timeout": 30})
    assert not result.is_error, result.text[:300]
    assert "download limit" in result.text
    assert "[truncated" in result.text
    assert len(result.text) < 20_000


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/", "nonsense", "http://"])
async def test_bad_urls_fail_fast(harness: Harness, url: str) -> None:
    start = time.monotonic()
    result = await harness.call("fetch_url", {"url": url})
    assert result.is_error and time.monotonic() - start < 1


async def test_malformed_html_does_not_crash(harness: Harness, server: str) -> None:
    result = await harness.call("fetch_url", {"url": f"{server}/malformed"})
    assert not result.is_error, result.text
    assert "Unclosed" in result.text and "never" not in result.text
    assert isinstance(html_to_text("<a href=<<<></div><p"), str)


async def test_http_request_post_echo(harness: Harness, server: str) -> None:
    result = await harness.call(
        "http_request",
        {
            "method": "POST",
            "url": f"{server}/echo",
            "headers": {"X-Test": "yes"},
            "body": "hello body",
        },
    )
    assert not result.is_error, result.text
    assert result.text.startswith("HTTP 201 Created")
    assert "content-type: application/json" in result.text.lower()
    assert '"body": "hello body"' in result.text and '"x_test": "yes"' in result.text


async def test_http_request_head_and_404(harness: Harness, server: str) -> None:
    head = await harness.call("http_request", {"method": "HEAD", "url": f"{server}/json"})
    assert head.text.startswith("HTTP 200")
    missing = await harness.call("http_request", {"url": f"{server}/missing"})
    assert not missing.is_error and missing.text.startswith("HTTP 404")


def test_http_request_access() -> None:
    from tui.security.permissions import PermissionMode
    from tui.tools.builtin.web.tools import HttpRequestParams, HttpRequestTool

    tool = HttpRequestTool()
    get = tool.access(HttpRequestParams(url="http://x/"))
    post = tool.access(HttpRequestParams(method="DELETE", url="http://x/"))
    assert get.permission is PermissionMode.READ_ONLY and not get.is_acting
    assert post.permission is PermissionMode.WORKSPACE_WRITE and post.is_acting
    assert get.subject == "http://x/"


async def search(
    harness: Harness, server: str, fixture: str, monkeypatch: pytest.MonkeyPatch, **args: object
) -> str:
    monkeypatch.setenv("AGENT_TUI_SEARCH_URL", f"{server}/search/{fixture}")
    result = await harness.call("web_search", {"query": "q", **args})
    return ("ERROR " if result.is_error else "") + result.text


async def test_search_html_layout(
    harness: Harness, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    html = (FIXTURES / "ddg_html_results_eino.html").read_text()
    assert len(parse_search_results(html)) == 10
    text = await search(harness, server, "ddg_html_results_eino.html", monkeypatch)
    assert not text.startswith("ERROR"), text
    assert "8. " in text and "9. " not in text
    assert "https://" in text
    fewer = await search(harness, server, "ddg_html_results_eino.html", monkeypatch, max_results=2)
    assert "2. " in fewer and "3. " not in fewer


async def test_search_lite_layout_unwraps_urls(
    harness: Harness, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = parse_search_results((FIXTURES / "ddg_lite_results_weather_sf.html").read_text())
    assert len(results) == 10
    assert all(r.url.startswith("http") and "duckduckgo.com/l/" not in r.url for r in results)
    assert all(r.snippet for r in results)
    text = await search(harness, server, "ddg_lite_results_weather_sf.html", monkeypatch)
    assert not text.startswith("ERROR"), text
    assert "uddg" not in text and "8. " in text


async def test_search_no_results(
    harness: Harness, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = await search(harness, server, "ddg_html_no_results_eof.html", monkeypatch)
    assert text.startswith("No results")


async def test_search_anomaly_is_rate_limited(
    harness: Harness, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = await search(harness, server, "ddg_lite_anomaly_202_trimmed.html", monkeypatch)
    assert text.startswith("ERROR") and "rate-limited" in text


async def test_searxng_json_results(workspace: Path, server: str) -> None:
    harness = make_harness(workspace)
    search = harness.registry.get("web_search")
    search.search_url = f"{server}/searxng"  # type: ignore[union-attr]
    result = await harness.call("web_search", {"query": "asyncio"})
    assert not result.is_error, result.text
    assert "1. asyncio — Asynchronous I/O\n   https://docs.python.org/3/library/asyncio.html" in (
        result.text
    )
    assert "asyncio is a library to write concurrent code." in result.text
    assert "2. About asyncio" in result.text and "3. " not in result.text
    search.search_url = f"{server}/searxng-broken"  # type: ignore[union-attr]
    broken = await harness.call("web_search", {"query": "asyncio"})
    assert broken.text.startswith("No results")


def test_search_url_comes_from_config(tmp_path: Path) -> None:
    from tui.config import load_settings
    from tui.wiring import build_session

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".agent-tui.toml").write_text('[web]\nsearch_url = "http://127.0.0.1:9/s"\n')
    session = build_session(workspace, load_settings(workspace, env={}, trust=True))
    tool = session._registry.get("web_search")
    assert tool is not None and tool.endpoint() == "http://127.0.0.1:9/s"  # type: ignore[attr-defined]
    session._transcript.close()


# ------------------------------------------------------------------ [security] host lists


def host_harness(workspace: Path, **lists: Any) -> Harness:
    return make_harness(workspace, settings=SecuritySettings(**lists))


async def test_allowed_hosts_refuses_unlisted_host(workspace: Path, server: str) -> None:
    harness = host_harness(workspace, allowed_hosts=["example.com"])
    result = await harness.call("http_request", {"url": f"{server}/text"})
    assert result.is_error and "allowed_hosts" in result.text and "127.0.0.1" in result.text


async def test_allowed_host_passes_and_covers_nothing_else(workspace: Path, server: str) -> None:
    harness = host_harness(workspace, allowed_hosts=["127.0.0.1"])
    result = await harness.call("fetch_url", {"url": f"{server}/text"})
    assert not result.is_error, result.text
    # Rules compare addresses: localhost is 127.0.0.1, so a redirect there stays allowed...
    assert not (await harness.call("fetch_url", {"url": f"{server}/away/1"})).is_error
    # ...while a redirect to another address is judged again, and refused.
    result = await harness.call("fetch_url", {"url": f"{server}/to/127.0.0.2"})
    assert result.is_error and "127.0.0.2" in result.text and "allowed_hosts" in result.text


async def test_blocked_host_wins_over_allowed(workspace: Path, server: str) -> None:
    harness = host_harness(workspace, allowed_hosts=["*"], blocked_hosts=["127.0.0.2"])
    assert not (await harness.call("fetch_url", {"url": f"{server}/text"})).is_error
    result = await harness.call("fetch_url", {"url": f"{server}/to/127.0.0.2"})
    assert result.is_error and "blocked_hosts" in result.text
    # A blocked name blocks the addresses it means: localhost is 127.0.0.1 in any spelling.
    harness = host_harness(workspace, allowed_hosts=["*"], blocked_hosts=["LOCALHOST."])
    for url in (f"{server}/text", f"{server}/away/1"):
        result = await harness.call("fetch_url", {"url": url})
        assert result.is_error and "blocked_hosts" in result.text and "127.0.0.1" in result.text


def test_host_patterns_cover_subdomains_only_on_label_boundaries() -> None:
    hosts = HostPolicy.from_lists(["example.com"], ["bad.example.com"])
    hosts.check("https://example.com/x")
    hosts.check("https://api.EXAMPLE.com./x")
    for refused in ("https://notexample.com/", "https://x.bad.example.com/", "file:///etc"):
        with pytest.raises(PermissionDenied):
            hosts.check(refused)

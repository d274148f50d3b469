"""Behind a corporate proxy: the environment's proxy and CA bundle, for web tools and providers.

Real sockets throughout: a recording HTTP proxy on loopback (``tests/proxy_support.py``), a TLS
server whose certificate a throwaway CA signed, the scripted model server. The host policy still
judges where a web call really goes, also when a proxy carries it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

from tests.conftest import make_harness
from tests.proxy_support import RecordingProxy, make_ca_and_server_cert
from tests.scripted_server import ScriptedServer
from tui.agent.providers.base import Completed, Message
from tui.agent.providers.factory import make_provider
from tui.security.settings import SecuritySettings
from tui.tools import tls
from tui.tools.netguard import proxy_for

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b"hello through the wire\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve(httpd: ThreadingHTTPServer) -> threading.Thread:
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return thread


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tls, "_context", None)  # built again from this test's environment
    yield
    tls._context = None


@pytest.fixture
def plain_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    serve(httpd)
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def proxy() -> Iterator[RecordingProxy]:
    with RecordingProxy() as running:
        yield running


def test_proxy_choice_reads_the_environment_as_curl_does() -> None:
    env = {"HTTPS_PROXY": "proxy.corp:3128", "http_proxy": "http://p:1", "NO_PROXY": ".internal"}
    assert proxy_for(httpx2.URL("https://api.example.com/x"), env) == "http://proxy.corp:3128"
    assert proxy_for(httpx2.URL("http://example.com/"), env) == "http://p:1"
    assert proxy_for(httpx2.URL("https://git.internal/"), env) is None
    assert proxy_for(httpx2.URL("https://a.git.internal/"), env) is None
    assert proxy_for(httpx2.URL("https://notinternal/"), env) == "http://proxy.corp:3128"
    assert proxy_for(httpx2.URL("https://x/"), {"ALL_PROXY": "http://all:9"}) == "http://all:9"
    assert (
        proxy_for(httpx2.URL("https://x/"), {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}) is None
    )
    assert proxy_for(httpx2.URL("https://x/"), {}) is None


async def test_fetch_goes_through_the_environments_proxy(
    workspace: Path, plain_server: str, proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    harness = make_harness(workspace, settings=SecuritySettings(allowed_hosts=["127.0.0.1"]))
    result = await harness.call("fetch_url", {"url": plain_server})
    assert not result.is_error, result.text
    assert "hello through the wire" in result.text
    assert proxy.seen == [f"GET {plain_server} HTTP/1.1"]


async def test_no_proxy_sends_the_host_directly(
    workspace: Path, plain_server: str, proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    result = await make_harness(workspace).call("fetch_url", {"url": plain_server})
    assert not result.is_error, result.text
    assert proxy.seen == []


async def test_the_host_policy_judges_the_destination_not_the_proxy(
    workspace: Path, plain_server: str, proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy (the person's choice) is dialled; where it would go is judged first, by
    address: a refused destination never reaches the proxy at all."""
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    blocked = make_harness(workspace, settings=SecuritySettings(blocked_hosts=["127.0.0.1"]))
    result = await blocked.call(
        "fetch_url", {"url": plain_server.replace("127.0.0.1", "localhost")}
    )
    assert result.is_error and "blocked_hosts" in result.text and "127.0.0.1" in result.text
    only_elsewhere = make_harness(
        workspace, settings=SecuritySettings(allowed_hosts=["example.com"])
    )
    result = await only_elsewhere.call("fetch_url", {"url": plain_server})
    assert result.is_error and "allowed_hosts" in result.text
    metadata = make_harness(workspace, settings=SecuritySettings(allowed_hosts=["*"]))
    result = await metadata.call("fetch_url", {"url": "http://169.254.169.254/latest/meta-data"})
    assert result.is_error
    assert proxy.seen == []


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    ca, context = make_ca_and_server_cert(tmp_path)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    serve(httpd)
    yield f"https://localhost:{httpd.server_address[1]}/", ca
    httpd.shutdown()
    httpd.server_close()


async def test_https_trusts_the_bundle_ssl_cert_file_names(
    workspace: Path, tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corporate root that is not in any public bundle: refused until the machine's CA
    setting names it, then trusted (the certificate still has to match the host)."""
    url, ca = tls_server
    harness = make_harness(workspace, settings=SecuritySettings(allowed_hosts=["127.0.0.1"]))
    refused = await harness.call("fetch_url", {"url": url})
    assert refused.is_error and "certificate" in refused.text.lower(), refused.text
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    tls._context = None
    result = await harness.call("fetch_url", {"url": url})
    assert not result.is_error, result.text
    assert "hello through the wire" in result.text


async def test_https_through_the_proxy_is_a_tunnel_to_the_judged_host(
    workspace: Path,
    tls_server: tuple[str, Path],
    proxy: RecordingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, ca = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    harness = make_harness(workspace, settings=SecuritySettings(allowed_hosts=["127.0.0.1"]))
    result = await harness.call("fetch_url", {"url": url})
    assert not result.is_error, result.text
    port = url.rsplit(":", 1)[1].strip("/")
    assert proxy.seen == [f"CONNECT localhost:{port} HTTP/1.1"]


async def test_providers_go_through_https_proxy_and_honour_no_proxy(
    proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedServer([{"text": "via the proxy"}, {"text": "direct"}]) as server:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        provider = make_provider("openai", "m", api_key="k", base_url=server.openai_base_url)
        try:
            answer = await first_text(provider)
        finally:
            await provider.aclose()
        assert answer == "via the proxy"
        assert proxy.seen == [f"POST {server.openai_base_url}/chat/completions HTTP/1.1"]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        provider = make_provider("openai", "m", api_key="k", base_url=server.openai_base_url)
        try:
            assert await first_text(provider) == "direct"
        finally:
            await provider.aclose()
        assert len(proxy.seen) == 1


async def first_text(provider: object) -> str:
    stream = provider.stream(  # type: ignore[attr-defined]
        system="s", messages=[Message(role="user", content="hi")], tools=[]
    )
    async for event in stream:
        if isinstance(event, Completed):
            return str(event.text)
    return ""

"""Behind a corporate proxy: the environment's proxy and CA bundle, for web tools and providers.

Real sockets throughout: a recording HTTP proxy on loopback (``tests/proxy_support.py``), a TLS
server whose certificate a throwaway CA signed, the scripted model server. The host policy still
judges where a web call really goes, also when a proxy carries it.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

from tests.conftest import make_harness
from tests.proxy_support import RecordingProxy, make_ca_and_server_cert
from tests.scripted_server import ScriptedServer
from tui.agent.providers.base import Completed, Message, ProviderError
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
    monkeypatch.setattr(tls, "_building", None)  # nor one started under another's
    yield
    tls._context = None
    tls._building = None


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


def test_tls_is_needed_for_https_or_an_https_proxy() -> None:
    assert tls.needs_tls("https://api.openai.com/v1", {})
    assert tls.needs_tls("HTTPS://api.example.com", {})
    assert not tls.needs_tls("http://127.0.0.1:11434/v1", {})
    assert not tls.needs_tls("http://127.0.0.1:11434/v1", {"http": "http://proxy:3128"})
    assert tls.needs_tls("http://127.0.0.1:11434/v1", {"http": "https://proxy:3128"})
    assert tls.needs_tls("http://127.0.0.1:11434/v1", {"all": "HTTPS://proxy:3128"})


async def test_a_plain_http_model_server_never_reads_the_ca_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server in plain http is reached without loading any CAs (a third of a bare
    request's start-up): SSL_CERT_FILE names a file that is no bundle, and nothing reads it."""
    not_a_bundle = tmp_path / "ca.pem"
    not_a_bundle.write_text("not a certificate\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(not_a_bundle))
    with ScriptedServer([{"text": "no TLS here"}]) as server:
        provider = make_provider("openai", "m", api_key="k", base_url=server.openai_base_url)
        try:
            assert await first_text(provider) == "no TLS here"
        finally:
            await provider.aclose()


async def test_an_https_model_server_with_an_unreadable_bundle_is_a_provider_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same bundle for an https server: a clear error of the turn, not a crash."""
    not_a_bundle = tmp_path / "ca.pem"
    not_a_bundle.write_text("not a certificate\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(not_a_bundle))
    provider = make_provider("openai", "m", api_key="k", base_url="https://127.0.0.1:9/v1")
    try:
        with pytest.raises(ProviderError, match="CA bundle could not be loaded"):
            await first_text(provider)
    finally:
        await provider.aclose()


def test_the_plain_http_context_refuses_any_tls(tls_server: tuple[str, Path]) -> None:
    """What a plain-http client holds in place of CAs: verification on, nothing trusted, so
    a TLS connection through it fails even to a server the machine's bundle would trust."""
    url, ca = tls_server
    trusted = httpx2.get(url, verify=ssl.create_default_context(cafile=str(ca)))
    assert trusted.status_code == 200
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx2.get(url, verify=tls.no_ca_context())


async def test_https_providers_and_web_tools_share_one_context(
    tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started in a thread when an https provider is made, before any request; the provider
    and the web tools then trust the same bundle (here one root that only SSL_CERT_FILE
    names: the handshake passes and the server's own answer, 501, comes back)."""
    url, ca = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    provider = make_provider(
        "openai", "m", api_key="k", base_url=url + "v1", deadline=0.1
    )  # no retries of the 501
    try:
        assert tls._building is not None  # under way before any request
        with pytest.raises(ProviderError) as failure:
            await first_text(provider)
        assert "501" in failure.value.msg and "certificate" not in failure.value.msg.lower()
        context = await tls.tls_context()
        assert context.cert_store_stats()["x509_ca"] == 1
    finally:
        await provider.aclose()

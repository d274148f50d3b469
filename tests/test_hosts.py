"""``[security]`` host rules compare addresses, judged where each web connection is dialled.

Every call goes through the real tools (``ToolRegistry`` via the harness) to real loopback
servers that record what reaches them; refusals must leave them untouched. Each test runs twice
where it matters: with the early URL check, and with it disabled, so the judgment made where the
connection is opened is shown to hold on its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import IPv4Address, ip_address
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpcore2 as httpcore
import pytest

from tests.conftest import make_harness
from tests.petstore_server import PetstoreServer
from tui.config import OpenApiSpecSettings
from tui.security.addresses import meanings, parse_address
from tui.security.hosts import HostPolicy
from tui.security.hosts import system_resolve as resolve
from tui.security.settings import SecuritySettings
from tui.tools.adapters.openapi.tools import build_openapi_toolset

FIXTURES = Path(__file__).parent / "fixtures"
LOOPBACK = IPv4Address("127.0.0.1")

# Every spelling that connects to 127.0.0.1 (or would, through the gateway its form names).
SPELLINGS: list[str] = [
    "127.0.0.1",
    "2130706433",  # one decimal number
    "0x7f000001",  # one hex number
    "0X7F000001",
    "0177.0.0.1",  # octal first part
    "0x7f.0.0.1",
    "0177.1",
    "127.1",  # short forms: the last part fills the remaining bytes
    "127.0.1",
    "127.0.0.1.",  # trailing dot
    "127.0.0.1%2e",  # percent-escaped trailing dot
    "[::ffff:127.0.0.1]",  # IPv4-mapped IPv6
    "[::ffff:7f00:1]",
    "[::FFFF:7F00:1]",
    "[::127.0.0.1]",  # IPv4-compatible IPv6
    "[64:ff9b::7f00:1]",  # NAT64
    "[2002:7f00:1::]",  # 6to4
    "0.0.0.0",  # the unspecified address connects to this host
    "0",
    "\uff11\uff12\uff17.\uff10.\uff10.\uff11",  # full-width digits
    "localhost",  # names: judged on what they resolve to
    "LocalHost.",
]
NAMES = {"localhost", "LocalHost."}
# The spellings that really connect to 127.0.0.1 on this machine (httpx accepts the URL).
ROUTABLE = [
    "127.0.0.1",
    "2130706433",
    "0x7f000001",
    "0x7f.0.0.1",
    "0177.1",
    "127.1",
    "127.0.1",
    "127.0.0.1.",
    "[::ffff:127.0.0.1]",
    "0.0.0.0",
    "0",
    "localhost",
    "LocalHost.",
]
# httpx refuses these URLs itself (no connection), so only the early check names the rule.
HTTPX_REJECTS = {"0177.0.0.1", "\uff11\uff12\uff17.\uff10.\uff10.\uff11"}
BLOCKS = [["127.0.0.1"], ["127.0.0.0/8"], ["localhost"]]


# --------------------------------------------------------------------------- servers


class Recorder:
    """A loopback HTTP server answering 200 to everything, recording each request's path.

    ``/redirect?to=URL`` answers 302 to ``URL`` (recorded too).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.requests: list[str] = []
        requests = self.requests

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _answer(self) -> None:
                requests.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                query = parse_qs(urlsplit(self.path).query)
                if self.path.startswith("/redirect") and "to" in query:
                    self.send_response(302)
                    self.send_header("Location", query["to"][0])
                    body = b""
                else:
                    self.send_response(200)
                    body = b"reached " + self.path.encode()
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    yield server
    server.close()


@pytest.fixture
def other(recorder: Recorder) -> Iterator[Recorder]:
    """A second recorder on 127.0.0.2, on the same port as ``recorder``."""
    server = Recorder("127.0.0.2", recorder.port)
    yield server
    server.close()


@pytest.fixture(params=["url-check", "connect-only"])
def early(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run with the early URL check, then with it disabled: the connect-time judgment alone."""
    if request.param == "connect-only":
        monkeypatch.setattr(HostPolicy, "check", lambda self, url: None)
    return str(request.param)


@pytest.fixture
def dialled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address a socket was opened to; nothing is actually dialled (never real traffic
    to metadata addresses from a test)."""
    calls: list[str] = []

    async def spy(self: httpcore.AnyIOBackend, host: str, port: int, **kwargs: Any) -> Any:
        calls.append(host)
        raise httpcore.ConnectError(f"test spy: {host} not dialled")

    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", spy)
    return calls


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """Answer ``answers[name]`` (one entry per lookup, the last repeated) on the running loop,
    beneath every resolver in the process; returns the names looked up, in order."""
    loop = asyncio.get_running_loop()
    real = loop.getaddrinfo
    lookups: list[str] = []

    async def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name in answers:
            lookups.append(name)
            queue = answers[name]
            host = queue.pop(0) if len(queue) > 1 else queue[0]
        return await real(host, port, *args, **kwargs)

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    return lookups


def harness_with(workspace: Path, **lists: Any) -> Any:
    return make_harness(workspace, settings=SecuritySettings(**lists))


# --------------------------------------------------------------------------- the table


@pytest.mark.parametrize("spelling", [s for s in SPELLINGS if s not in NAMES])
def test_every_spelling_means_127_0_0_1(spelling: str) -> None:
    address = parse_address(spelling)
    assert address is not None and LOOPBACK in meanings(address)


async def test_names_mean_what_they_resolve_to() -> None:
    for name in NAMES:
        assert parse_address(name) is None
        assert LOOPBACK in await resolve(name.rstrip(".").lower(), 80)


@pytest.mark.parametrize("blocked", BLOCKS, ids=lambda b: b[0])
async def test_every_spelling_is_blocked_through_the_tools(
    workspace: Path, recorder: Recorder, early: str, blocked: list[str]
) -> None:
    harness = harness_with(workspace, blocked_hosts=blocked)
    for spelling in SPELLINGS:
        url = f"http://{spelling}:{recorder.port}/{early}"
        for tool, args in (
            ("fetch_url", {"url": url}),
            ("http_request", {"method": "POST", "url": url, "body": "x"}),
        ):
            result = await harness.call(tool, args)
            assert result.is_error, (spelling, tool, result.text)
            if early == "url-check" or spelling not in HTTPX_REJECTS:
                assert "PermissionDenied" in result.text, (spelling, result.text)
                assert "blocked_hosts" in result.text and repr(blocked[0]) in result.text
                if not (spelling in NAMES and blocked == ["localhost"]):
                    assert "127.0.0.1" in result.text, (spelling, result.text)
    assert recorder.requests == []


async def test_routable_spellings_do_reach_the_server_when_not_blocked(
    workspace: Path, recorder: Recorder
) -> None:
    """The control: every spelling the table refuses really does connect here."""
    harness = harness_with(workspace, blocked_hosts=["127.0.0.2"])
    for spelling in ROUTABLE:
        result = await harness.call("fetch_url", {"url": f"http://{spelling}:{recorder.port}/"})
        assert not result.is_error, (spelling, result.text)
    assert len(recorder.requests) == len(ROUTABLE)


async def test_refusals_name_the_spelling_its_address_and_the_setting(
    workspace: Path, recorder: Recorder
) -> None:
    harness = harness_with(workspace, blocked_hosts=["127.0.0.0/8"])
    result = await harness.call("fetch_url", {"url": f"http://0x7f000001:{recorder.port}/"})
    expected = "host '0x7f000001' (the address 127.0.0.1) is refused by [security] blocked_hosts"
    assert expected + " ('127.0.0.0/8')" in result.text
    result = await harness.call("fetch_url", {"url": f"http://[::ffff:7f00:1]:{recorder.port}/"})
    assert "'::ffff:7f00:1' (the address ::ffff:7f00:1, which means 127.0.0.1)" in result.text
    result = await harness.call("fetch_url", {"url": f"http://localhost:{recorder.port}/"})
    assert "host 'localhost' (resolves to 127.0.0.1)" in result.text
    assert recorder.requests == []


async def test_allowed_hosts_compare_addresses_and_networks(
    workspace: Path, recorder: Recorder, other: Recorder, early: str
) -> None:
    harness = harness_with(workspace, allowed_hosts=["2130706433"])
    assert not (
        await harness.call("fetch_url", {"url": f"http://localhost:{recorder.port}/"})
    ).is_error
    result = await harness.call("fetch_url", {"url": f"{other.url}/"})
    assert result.is_error and "allowed_hosts" in result.text and "127.0.0.2" in result.text
    harness = harness_with(workspace, allowed_hosts=["127.0.0.0/30"])
    assert not (await harness.call("fetch_url", {"url": f"http://127.0.2:{other.port}/"})).is_error
    assert len(recorder.requests) == 1 and len(other.requests) == 1


# --------------------------------------------------------------------------- redirects


async def test_redirect_to_a_blocked_spelling_is_refused(
    workspace: Path, recorder: Recorder, other: Recorder, early: str
) -> None:
    harness = harness_with(workspace, blocked_hosts=["127.0.0.2"])
    targets = ["127.0.0.2", "2130706434", "0x7f000002", "127.0.2", "[::ffff:127.0.0.2]"]
    for spelling in targets:
        to = f"http://{spelling}:{other.port}/x"
        result = await harness.call("fetch_url", {"url": f"{recorder.url}/redirect?to={to}"})
        assert result.is_error and "blocked_hosts" in result.text, (spelling, result.text)
        assert "127.0.0.2" in result.text
    assert len(recorder.requests) == len(targets) and other.requests == []
    # The control: unblocked, the same redirect does reach the other server.
    harness = harness_with(workspace)
    to = f"http://0x7f000002:{other.port}/x"
    assert not (
        await harness.call("fetch_url", {"url": f"{recorder.url}/redirect?to={to}"})
    ).is_error
    assert other.requests == ["/x"]


# --------------------------------------------------------------------------- DNS


async def test_dns_rebinding_connects_only_to_the_checked_address_fake_resolver(
    workspace: Path, recorder: Recorder, other: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name answers 127.0.0.1 (allowed) once, then 127.0.0.2 (not allowed): one lookup per
    connection, and the socket goes to the address that lookup gave and was judged."""
    lookups = fake_dns(monkeypatch, {"rebind.test": ["127.0.0.1", "127.0.0.2"]})
    harness = harness_with(workspace, allowed_hosts=["127.0.0.1"])
    url = f"http://rebind.test:{recorder.port}/"
    first = await harness.call("fetch_url", {"url": url})
    assert not first.is_error, first.text
    assert lookups == ["rebind.test"]
    assert recorder.requests == ["/"] and other.requests == []
    second = await harness.call("fetch_url", {"url": url})
    assert second.is_error and "resolves to 127.0.0.2" in second.text
    assert "allowed_hosts" in second.text
    assert other.requests == []


async def test_a_name_resolving_anywhere_blocked_is_refused_whole_fake_resolver(
    workspace: Path, recorder: Recorder, dialled: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "tui.tools.netguard.resolve",
        _answers({"mixed.test": ["127.0.0.1", "127.0.0.2"], "meta.test": ["169.254.169.254"]}),
    )
    harness = harness_with(workspace, blocked_hosts=["127.0.0.2"])
    result = await harness.call("fetch_url", {"url": f"http://mixed.test:{recorder.port}/"})
    assert result.is_error and "resolves to 127.0.0.2" in result.text
    result = await harness.call("fetch_url", {"url": "http://meta.test/latest/meta-data/"})
    assert result.is_error and "cloud metadata" in result.text
    assert dialled == []


def _answers(table: dict[str, list[str]]) -> Any:
    async def fake(name: str, port: int) -> list[Any]:
        return [ip_address(a) for a in table[name]]

    return fake


# --------------------------------------------------------------------------- metadata

METADATA_URLS = [
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/latest/meta-data/",
    "http://0xa9fea9fe/",
    "http://169.254.43518/",
    "http://[::ffff:169.254.169.254]/",
    "http://[fd00:ec2::254]/",
    "http://100.100.100.200/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
    "http://169.254.1.1/",
    "http://[fe80::1]/",
]


async def test_metadata_and_link_local_are_refused_by_default(
    workspace: Path, dialled: list[str], early: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lookups = fake_dns(monkeypatch, {})
    for lists in ({}, {"allowed_hosts": ["*"]}, {"allowed_hosts": ["169.254.0.0/15"]}):
        harness = harness_with(workspace, **lists)
        for url in METADATA_URLS:
            result = await harness.call("fetch_url", {"url": url})
            assert result.is_error and "refused by default" in result.text, (url, result.text)
            assert "[security] allowed_hosts" in result.text
    assert dialled == [] and lookups == []


async def test_an_exact_allowed_entry_lets_metadata_through(
    workspace: Path, dialled: list[str], early: str
) -> None:
    harness = harness_with(workspace, allowed_hosts=["169.254.169.254"])
    result = await harness.call("fetch_url", {"url": "http://2852039166/"})
    # Dialled (the spy refuses the socket: no traffic ever leaves the test).
    assert result.is_error and "test spy" in result.text
    assert dialled == ["169.254.169.254"]


# --------------------------------------------------------------------------- other tools


async def test_web_search_endpoint_is_judged(
    workspace: Path, recorder: Recorder, early: str
) -> None:
    harness = harness_with(workspace, blocked_hosts=["127.0.0.1"])
    search = harness.registry.get("web_search")
    assert search is not None
    search.search_url = f"http://0x7f000001:{recorder.port}/search"
    result = await harness.call("web_search", {"query": "anything"})
    assert result.is_error and "blocked_hosts" in result.text
    assert recorder.requests == []


@pytest.mark.parametrize("host", ["2130706433", "localhost", "[::ffff:127.0.0.1]"])
async def test_openapi_base_url_is_judged(workspace: Path, early: str, host: str) -> None:
    petstore = PetstoreServer(specs={})
    petstore.start()
    try:
        port = urlsplit(petstore.url).port
        settings = OpenApiSpecSettings(
            spec="openapi_petstore_v3.0.yaml", base_url=f"http://{host}:{port}/open"
        )
        toolset = await build_openapi_toolset("pet", settings, base_dir=FIXTURES, env={})
        for blocked, refused in ((["127.0.0.0/8"], True), (["10.0.0.0/8"], False)):
            harness = harness_with(workspace, blocked_hosts=blocked)
            for tool in toolset.tools:
                harness.registry.register(tool)
            result = await harness.call("pet__listPets", {})
            assert result.is_error is refused, result.text
            if refused:
                assert "blocked_hosts" in result.text and petstore.requests == []
        assert len(petstore.requests) == 1
    finally:
        petstore.stop()

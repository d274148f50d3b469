"""What the MCP and OpenAPI adapters and ``tool_search`` cost, against the raw thing.

Every figure is a median next to a baseline measured in the same run, interleaved call by call
in a rotating order so machine noise hits all contenders alike; the ratios are what matter.

* MCP: ``get_current_time`` on a real ``mcp-server-time`` over stdio, through ``McpManager`` +
  ``ToolRegistry.execute`` (full-auto ``SecurityPolicy``) vs the ``mcp`` SDK's own
  ``stdio_client`` + ``ClientSession.call_tool`` against a second server process; and start-up
  (``McpManager.start()`` to connected) vs the SDK's spawn + ``initialize`` + ``list_tools``.
* OpenAPI: ``GET /open/pets/{petId}`` of the Petstore spec on the loopback ``PetstoreServer``,
  through ``build_openapi_tools`` + ``ToolRegistry.execute`` vs a bare ``httpx.AsyncClient``
  reusing one connection, vs a fresh client per call (as the tool opens one per call), and
  vs a fresh client sharing one TLS context (what building that context costs).
* tool_search: a keyword search that activates up to 5 of 500 deferred tools, vs a no-op tool
  through the same registry (the dispatch floor).

Lines marked ``(breakdown)`` split our path in two, to show where the time goes.

    python bench/adapters.py [--calls 200] [--startups 3] [--searches 50] [--deferred 500]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``tests`` and ``tui`` importable
    sys.path.insert(0, str(ROOT))

import httpx2 as httpx
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.petstore_server import PetstoreServer
from tui.config import McpServerSettings, OpenApiSpecSettings
from tui.exec.local import LocalBackend
from tui.security.permissions import ApprovalMode, PermissionMode
from tui.security.policy import SecurityPolicy
from tui.tools.adapters.mcp.tools import McpManager
from tui.tools.adapters.openapi.tools import build_openapi_tools
from tui.tools.base import Tool, ToolAccess
from tui.tools.builtin.tool_search import ToolSearchTool, ToolWords, _words, score
from tui.tools.context import ToolContext
from tui.tools.loops import LoopMemory
from tui.tools.registry import ToolRegistry
from tui.tools.result import ToolResult
from tui.tools.schema_tool import RawParams, SchemaTool

Call = Callable[[], Awaitable[None]]

TIME_SERVER = [sys.executable, "-m", "mcp_server_time"]
TIME_TOOL = "time__get_current_time"
TIME_ARGS = {"timezone": "UTC"}
PETSTORE_SPEC = ROOT / "tests" / "fixtures" / "openapi_petstore_v3.0.yaml"
PET_TOOL = "pet__showPetById"
SEARCHES = ["create issue", "slack comment", "delete label", "jira update user", "failed build"]

_call_ids = itertools.count(1)


# -- measuring ---------------------------------------------------------------------------------


async def timed(call: Call) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def interleaved(contenders: dict[str, Call], calls: int, warm: int = 10) -> dict[str, float]:
    """Median milliseconds of each contender, run ``calls`` times each in a rotating order."""
    for call in contenders.values():
        for _ in range(warm):  # imports, connections, validators, the page cache
            await call()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for index in range(calls):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(await timed(contenders[name]))
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def report(title: str, medians: dict[str, float], baseline: str, count: int) -> None:
    print(f"{title} (median of {count} each, interleaved)")
    floor = medians[baseline]
    for name, ms in medians.items():
        ratio = "" if name == baseline else f"   x{ms / floor:5.2f} vs {baseline}"
        print(f"  {name:<40} {ms:8.3f} ms{ratio}")


def checked(what: str, result: ToolResult) -> None:
    if result.is_error:
        raise SystemExit(f"{what} failed: {result.text}")


class Wiring:
    """The registry's surroundings as the app builds them: real policy, real local backend."""

    def __init__(self, workspace: Path) -> None:
        self.policy = SecurityPolicy(workspace, approval_mode=ApprovalMode.FULL_AUTO)
        self.backend = LocalBackend(default_cwd=str(workspace))

    def context(self, tool_name: str) -> ToolContext:
        """A fresh context per call, as the loop makes one per tool call."""
        return ToolContext(f"bench_{next(_call_ids)}", tool_name, self.backend, self.policy)


# -- MCP ---------------------------------------------------------------------------------------


def time_server_env() -> dict[str, str]:
    """What the app passes as the safe base environment (both sides get the same)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(Path.home())}


def mcp_manager(home: Path) -> McpManager:
    settings = McpServerSettings(command=TIME_SERVER[0], args=TIME_SERVER[1:])
    return McpManager(
        {"time": settings}, env=time_server_env(), cwd=home, log_dir=home / "mcp-logs"
    )


@contextlib.asynccontextmanager
async def raw_session(errlog: Any) -> AsyncIterator[tuple[ClientSession, float, float]]:
    """The SDK alone: (session, seconds to initialized, seconds to tools listed)."""
    params = StdioServerParameters(
        command=TIME_SERVER[0], args=TIME_SERVER[1:], env=time_server_env()
    )
    started = time.perf_counter()
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        initialized = time.perf_counter() - started
        listed = await session.list_tools()
        if not any(tool.name == "get_current_time" for tool in listed.tools):
            raise SystemExit("mcp-server-time did not list get_current_time")
        yield session, initialized, time.perf_counter() - started


async def mcp_startups(home: Path, errlog: Any, count: int) -> None:
    ours: list[float] = []
    ours_stop: list[float] = []
    raw_init: list[float] = []
    raw_listed: list[float] = []
    raw_stop: list[float] = []

    async def ours_once() -> None:
        manager = mcp_manager(home)
        started = time.perf_counter()
        await manager.start()
        ours.append(time.perf_counter() - started)
        state = manager.states()[0]
        if state.state != "connected":
            await manager.aclose()
            raise SystemExit(f"mcp-server-time did not connect: {state.error}")
        stopping = time.perf_counter()
        await manager.aclose()
        ours_stop.append(time.perf_counter() - stopping)

    async def raw_once() -> None:
        async with raw_session(errlog) as (_, initialized, listed):
            raw_init.append(initialized)
            raw_listed.append(listed)
            stopping = time.perf_counter()
        raw_stop.append(time.perf_counter() - stopping)

    for index in range(count):  # alternating who goes first, so a cold start hits both alike
        first, second = (ours_once, raw_once) if index % 2 else (raw_once, ours_once)
        await first()
        await second()

    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    floor = ms(raw_listed)
    print(f"MCP start-up, mcp-server-time over stdio (median of {count} each, alternating)")
    print(f"  {'SDK spawn + initialize':<40} {ms(raw_init):8.1f} ms")
    print(f"  {'SDK spawn + initialize + list_tools':<40} {floor:8.1f} ms")
    print(
        f"  {'McpManager.start() to connected':<40} {ms(ours):8.1f} ms"
        f"   x{ms(ours) / floor:5.2f} vs SDK + list_tools"
    )
    print(f"  {'SDK stdio_client exit':<40} {ms(raw_stop):8.1f} ms")
    print(f"  {'McpManager.aclose()':<40} {ms(ours_stop):8.1f} ms")


async def mcp_calls(home: Path, wiring: Wiring, errlog: Any, calls: int) -> None:
    manager = mcp_manager(home)
    await manager.start()
    try:
        registry = ToolRegistry(manager.tools())
        tool = registry.get(TIME_TOOL)
        if tool is None:
            raise SystemExit(f"{TIME_TOOL} not registered; got {registry.names()}")
        arguments = json.dumps(TIME_ARGS)
        params = tool.parse_params(dict(TIME_ARGS))
        async with raw_session(errlog) as (session, _, _):

            async def sdk() -> None:
                result = await session.call_tool("get_current_time", dict(TIME_ARGS))
                if result.is_error:
                    raise SystemExit(f"SDK call_tool failed: {result.content}")

            async def adapter() -> None:
                checked("McpTool.execute", await tool.execute(params, wiring.context(TIME_TOOL)))

            async def ours() -> None:
                ctx = wiring.context(TIME_TOOL)
                checked("registry.execute", await registry.execute(TIME_TOOL, arguments, ctx))

            medians = await interleaved(
                {
                    "SDK ClientSession.call_tool": sdk,
                    "McpTool.execute (breakdown)": adapter,
                    "registry.execute (ours)": ours,
                },
                calls,
            )
    finally:
        await manager.aclose()
    report("MCP get_current_time per call", medians, "SDK ClientSession.call_tool", calls)


# -- OpenAPI -----------------------------------------------------------------------------------


async def openapi_calls(wiring: Wiring, calls: int) -> None:
    server = PetstoreServer()
    base = server.start() + "/open"
    try:
        pet = server.add("Rex", tag="dog")
        url = f"{base}/pets/{pet['id']}"
        settings = OpenApiSpecSettings(spec=str(PETSTORE_SPEC), base_url=base)
        tools = await build_openapi_tools("pet", settings, base_dir=PETSTORE_SPEC.parent, env={})
        registry = ToolRegistry(tools, loops=LoopMemory(0, 0))  # one call, on purpose
        tool = registry.get(PET_TOOL)
        if tool is None:
            raise SystemExit(f"{PET_TOOL} not built; got {registry.names()}")
        arguments = json.dumps({"petId": str(pet["id"])})
        params = tool.parse_params({"petId": str(pet["id"])})

        def expect(response: httpx.Response) -> None:
            if response.status_code != 200 or response.json() != pet:
                raise SystemExit(f"GET {url} answered {response.status_code}: {response.text}")

        # trust_env=False as the tool does: no proxy variables, no .netrc lookup.
        tls = httpx.create_ssl_context(trust_env=False)
        async with httpx.AsyncClient(trust_env=False) as shared:

            async def reused() -> None:
                expect(await shared.get(url))

            async def fresh() -> None:
                async with httpx.AsyncClient(trust_env=False, follow_redirects=False) as client:
                    expect(await client.get(url))

            async def fresh_shared_tls() -> None:
                async with httpx.AsyncClient(
                    trust_env=False, follow_redirects=False, verify=tls
                ) as client:
                    expect(await client.get(url))

            async def adapter() -> None:
                checked(
                    "OpenApiOperationTool.execute",
                    await tool.execute(params, wiring.context(PET_TOOL)),
                )

            async def ours() -> None:
                ctx = wiring.context(PET_TOOL)
                checked("registry.execute", await registry.execute(PET_TOOL, arguments, ctx))

            medians = await interleaved(
                {
                    "httpx, one reused connection": reused,
                    "httpx, fresh AsyncClient per call": fresh,
                    "httpx, fresh client, shared TLS ctx": fresh_shared_tls,
                    "OpenApiOperationTool.execute (breakdown)": adapter,
                    "registry.execute (ours)": ours,
                },
                calls,
            )
    finally:
        server.stop()
    report("OpenAPI GET /pets/{petId} per call", medians, "httpx, one reused connection", calls)
    ours_ms = medians["registry.execute (ours)"]
    fresh_ms = medians["httpx, fresh AsyncClient per call"]
    print(
        f"  {'registry.execute / fresh AsyncClient':<40} {'':8}      x{ours_ms / fresh_ms:5.2f}"
        "   (the tool opens one httpx.AsyncClient per call)"
    )
    construct: list[float] = []
    for _ in range(50):
        started = time.perf_counter()
        client = httpx.AsyncClient(trust_env=False)
        construct.append(time.perf_counter() - started)
        await client.aclose()
    construct_ms = statistics.median(construct) * 1000
    print(
        f"  {'httpx.AsyncClient() construction':<40} {construct_ms:8.3f} ms"
        "   (loads certifi's CA file, even for http://)"
    )


# -- tool_search -------------------------------------------------------------------------------

SOURCES = [
    "github", "jira", "linear", "slack", "petstore", "stripe", "notion", "sentry", "pagerduty",
    "datadog", "vault", "k8s", "gitlab", "confluence", "zendesk", "hubspot", "asana", "figma",
    "twilio", "circleci",
]  # fmt: skip
VERBS = ["create", "list", "get", "update", "delete"]
NOUNS = ["issue", "comment", "label", "user", "build"]


class ServiceTool(SchemaTool[RawParams]):
    """A run-time tool shaped like the ones the MCP and OpenAPI adapters build."""

    def __init__(self, name: str, description: str) -> None:
        super().__init__(
            {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
        )
        # SchemaTool's attributes are per instance: each one is its own tool.
        self.name = name  # type: ignore[misc]
        self.label = name  # type: ignore[misc]
        self.description = description  # type: ignore[misc]

    def access(self, params: RawParams) -> ToolAccess:
        return ToolAccess(permission=PermissionMode.READ_ONLY)

    async def execute(self, params: RawParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"{self.name} got {params.arguments()}")


def service_tools(count: int) -> list[Tool[Any]]:
    """``count`` tools with names and descriptions about as long as real adapters write."""
    tools: list[Tool[Any]] = []
    combos = itertools.product(SOURCES, VERBS, NOUNS)
    for index, (source, verb, noun) in enumerate(itertools.islice(itertools.cycle(combos), count)):
        suffix = "" if index < len(SOURCES) * len(VERBS) * len(NOUNS) else f"_{index}"
        name = f"{source}__{verb}_{noun}{suffix}"
        description = (
            f"{verb.capitalize()} a {noun} in {source}. Calls the {source} API on behalf of the "
            f"person; the {noun} is identified by its id or title, and the answer is the {noun} "
            "as JSON with its fields, links and timestamps.\n\n"
            f"When to use: to {verb} a {noun} in {source}.\n"
            f"When NOT to use: for other {source} endpoints (see the other {source}__* tools); "
            "for arbitrary URLs (use http_request or fetch_url).\n"
            "Disambiguation: path, query and header parameters are top-level arguments; "
            "credentials are added for you, never pass them.\n"
            f'Examples: {{"title": "the {noun}"}}'
        )
        tools.append(ServiceTool(name, description))
    return tools


async def tool_search(wiring: Wiring, deferred: int, searches: int) -> None:
    registry = ToolRegistry(loops=LoopMemory(0, 0))  # repeats one call on purpose
    for tool in service_tools(deferred):
        registry.register(tool, deferred=True)
    registry.register(ServiceTool("noop", "Does nothing; the dispatch floor."))
    registry.register(ToolSearchTool(registry))
    found = len(registry.deferred_tools())
    if found != deferred:
        raise SystemExit(f"expected {deferred} deferred tools, got {found}")
    queries = itertools.cycle(SEARCHES)
    names = itertools.cycle(registry.names()[:deferred])

    def redefer(result: ToolResult) -> int:
        """Put the activated tools back, so every search sees all of them deferred."""
        activated: list[str] = result.details.get("activated", [])
        for name in activated:
            tool = registry.get(name)
            assert tool is not None
            registry.unregister(name)
            registry.register(tool, deferred=True)
        return len(activated)

    async def noop() -> None:
        result = await registry.execute("noop", '{"title": "x"}', wiring.context("noop"))
        checked("noop", result)

    async def keywords() -> None:
        arguments = json.dumps({"query": next(queries)})
        result = await registry.execute("tool_search", arguments, wiring.context("tool_search"))
        checked("tool_search", result)
        if not redefer(result):
            raise SystemExit(f"tool_search {arguments} activated nothing: {result.text}")

    async def select() -> None:
        wanted = ",".join(next(names) for _ in range(3))
        arguments = json.dumps({"query": f"select:{wanted}"})
        result = await registry.execute("tool_search", arguments, wiring.context("tool_search"))
        checked("tool_search", result)
        if redefer(result) != 3:
            raise SystemExit(f"tool_search {arguments} did not activate 3 tools: {result.text}")

    tool_words = [ToolWords.of(tool) for tool in registry.deferred_tools()]

    async def scoring() -> None:
        words = _words(next(queries))
        sorted((score(each, words) for each in tool_words), reverse=True)

    medians = await interleaved(
        {
            "noop tool via registry.execute": noop,
            "tool_search keywords (ours)": keywords,
            "tool_search select:3 names": select,
            "score() over all alone (breakdown)": scoring,
        },
        searches,
        warm=3,
    )
    title = f"tool_search among {deferred} deferred tools"
    report(title, medians, "noop tool via registry.execute", searches)
    if len(registry.deferred_tools()) != deferred:
        raise SystemExit("tool_search left tools activated after being put back")


# -- main --------------------------------------------------------------------------------------


async def main(calls: int, startups: int, searches: int, deferred: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="agent-tui-bench-"))
    os.environ["AGENT_TUI_CONFIG_DIR"] = str(home / "config")
    os.environ["AGENT_TUI_DATA_DIR"] = str(home / "data")
    workspace = home / "workspace"
    workspace.mkdir()
    wiring = Wiring(workspace)
    began = time.perf_counter()
    try:
        with open(home / "sdk-server.log", "w") as errlog:
            await mcp_startups(home, errlog, startups)
            print()
            await mcp_calls(home, wiring, errlog, calls)
        print()
        await openapi_calls(wiring, calls)
        print()
        await tool_search(wiring, deferred, searches)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"\n(total {time.perf_counter() - began:.1f} s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="MCP and OpenAPI calls each")
    parser.add_argument("--startups", type=int, default=3, help="server start-ups each")
    parser.add_argument("--searches", type=int, default=50, help="tool_search calls each")
    parser.add_argument("--deferred", type=int, default=500, help="deferred tools to search")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.startups, args.searches, args.deferred))

"""A stdio MCP server whose behaviour the first argument picks.

- ``serve`` (default): tools that echo, report progress, fail, return images and resources,
  crash, hang, and add or remove tools at run time (each change followed by
  ``notifications/tools/list_changed``).
- ``exit-at-start``: writes a reason to stderr and exits with code 2 before serving.
- ``silent``: reads stdin and never answers, so ``initialize`` never completes.

Run as ``python toolbox.py MODE [MARKER_DIR]``; ``hang`` writes ``cancelled`` into
``MARKER_DIR`` when the client's cancellation reaches it, and ``crash`` writes the pid of the
child it leaves behind, so tests can check that nothing outlives the server.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
marker_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else None

# The misbehaving modes act before the SDK is imported, so they do so within milliseconds.
if mode == "exit-at-start":
    print("toolbox: TOOLBOX_TOKEN is not set; refusing to start", file=sys.stderr, flush=True)
    sys.exit(2)

if mode == "silent":
    print("toolbox: waiting for a licence server that never answers", file=sys.stderr, flush=True)
    for _line in sys.stdin:
        pass
    sys.exit(0)

import anyio  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.types import (  # noqa: E402
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp.types import Tool as ListedTool  # noqa: E402

PNG_1X1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4"
        "890000000d49444154789c6360f8cfc0f01f0005000201e2b3d4a30000000049"
        "454e44ae426082"
    )
).decode()

LISTING_WAIT = 10.0
"""How long ``add_tools(hold=True)`` waits for the client to ask for the list again."""


class Toolbox(MCPServer):
    """The SDK server plus switches that make ``tools/list`` fail or wait, on request."""

    def __init__(self) -> None:
        super().__init__("toolbox")
        self.failing_listings = 0
        self.listings = 0
        """tools/list requests answered or refused since the last ``add_tools``."""
        self.listing_started: anyio.Event | None = None
        self.listing_release: anyio.Event | None = None

    async def list_tools(self) -> list[ListedTool]:
        self.listings += 1
        if self.failing_listings:
            self.failing_listings -= 1
            raise RuntimeError("the tool catalogue is being rebuilt")
        if self.listing_started is not None and self.listing_release is not None:
            self.listing_started.set()
            await self.listing_release.wait()
        return await super().list_tools()


server = Toolbox()


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str, times: int = 1) -> str:
    """Repeat the text."""
    return " ".join([text] * times)


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def wipe(target: str) -> str:
    """Pretend to delete the target."""
    return f"wiped {target}"


@server.tool()
def note(text: str) -> str:
    """Store a note (no annotations: treated as writing)."""
    return f"noted: {text}"


@server.tool()
def env_value(name: str) -> str:
    """The value of an environment variable in the server's process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def failing() -> CallToolResult:
    """Always reports an error the way tools do: isError with a message."""
    return CallToolResult(is_error=True, content=[TextContent(type="text", text="disk is full")])


@server.tool()
def structured_only() -> CallToolResult:
    """Structured content and no text blocks."""
    return CallToolResult(content=[], structured_content={"answer": 42, "unit": "widgets"})


@server.tool()
def picture() -> list[TextContent | ImageContent | EmbeddedResource]:
    """A caption, a one-pixel PNG and an embedded text resource."""
    return [
        TextContent(type="text", text="a red pixel"),
        ImageContent(type="image", data=PNG_1X1, mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes/readme.txt", mime_type="text/plain", text="resource body"
            ),
        ),
    ]


@server.tool()
def crash(code: int = 3) -> str:
    """Leave a child behind, complain on stderr, then die mid-call.

    The child inherits every descriptor, the MCP wire included, as a helper spawned by a
    careless server would: the client sees no end-of-file on stdout until that child dies.
    """
    for fd in os.listdir("/proc/self/fd"):
        try:
            os.set_inheritable(int(fd), True)
        except OSError:
            pass
    child = subprocess.Popen(["sleep", "60"], close_fds=False)
    if marker_dir is not None:
        (marker_dir / "child.pid").write_text(str(child.pid))
    print("toolbox: about to fall over", file=sys.stderr)
    print("toolbox: segmentation fault (pretend)", file=sys.stderr, flush=True)
    os._exit(code)


@server.tool()
async def hang(seconds: float = 3600) -> str:
    """Sleep; note when the client cancels."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if marker_dir is not None:
            (marker_dir / "cancelled").write_text("cancelled")
        raise
    return "woke up"


@server.tool()
async def progress(ctx: Context, steps: int = 5, pause: float = 0.0) -> str:
    """Report progress ``steps`` times (``pause`` seconds apart), then answer."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
        if pause:
            await anyio.sleep(pause)
    return f"done after {steps} steps"


@server.tool(name="odd.name with spaces")
def odd_name() -> str:
    """A tool whose name needs cleaning before a model may use it."""
    return "odd"


def _greeter(name: str) -> Any:
    def greet(text: str = "") -> str:
        return f"{name} greets {text}".rstrip()

    return greet


def _register(name: str) -> None:
    server.add_tool(_greeter(name), name=name, description=f"Added at run time as `{name}`.")


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a tool NAME that greets, then tell the client the tool list changed."""
    _register(name)
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
async def add_tools(names: list[str], ctx: Context, hold: bool = False) -> str:
    """Register several tools, one list-changed notification each.

    With ``hold``, the client's first re-list after the first notification is kept waiting
    until every other notification has been sent, so they all arrive while it runs.
    """
    server.listings = 0
    if hold:
        server.listing_started = anyio.Event()
        server.listing_release = anyio.Event()
    try:
        for index, name in enumerate(names):
            _register(name)
            await ctx.session.send_tool_list_changed()
            if index == 0 and server.listing_started is not None:
                with anyio.fail_after(LISTING_WAIT):
                    await server.listing_started.wait()
    finally:
        if server.listing_release is not None:
            server.listing_release.set()
        server.listing_started = server.listing_release = None
    return f"added {len(names)}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def listing_count() -> str:
    """How many tools/list requests came in since the last ``add_tools``."""
    return f"{server.listings} listings"


@server.tool()
async def remove_tool(name: str, ctx: Context) -> str:
    """Unregister the tool NAME, then tell the client the tool list changed."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"removed {name}"


@server.tool()
async def break_listing(ctx: Context, times: int = 1) -> str:
    """Make the next TIMES tools/list requests fail, then say the tool list changed."""
    server.failing_listings = times
    await ctx.session.send_tool_list_changed()
    return f"the next {times} listing(s) fail"


@server.tool()
async def stall_listing(ctx: Context) -> str:
    """Say the tool list changed and keep the client's re-list waiting until the server ends."""
    server.listing_started = anyio.Event()
    server.listing_release = anyio.Event()
    await ctx.session.send_tool_list_changed()
    with anyio.fail_after(LISTING_WAIT):
        await server.listing_started.wait()
    return "the re-list is waiting"


if __name__ == "__main__":
    server.run()

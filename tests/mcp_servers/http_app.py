"""A streamable-HTTP MCP server served by uvicorn on 127.0.0.1 in a background thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations


class _Server(uvicorn.Server):
    """uvicorn's server plus an event set once it accepts connections."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()


def build_server() -> MCPServer:
    server = MCPServer("http-toolbox")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def add_multiplier(ctx: Context) -> str:
        """Register ``multiply`` at run time, then say the tool list changed."""

        def multiply(a: int, b: int) -> int:
            return a * b

        server.add_tool(multiply, description="Multiply two integers.")
        await ctx.session.send_tool_list_changed()
        return "added multiply"

    return server


@contextmanager
def serve_http() -> Iterator[str]:
    """Yield the endpoint URL of a running server; stop it on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build_server().streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = _Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        if not server.ready.wait(timeout=10):
            raise RuntimeError("the HTTP MCP server did not start within 10 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()

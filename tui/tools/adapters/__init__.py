"""Tools that come from outside: MCP servers and OpenAPI specs."""

"""Small MCP servers for the adapter tests, written with the SDK's own server API."""

"""MCP servers as tools: their configuration, the client connection, the tool adapter."""

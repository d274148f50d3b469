"""The tool core: the contract, the context, results, the registry; `builtin/` holds the
built-in tool families, `adapters/` the MCP and OpenAPI adapters."""

"""The tool system: contracts, the registry, the built-in tools."""

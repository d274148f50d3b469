"""agent-tui: a terminal agent whose every tool call can be watched, approved and taken over."""

__version__ = "0.1.0"

"""``ConfigError``: a configuration that cannot be used, each problem pinned to where it can
be fixed (a file and line, an environment variable, or the command line)."""

from __future__ import annotations

from dataclasses import dataclass

from tui.errors import AgentTuiError


@dataclass(frozen=True)
class ConfigIssue:
    """One problem, pinned to where it can be fixed."""

    source: str
    """A file path, ``environment variable NAME`` or ``command-line options``."""
    line: int | None
    key: str
    """``[section].key`` (``[hooks].pre_tool_use[0].timeout``), or empty when unknown."""
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source} line {self.line}"
        key = f"{self.key}: " if self.key else ""
        return f"config error in {where}: {key}{self.message}"


class ConfigError(AgentTuiError):
    """The configuration cannot be used; the message says where to fix each problem."""

    title = "Configuration error"

    def __init__(self, issues: list[ConfigIssue]) -> None:
        super().__init__("\n".join(str(issue) for issue in issues))
        self.issues = issues

    @property
    def source(self) -> str:
        return self.issues[0].source

    @property
    def line(self) -> int | None:
        return self.issues[0].line

    @property
    def key(self) -> str:
        return self.issues[0].key

"""``[mcp]`` and ``[openapi]``: the servers and API descriptions that add tools of their own."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from tui.config.sections import SECTION, HttpUrl


class McpServerSettings(BaseModel):
    """One MCP server: a command to start (stdio) or a URL (streamable HTTP)."""

    model_config = SECTION

    command: str | None = None
    """The program that serves MCP on its stdin/stdout."""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Variables added to the server's environment (it also gets the usual safe ones)."""
    cwd: str | None = None
    url: HttpUrl | None = None
    """A streamable-HTTP endpoint, e.g. ``http://127.0.0.1:8000/mcp``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Sent with every HTTP request (``Authorization``, say)."""
    enabled: bool = True
    startup_timeout: float = Field(default=30, gt=0)
    """Seconds the server has to start and list its tools."""
    call_timeout: float = Field(default=120, gt=0)
    """Seconds one tool call may take."""
    defer: bool = False
    """Leave this server's tools to ``tool_search`` whatever their number."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of `command` (stdio) or `url` (streamable HTTP)")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


class McpSettings(BaseModel):
    """Model Context Protocol servers whose tools the agent can call."""

    model_config = SECTION

    servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    """``[mcp.servers.NAME]`` tables; tools appear as ``NAME__tool``."""
    trusted_projects: list[str] = Field(default_factory=list)
    """No longer read: a project's ``.mcp.json`` servers start once the workspace is trusted
    (``/trust``, recorded in ``[trust]`` with a digest of the file). Kept so that older
    config files still load."""


class OpenApiSpecSettings(BaseModel):
    """One OpenAPI 3.0/3.1 description turned into tools, one per operation."""

    model_config = SECTION

    spec: str
    """A file path, an http(s) URL, or the spec text itself (YAML or JSON)."""
    base_url: HttpUrl | None = None
    """Overrides the spec's first ``servers`` entry."""
    tags: list[str] = Field(default_factory=list)
    """Only operations with one of these tags (empty: all)."""
    operations: list[str] = Field(default_factory=list)
    """Only these operationIds (empty: all)."""
    path_prefixes: list[str] = Field(default_factory=list)
    """Only paths starting with one of these (empty: all)."""
    auth: Literal["none", "bearer", "api_key"] = "none"
    token_env: str | None = None
    """The environment variable holding the bearer token or API key (never the key itself)."""
    api_key_header: str = "X-API-Key"
    max_response_chars: int = Field(default=20000, gt=0)
    """Responses longer than this are cut, and the call says so."""
    timeout: float = Field(default=30, gt=0)
    enabled: bool = True
    defer: bool = False
    """Leave these tools to ``tool_search`` whatever their number."""

"""``Settings``: everything configurable, one attribute per TOML section.

The sections themselves live in ``tui.config.sections``, one module per topic; this root only
gathers them, in the order the default file (``tui.config.dump``) lists them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tui.config.sections.adapters import McpSettings, OpenApiSpecSettings
from tui.config.sections.agent import AgentSettings
from tui.config.sections.approval import ApprovalSettings, NotifySettings
from tui.config.sections.fleet import FleetSettings
from tui.config.sections.hooks import HooksSettings
from tui.config.sections.provider import ProviderSettings
from tui.config.sections.sandbox import SandboxSettings
from tui.config.sections.subagents import SubAgentSettings
from tui.config.sections.targets import SshSettings, TmuxSettings
from tui.config.sections.tools import (
    BrowserSettings,
    CronSettings,
    ToolsSettings,
    WebSettings,
)
from tui.security.settings import SecuritySettings
from tui.security.trust import TrustSettings


class Settings(BaseModel):
    """Everything configurable, one attribute per TOML section."""

    model_config = ConfigDict(extra="forbid")

    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    tmux: TmuxSettings = Field(default_factory=TmuxSettings)
    ssh: SshSettings = Field(default_factory=SshSettings)
    fleet: FleetSettings = Field(default_factory=FleetSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    browser: BrowserSettings = Field(default_factory=BrowserSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    openapi: dict[str, OpenApiSpecSettings] = Field(default_factory=dict)
    """``[openapi.NAME]`` tables; tools appear as ``NAME__operationId``."""
    cron: CronSettings = Field(default_factory=CronSettings)
    subagents: dict[str, SubAgentSettings] = Field(default_factory=dict)
    """``[subagents.NAME]`` tables: each sub-agent is offered to the model as a tool ``NAME``."""
    trust: TrustSettings = Field(default_factory=TrustSettings)

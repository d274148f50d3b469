"""``[sandbox]``: the bubblewrap walls every command of the agent's runs inside."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tui.config.sections import SECTION


class SandboxSettings(BaseModel):
    """How the kernel keeps each approval mode's promise (see README, "The promise")."""

    model_config = SECTION

    mode: Literal["auto", "required", "off"] = "auto"
    """``auto``: bubblewrap where it works, else say so once and let the rater alone decide;
    ``required``: run no command without it; ``off``: no sandbox (only your own config can
    turn it off, never a workspace's)."""
    network: Literal["none", "proxy"] = "none"
    """Auto-edit commands (and commands approved in ask mode): ``none``, or ``proxy`` to reach
    the network through the host policy ([security] allowed_hosts / blocked_hosts) as
    full-auto commands do."""
    servers_network: Literal["none", "proxy"] = "proxy"
    """Hooks and MCP stdio servers from your config: through the host policy, or none."""
    writable: list[str] = Field(default_factory=list)
    """More folders the workspace columns may write (absolute paths; your own config only)."""

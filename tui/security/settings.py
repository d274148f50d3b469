"""The ``[security]`` config section: what the policy enforces before anything runs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tui.security.hosts import HostEntry
from tui.security.permissions import PermissionMode
from tui.security.secrets import SECRET_PATHS

DEFAULT_FORBIDDEN_PATHS = list(SECRET_PATHS)
"""Secret places: never written, read only when allowed or approved for the call."""

DEFAULT_ENV_ALLOWLIST = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "TMPDIR",
    "TZ",
    "PWD",
    "COLUMNS",
    "LINES",
    "EDITOR",
    "PAGER",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "GOPATH",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "NVM_DIR",
    "JAVA_HOME",
    "XDG_RUNTIME_DIR",
]
"""Names a command inherits; any ``LC_*`` too. Everything else (API keys above all) stays out
unless named in ``env_passthrough``."""

DEFAULT_COMMAND_DENYLIST = [
    "rm -rf /",
    "rm -rf /*",
    "rm -rf ~",
    "rm -rf ~/",
    "rm -fr /",
    ":(){ :|:& };:",
]


class SecuritySettings(BaseModel):
    """What may be touched and run, whatever the approval mode."""

    model_config = ConfigDict(extra="forbid")

    permission_ceiling: PermissionMode = PermissionMode.DANGER_FULL_ACCESS
    """Calls needing more than this are refused outright, never even asked."""
    workspace_only: bool = False
    """Refuse every path outside the workspace (reads too). When off, writes outside it need
    danger-full-access, so they are asked about in the ask and auto-edit modes."""
    forbidden_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_FORBIDDEN_PATHS))
    extra_forbidden_paths: list[str] = Field(default_factory=list)
    allowed_secret_paths: list[str] = Field(default_factory=list)
    """Secret places (paths or patterns) the file tools may read without asking; never
    writable. User config only: a workspace must not hand itself the user's keys."""
    allowed_roots: list[str] = Field(default_factory=list)
    """Folders outside the workspace that still count as inside it (say a shared scratch dir)."""
    allow: list[str] = Field(default_factory=list)
    """Rules that run without asking: ``tool``, ``tool(exact)``, ``tool(prefix:*)``."""
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    command_allowlist: list[str] | None = None
    """When set, only these programs may run (every segment's program must be listed)."""
    command_denylist: list[str] = Field(default_factory=lambda: list(DEFAULT_COMMAND_DENYLIST))
    """Command patterns (exact or ``prefix:*``) refused in any segment."""
    block_high_risk_commands: bool = False
    """Refuse every high-risk (or unknown) command outright, before anyone is asked, unless
    ``command_allowlist`` names each of its programs or an ``allow`` rule covers it
    (ZeroClaw's switch; its default is on)."""
    require_approval_for_medium_risk: bool = False
    """Ask about every medium- or high-risk command, even in full-auto mode; allow rules and
    saved grants still answer (ZeroClaw's switch; its default is on)."""
    max_actions_per_hour: int = 600
    """Acting (non-read-only) calls allowed in any sliding hour; 0 means no limit."""
    env_allowlist: list[str] = Field(default_factory=lambda: list(DEFAULT_ENV_ALLOWLIST))
    env_passthrough: list[str] = Field(default_factory=list)
    """Extra variable names a command may see (an explicit opt-in for secrets)."""
    allowed_hosts: list[str] | None = None
    """When set, ``http_request``, ``fetch_url``, ``web_search`` and API adapters may reach only
    these: names (``example.com`` also covers its subdomains; ``*`` means any), addresses in any
    spelling, or networks (``10.0.0.0/8``). Compared on the addresses actually dialled.
    Link-local and cloud metadata addresses need their own entry (``169.254.169.254``)."""
    blocked_hosts: list[str] = Field(default_factory=list)
    """Names, addresses or networks web calls may never reach, checked before
    ``allowed_hosts``; a name also blocks every address it resolves to."""

    @field_validator("allowed_hosts", "blocked_hosts")
    @classmethod
    def _understood_hosts(cls, entries: list[str] | None) -> list[str] | None:
        """An entry that cannot be understood must not be silently ignored."""
        for entry in entries or []:
            if entry.strip():
                HostEntry.parse(entry)
        return entries

"""What a workspace's own config file may set before the person trusts it: one table, every key.

Deny by default. A key missing here waits for trust like any loosening one, and a test walks
the settings models and fails on the first key that is not here — so a new setting is safe
from a cloned repository until someone decides, in this table, what it may do:

- ``harmless``: how the agent works, not what it may do or where data goes (a model, a turn
  limit's strategy, a notification); applied untrusted.
- ``tightening``: applied untrusted only when the value tightens the person's own (a stricter
  approval mode, more deny rules, a guard made stricter); otherwise it waits. The rule for
  each lives in ``tui.security.trust``.
- ``trust``: runs a program, sends data or a key elsewhere, reads a file into requests, or
  changes what tmux/SSH the agent drives; waits for trust whatever the value.
- ``never``: only the person's own config sets it (trust records, saved grants, secret
  allowances); dropped from a workspace file even when trusted.

A ``*`` stands for any one name (a tool, a server, a sub-agent). A few tables are judged as one
value (``LEAF_TABLES``): an MCP server or an OpenAPI spec.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["harmless", "tightening", "trust", "never"]
Why = Literal["loosens", "runs", "sends"]

LEAF_TABLES = frozenset({"mcp.servers.*", "openapi.*"})
"""Tables judged as one value: their keys are not classified one by one."""

SETTING_KINDS: dict[str, Kind] = {
    # [provider]
    "provider.name": "trust",
    "provider.api": "harmless",
    "provider.model": "harmless",
    "provider.base_url": "trust",
    "provider.api_key": "trust",
    "provider.stream": "harmless",
    "provider.max_tokens": "harmless",
    "provider.request_timeout": "harmless",
    "provider.idle_timeout": "harmless",
    "provider.context_window": "harmless",
    "provider.thinking_budget": "harmless",
    "provider.reasoning_effort": "harmless",
    # [agent]
    "agent.max_turns": "tightening",
    "agent.strategy": "harmless",
    "agent.batch_size": "harmless",
    "agent.system_prompt": "harmless",
    "agent.subagent_max_turns": "tightening",
    "agent.json_schema": "trust",
    "agent.defer_tools_above": "harmless",
    "agent.loop_ping_pong_cycles": "tightening",
    "agent.loop_no_progress_repeats": "tightening",
    "agent.output_disk_cap": "tightening",
    "agent.send_ahead": "never",
    "agent.warm_start": "never",
    "agent.tool_timeout": "tightening",
    "agent.tool_timeouts.*": "tightening",
    # [tools]
    "tools.*": "tightening",
    # [security]
    "security.permission_ceiling": "tightening",
    "security.workspace_only": "tightening",
    "security.forbidden_paths": "tightening",
    "security.extra_forbidden_paths": "tightening",
    "security.allowed_secret_paths": "never",
    "security.allowed_roots": "tightening",
    "security.allow": "tightening",
    "security.ask": "tightening",
    "security.deny": "tightening",
    "security.command_allowlist": "tightening",
    "security.command_denylist": "tightening",
    "security.max_actions_per_hour": "tightening",
    "security.env_allowlist": "tightening",
    "security.env_passthrough": "tightening",
    "security.allowed_hosts": "tightening",
    "security.blocked_hosts": "tightening",
    "security.block_high_risk_commands": "tightening",
    "security.require_approval_for_medium_risk": "tightening",
    # [sandbox]: tightening applies at once; turning it off never comes from a workspace
    "sandbox.mode": "tightening",
    "sandbox.network": "tightening",
    "sandbox.servers_network": "tightening",
    "sandbox.writable": "never",
    # [browser]: which program runs, what it may save or read
    "browser.executable": "trust",
    "browser.allow_downloads": "trust",
    "browser.allow_file_urls": "trust",
    "browser.action_timeout": "harmless",
    # [approval]
    "approval.mode": "tightening",
    "approval.timeout": "harmless",
    "approval.grants": "never",
    # [hooks]
    "hooks.pre_tool_use": "trust",
    "hooks.post_tool_use": "trust",
    "hooks.post_tool_use_failure": "trust",
    # [notify]
    "notify.enabled": "harmless",
    "notify.bell": "harmless",
    "notify.desktop": "harmless",
    "notify.min_turn_seconds": "harmless",
    # [tmux]
    "tmux.socket_name": "trust",
    "tmux.session": "trust",
    "tmux.keep_session": "trust",
    "tmux.max_sessions": "harmless",
    "tmux.max_panes": "harmless",
    "tmux.allow_user_pane_capture": "never",
    "tmux.history_limit": "harmless",
    # [ssh]
    "ssh.host": "trust",
    "ssh.identity_file": "trust",
    "ssh.known_hosts": "trust",
    "ssh.connect_timeout": "harmless",
    # [fleet]: which hosts to connect to waits for trust; rules that tighten apply at once
    "fleet.inventory": "trust",
    "fleet.ssh": "trust",
    "fleet.limit": "trust",
    "fleet.forks": "harmless",
    "fleet.blocked": "tightening",
    "fleet.groups.*.approval_mode": "tightening",
    "fleet.groups.*.always_ask": "tightening",
    "fleet.groups.*.allow": "tightening",
    "fleet.groups.*.ask": "tightening",
    "fleet.groups.*.deny": "tightening",
    "fleet.groups.*.blocked": "tightening",
    "fleet.hosts.*.approval_mode": "tightening",
    "fleet.hosts.*.always_ask": "tightening",
    "fleet.hosts.*.allow": "tightening",
    "fleet.hosts.*.ask": "tightening",
    "fleet.hosts.*.deny": "tightening",
    "fleet.hosts.*.blocked": "tightening",
    # [web]
    "web.search_url": "trust",
    # [mcp], [openapi]
    "mcp.servers.*": "trust",
    "mcp.trusted_projects": "never",
    "openapi.*": "trust",
    # [cron]
    "cron.enabled": "tightening",
    "cron.command_timeout": "harmless",
    # [subagents.NAME]
    "subagents.*.description": "harmless",
    "subagents.*.system_prompt": "harmless",
    "subagents.*.tools": "harmless",
    "subagents.*.model": "harmless",
    "subagents.*.provider": "trust",
    "subagents.*.base_url": "trust",
    "subagents.*.max_turns": "harmless",
    "subagents.*.thinking": "harmless",
    "subagents.*.enabled": "harmless",
    # [trust]: the records themselves
    "trust": "never",
}
"""Every settings key and what a workspace file may do with it (see the module's words)."""

SECTION_WHY: dict[str, Why] = {
    "provider": "sends",
    "web": "sends",
    "openapi": "sends",
    "subagents": "sends",
    "agent": "sends",
    "hooks": "runs",
    "mcp": "runs",
    "tmux": "runs",
    "ssh": "runs",
    "fleet": "runs",
    "cron": "runs",
    "browser": "runs",
}
"""What a held key of each section would do, for the trust screen's groups."""


def _candidates(path: tuple[str, ...]) -> list[str]:
    """``path`` as table keys, most specific first: the names themselves, then ``*``s."""
    keys = [".".join(path)]
    for index in range(len(path) - 1, 0, -1):
        starred = (*path[:index], "*", *path[index + 1 :])
        keys.append(".".join(starred))
    return keys


def kind_of(path: tuple[str, ...]) -> Kind | None:
    """The kind of the key at ``path`` (or of a table it is inside), None when unknown."""
    for length in range(len(path), 0, -1):
        for key in _candidates(path[:length]):
            if key in SETTING_KINDS:
                return SETTING_KINDS[key]
    return None


def why_of(path: tuple[str, ...]) -> Why:
    """How a held key is grouped on the trust screen."""
    return SECTION_WHY.get(path[0], "loosens") if path else "loosens"

"""Workspace trust: what a repository's own files may change before the person trusts it.

A cloned repository's ``.agent-tui.toml`` and ``.mcp.json`` are written by whoever wrote the
repository. They may always *tighten* what the person configured (a stricter approval mode, an
extra deny rule, a tool switched off) and set what is harmless (a model, a system prompt). What
would loosen approvals or security, run a program (hooks, MCP servers), send a secret or a
prompt elsewhere (base URLs, search URLs, OpenAPI specs), pass the environment on, or touch
trust itself waits until the person trusts that workspace; some keys (trust records, saved
grants) never come from a workspace file at all.

Trust is recorded in the person's own config, keyed by the workspace's real path and a digest of
those files' content, so a changed file is asked about again. Unknown keys are held back by
default: a new setting is safe from a workspace until someone decides it is harmless.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MCP_PROJECT_FILE = ".mcp.json"
APPROVAL_ORDER = ("read-only", "ask", "auto-edit", "full-auto")
PERMISSION_ORDER = ("read-only", "workspace-write", "danger-full-access")

Why = Literal["loosens", "runs", "sends", "never"]

# --------------------------------------------------------------------------- records


class TrustedWorkspace(BaseModel):
    """One trusted workspace, as ``[[trust.workspaces]]`` in the user's config."""

    model_config = ConfigDict(extra="forbid")

    path: str
    """The workspace's real path."""
    digest: str
    """``sha256:…`` of its ``.agent-tui.toml`` and ``.mcp.json`` when trusted; a changed file
    no longer matches, so the person is asked again."""
    trusted_at: float = 0
    """Unix seconds when the person trusted it."""


class TrustSettings(BaseModel):
    """Workspaces whose own files the person has trusted (written by ``/trust`` and
    ``agent-tui trust``; never read from a workspace file)."""

    model_config = ConfigDict(extra="forbid")

    workspaces: list[TrustedWorkspace] = Field(default_factory=list)


def workspace_files(workspace: Path, config_file: Path | None) -> list[Path]:
    """The files of a workspace that can change settings: its ``.agent-tui.toml`` (which may
    sit in a parent folder) and its ``.mcp.json``."""
    files = [config_file] if config_file is not None else []
    mcp = workspace / MCP_PROJECT_FILE
    if mcp.is_file():
        files.append(mcp)
    return files


def files_digest(files: Iterable[Path]) -> str:
    """One digest over each file's path and bytes: moving or editing either asks again."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path).encode("utf-8", "surrogateescape") + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"\0unreadable")
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def is_recorded(records: Iterable[Mapping[str, Any]], key: str, digest: str) -> bool:
    """Whether the user's config trusts exactly these files of this workspace."""
    return any(
        isinstance(record, Mapping) and record.get("path") == key and record.get("digest") == digest
        for record in records
    )


def save_trust(config_file: Path, key: str, digest: str) -> None:
    """Record trust in the user's config, keeping the rest of the file and its comments; an
    older record for the same workspace is replaced."""
    import tomlkit

    document = (
        tomlkit.parse(config_file.read_text(encoding="utf-8"))
        if config_file.exists()
        else tomlkit.document()
    )
    section = document.get("trust")
    if section is None:
        section = tomlkit.table()
        document["trust"] = section
    records = section.get("workspaces")
    if records is None:
        records = tomlkit.aot()
        section["workspaces"] = records
    for index in reversed(range(len(records))):
        if str(records[index].get("path")) == key:
            del records[index]
    entry = tomlkit.table()
    entry["path"] = key
    entry["digest"] = digest
    entry["trusted_at"] = round(time.time(), 3)
    records.append(entry)
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(tomlkit.dumps(document), encoding="utf-8")


def revoke_trust(config_file: Path, key: str) -> bool:
    """Forget every trust record of ``key``; False when there was none."""
    import tomlkit

    if not config_file.exists():
        return False
    document = tomlkit.parse(config_file.read_text(encoding="utf-8"))
    records = (document.get("trust") or {}).get("workspaces")
    if not records:
        return False
    before = len(records)
    for index in reversed(range(len(records))):
        if str(records[index].get("path")) == key:
            del records[index]
    if len(records) == before:
        return False
    config_file.write_text(tomlkit.dumps(document), encoding="utf-8")
    return True


# --------------------------------------------------------------------------- review


@dataclass(frozen=True)
class HeldChange:
    """One thing a workspace file would change that waits for trust (or is never taken)."""

    key: str
    """The dotted setting, or ``.mcp.json servers.NAME``."""
    effect: str
    """What it would do, in words a person can check against the file."""
    why: Why
    source: str
    """The file (and line) it comes from."""


@dataclass
class Review:
    """A workspace layer split into what applies now and what waits."""

    safe: dict[str, Any] = field(default_factory=dict)
    """Tightening and harmless values: applied whether or not the workspace is trusted."""
    trusted: dict[str, Any] = field(default_factory=dict)
    """Everything but the never-keys: applied once the workspace is trusted."""
    held: list[HeldChange] = field(default_factory=list)
    """What trusting would add (the trust screen lists exactly these)."""
    refused: list[HeldChange] = field(default_factory=list)
    """Keys a workspace file may never set, dropped either way."""


_NEVER = {
    ("trust",),
    ("approval", "grants"),
    ("mcp", "trusted_projects"),
    ("security", "allowed_secret_paths"),
    ("tmux", "allow_user_pane_capture"),
    ("sandbox", "writable"),
}
"""Keys only the person's own config sets."""

_NEUTRAL = {
    ("provider", "model"),
    ("provider", "stream"),
    ("provider", "max_tokens"),
    ("provider", "request_timeout"),
    ("agent",),
    ("approval", "timeout"),
    ("tmux", "max_sessions"),
    ("tmux", "max_panes"),
    ("tmux", "history_limit"),
    ("cron", "command_timeout"),
    ("ssh", "connect_timeout"),
    ("notify",),
}
"""Keys that change how the agent works but not what it may do or where data goes."""

_SUBAGENT_NEUTRAL = frozenset(
    {"description", "system_prompt", "tools", "model", "max_turns", "thinking", "enabled"}
)
"""``[subagents.NAME]`` keys that shape a sub-agent but not where its requests go: its tools
are a subset of the session's, each call still under the same approvals."""

_SENDS = {("provider",), ("web",), ("openapi",)}
_RUNS = {("hooks",), ("mcp",), ("tmux",), ("ssh",), ("cron",)}


def _within(path: tuple[str, ...], keys: Iterable[tuple[str, ...]]) -> bool:
    return any(path[: len(key)] == key for key in keys)


def review_layer(
    layer: Mapping[str, Any],
    base: Mapping[str, Any],
    locate: Any = None,
    source: str = "",
) -> Review:
    """Split a workspace file's values against ``base`` (the effective settings below it).

    Args:
        layer: the parsed workspace file.
        base: the settings the workspace file would change, as plain data (defaults and the
            person's own config merged and validated), to tell tightening from loosening.
        locate: ``(key_path) -> (file, line)`` for messages, or None.
        source: the file, for messages when ``locate`` cannot say.
    """
    review = Review()

    def where(path: tuple[str, ...]) -> str:
        if locate is None:
            return source
        file, line = locate(path)
        return f"{file}:{line}" if line else str(file)

    def hold(path: tuple[str, ...], effect: str, why: Why) -> None:
        target = review.refused if why == "never" else review.held
        target.append(HeldChange(".".join(path), effect, why, where(path)))

    def put(into: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
        node = into
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value

    def walk(node: Mapping[str, Any], prefix: tuple[str, ...]) -> None:
        for key, value in node.items():
            path = (*prefix, str(key))
            if _within(path, _NEVER):
                hold(path, f"sets {_show(value)}, which only your own config may set", "never")
                continue
            if isinstance(value, Mapping) and not _leaf_table(path):
                walk(value, path)
                continue
            put(review.trusted, path, value)
            verdict = _judge(path, value, _lookup(base, path), base)
            if verdict is None:
                put(review.safe, path, value)
            else:
                hold(path, *verdict)

    walk(layer, ())
    return review


def _leaf_table(path: tuple[str, ...]) -> bool:
    """Tables judged as one value: a server, a spec, the per-tool switches' parent is not."""
    return (len(path) == 3 and path[:2] == ("mcp", "servers")) or (
        len(path) == 2 and path[0] == "openapi"
    )


def _lookup(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _show(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_set(value: Any) -> set[str]:
    return {str(item) for item in value} if isinstance(value, list) else set()


def _rank(order: tuple[str, ...], value: Any) -> int:
    text = str(getattr(value, "value", value))
    return order.index(text) if text in order else len(order)


def _judge(
    path: tuple[str, ...], value: Any, base: Any, root: Mapping[str, Any] | None = None
) -> tuple[str, Why] | None:
    """None when the value may apply untrusted, else (what it would do, why it waits).

    ``root``: all the settings below the workspace file, for keys whose base lives elsewhere
    (a tool's own time limit falls back to the default one).
    """
    dotted = ".".join(path)
    if value == base:
        return None
    if path[:2] in (("agent", "tool_timeout"), ("agent", "tool_timeouts")):
        return _judge_time_limit(path, value, base, root or {})
    if isinstance(value, Mapping) and value == {"enabled": False}:
        return None  # switching off a server or an API the person configured
    if path == ("approval", "mode"):
        if _rank(APPROVAL_ORDER, value) <= _rank(APPROVAL_ORDER, base):
            return None
        return f"approval mode {_plain(base)} → {_plain(value)}", "loosens"
    if path[0] == "security" and len(path) == 2:
        return _judge_security(path[1], value, base)
    if path[0] == "sandbox" and len(path) == 2:
        return _judge_sandbox(path[1], value, base)
    if path[0] == "tools" and len(path) == 2:
        if value is False or base is not False:
            return None
        return f"switches the tool {path[1]} back on", "loosens"
    if path[-1] == "enabled" and value is False:
        return None
    if path == ("agent", "output_disk_cap"):
        if isinstance(value, int) and isinstance(base, int) and value <= base:
            return None
        return f"raises the disk kept for command output to {_show(value)} bytes", "loosens"
    if _within(path, _NEUTRAL):
        return None
    if path[0] == "subagents" and len(path) == 3:
        if path[2] in _SUBAGENT_NEUTRAL:
            return None
        if path[2] == "base_url":
            return (
                f"sends your API key and the sub-agent {path[1]}'s prompts to {_show(value)}",
                "sends",
            )
        if path[2] == "provider":
            return f"switches the sub-agent {path[1]}'s provider to {_show(value)}", "sends"
    if path == ("provider", "base_url"):
        return f"sends your API key and prompts to {_show(value)}", "sends"
    if path == ("provider", "api_key"):
        return "uses an API key from the workspace file", "sends"
    if path == ("provider", "name"):
        return f"switches the provider to {_show(value)}", "sends"
    if path == ("web", "search_url"):
        return f"sends web searches to {_show(value)}", "sends"
    if path[0] == "openapi":
        spec = value.get("spec") if isinstance(value, Mapping) else value
        return f"adds the API {path[-1]} from {_show(spec, 60)}", "sends"
    if path[:2] == ("mcp", "servers"):
        return f"starts the MCP server {path[-1]}: {_server(value)}", "runs"
    if path[0] == "hooks":
        items = value if isinstance(value, list) else [value]
        commands = [h.get("command") if isinstance(h, Mapping) else h for h in items]
        return f"runs {_show(commands)} around tool calls", "runs"
    if path[0] == "ssh":
        return f"sets ssh {path[-1]} to {_show(value)}", "runs"
    if path[0] == "tmux":
        return f"sets tmux {path[-1]} to {_show(value)}", "runs"
    if _within(path, _SENDS):
        return f"sets {dotted} to {_show(value)}", "sends"
    if _within(path, _RUNS):
        return f"sets {dotted} to {_show(value)}", "runs"
    return f"sets {dotted} to {_show(value)}", "loosens"


def _judge_time_limit(
    path: tuple[str, ...], value: Any, base: Any, root: Mapping[str, Any]
) -> tuple[str, Why] | None:
    """A shorter tool time limit applies at once; a longer one, or none, waits for trust."""
    if len(path) == 3:  # one tool's own limit; without one it has the default's
        if not isinstance(base, int | float):
            base = _lookup(root, ("agent", "tool_timeout"))
    elif len(path) != 2:
        return f"sets {'.'.join(path)} to {_show(value)}", "loosens"
    is_limit = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    if is_limit and (not base or value <= base):
        return None
    what = "the tool time limit" if len(path) == 2 else f"the time limit of {path[2]}"
    return f"raises {what} to {_show(value) if is_limit else 'none'}", "loosens"


_SANDBOX_ORDER = {
    "mode": ("required", "auto", "off"),
    "network": ("none", "proxy"),
    "servers_network": ("none", "proxy"),
}
"""Each ``[sandbox]`` choice, strictest first."""


def _judge_sandbox(key: str, value: Any, base: Any) -> tuple[str, Why] | None:
    """Tightening the sandbox applies at once; loosening its mode never comes from a workspace
    file (turning it off is the person's own choice), loosening its network waits for trust."""
    order = _SANDBOX_ORDER.get(key)
    if order is not None and _rank(order, value) <= _rank(order, base):
        return None
    if key == "mode":
        return (
            f"sets the sandbox mode to {_show(value)}, which only your own config may set",
            "never",
        )
    return (
        f"lets sandboxed commands reach the network ([sandbox] {key} = {_show(value)})",
        "loosens",
    )


def _plain(value: Any) -> str:
    return str(getattr(value, "value", value))


def _server(value: Any) -> str:
    if not isinstance(value, Mapping):
        return _show(value)
    if value.get("command"):
        words = [str(value["command"]), *(str(a) for a in value.get("args") or [])]
        return " ".join(words)[:120]
    return str(value.get("url", "?"))


_SUPERSET_TIGHTENS = {"forbidden_paths", "extra_forbidden_paths", "ask", "deny"}
_SUPERSET_TIGHTENS |= {"command_denylist", "blocked_hosts"}
_SUBSET_TIGHTENS = {"allow", "allowed_roots", "env_allowlist", "env_passthrough"}
_NONE_MEANS_ANY = {"command_allowlist", "allowed_hosts"}
_ON_TIGHTENS = {"block_high_risk_commands", "require_approval_for_medium_risk"}


def _judge_security(key: str, value: Any, base: Any) -> tuple[str, Why] | None:
    if key == "permission_ceiling":
        if _rank(PERMISSION_ORDER, value) <= _rank(PERMISSION_ORDER, base):
            return None
        return f"raises the permission ceiling to {_plain(value)}", "loosens"
    if key == "workspace_only":
        if value is True:
            return None
        return "lets tools leave the workspace", "loosens"
    if key in _ON_TIGHTENS:
        if value is True:
            return None
        return f"turns off security.{key}", "loosens"
    if key == "max_actions_per_hour":
        if isinstance(value, int) and value > 0 and (not base or value <= base):
            return None
        return f"raises the hourly action limit to {_show(value)}", "loosens"
    if key in _SUPERSET_TIGHTENS:
        missing = sorted(_as_set(base) - _as_set(value))
        if isinstance(value, list) and not missing:
            return None
        return f"drops security.{key} entries {_show(missing)}", "loosens"
    if key in _SUBSET_TIGHTENS:
        added = sorted(_as_set(value) - _as_set(base))
        if isinstance(value, list) and not added:
            return None
        verb = "passes" if key.startswith("env") else "adds"
        return f"{verb} security.{key} {_show(added)}", "loosens"
    if key in _NONE_MEANS_ANY:
        if isinstance(value, list) and (base is None or _as_set(value) <= _as_set(base)):
            return None
        added = sorted(_as_set(value) - _as_set(base)) if base is not None else ["(any)"]
        return f"widens security.{key} by {_show(added)}", "loosens"
    return f"sets security.{key} to {_show(value)}", "loosens"


def review_mcp_file(path: Path) -> list[HeldChange]:
    """What a project's ``.mcp.json`` would start, for the trust screen (never raises)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [HeldChange(f"{MCP_PROJECT_FILE}", "an unreadable server list", "runs", str(path))]
    servers = data.get("mcpServers") if isinstance(data, Mapping) else None
    if not isinstance(servers, Mapping):
        return []
    return [
        HeldChange(
            f"{MCP_PROJECT_FILE} servers.{name}",
            f"starts the MCP server {name}: {_server(server)}",
            "runs",
            str(path),
        )
        for name, server in servers.items()
    ]


@dataclass(frozen=True)
class WorkspaceTrust:
    """Where a workspace stands: its files, what they would change, and whether that applies."""

    key: str
    """The workspace's real path, as trust records name it."""
    files: tuple[Path, ...] = ()
    digest: str = ""
    held: tuple[HeldChange, ...] = ()
    """Changes that wait for trust (applied when ``trusted``)."""
    refused: tuple[HeldChange, ...] = ()
    """Keys a workspace file may never set: dropped whether trusted or not."""
    trusted: bool = False
    """The held changes apply in this run (recorded trust or ``--trust-workspace``)."""
    recorded: bool = False
    """The user's config trusts exactly these files."""

    @property
    def pending(self) -> bool:
        """Something waits for the person's decision."""
        return bool(self.held) and not self.trusted

    def report(self) -> str:
        """Every held and refused change, one per line, for ``agent-tui trust``."""
        lines = [f"{self.key}: " + ", ".join(str(f) for f in self.files)]
        if not self.held and not self.refused:
            lines.append("  its files only tighten your settings: nothing waits for trust")
        for change in self.held:
            lines.append(f"  {change.why:<8} {change.key}: {change.effect} ({change.source})")
        for change in self.refused:
            lines.append(f"  ignored  {change.key}: {change.effect} ({change.source})")
        return "\n".join(lines)

    def summary(self) -> str:
        """One line for headless runs and notices."""
        names = ", ".join(dict.fromkeys(change.key for change in self.held))
        files = ", ".join(str(f) for f in self.files)
        return (
            f"ignoring settings from {files} until this workspace is trusted ({names}); "
            "run `agent-tui trust` or pass --trust-workspace to accept them"
        )


_CONTROL_NAMES = frozenset({".agent-tui.toml", MCP_PROJECT_FILE, ".gitmodules"})
_CONTROL_DIRS = frozenset({".agent-tui"})
_GIT_CONTROL = frozenset({"hooks", "config", "config.worktree"})


def control_file(path: Path) -> str | None:
    """Why writing ``path`` changes what runs later, if it does: the workspace's own settings,
    its skills, git hooks and git config (``core.fsmonitor`` turns ``git status`` into a program
    run). Writes there ask even in auto-edit mode."""
    parts = path.parts
    if path.name in _CONTROL_NAMES:
        return f"{path.name} holds settings the agent would run under"
    for index, part in enumerate(parts):
        if part in _CONTROL_DIRS:
            return f"{part}/ holds this workspace's agent settings and skills"
        if part == ".git" and index + 1 < len(parts) and parts[index + 1] in _GIT_CONTROL:
            return f".git/{parts[index + 1]} decides what git runs"
        if part == ".claude" and index + 1 < len(parts) and parts[index + 1] == "skills":
            return ".claude/skills holds instructions the agent loads"
    return None

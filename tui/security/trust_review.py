"""Reviewing a workspace's own settings: what applies untrusted, what waits, what never applies.

Every key is classified in one table (``tui.security.setting_kinds``): harmless keys apply,
tightening keys apply when they tighten the person's own value (the rules are here), keys that
run, send or loosen wait for trust, and a few never come from a workspace. A key the table
does not know waits too.

Each held change says what it would do in words, and carries the whole of what it would run or
send (``details``): a server's command, every argument and its environment as the file writes
them, a hook's command, a URL — never cut, so the trust screen can show exactly what trusting
starts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tui.security.setting_kinds import LEAF_TABLES, kind_of, why_of

MCP_PROJECT_FILE = ".mcp.json"
APPROVAL_ORDER = ("read-only", "ask", "auto-edit", "full-auto")
PERMISSION_ORDER = ("read-only", "workspace-write", "danger-full-access")

Why = Literal["loosens", "runs", "sends", "never"]
RISK_ORDER: dict[str, int] = {"runs": 0, "sends": 1, "loosens": 2, "never": 3}
"""Riskiest first: what runs a program, then what sends data away, then what loosens."""


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
    details: tuple[str, ...] = ()
    """The whole of what it runs or sends, one item a line (``command: …``, ``env: K=V``)."""


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

    def hold(path: tuple[str, ...], effect: str, why: Why, value: Any) -> None:
        target = review.refused if why == "never" else review.held
        target.append(HeldChange(".".join(path), effect, why, where(path), details(path, value)))

    def put(into: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
        node = into
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value

    def walk(node: Mapping[str, Any], prefix: tuple[str, ...]) -> None:
        for key, value in node.items():
            path = (*prefix, str(key))
            if kind_of(path) == "never":
                effect = f"sets {_show(value)}, which only your own config may set"
                hold(path, effect, "never", value)
                continue
            if isinstance(value, Mapping) and not _leaf_table(path):
                walk(value, path)
                continue
            put(review.trusted, path, value)
            verdict = _judge(path, value, _lookup(base, path), base)
            if verdict is None:
                put(review.safe, path, value)
            else:
                hold(path, *verdict, value)

    walk(layer, ())
    review.held.sort(key=lambda change: RISK_ORDER[change.why])
    return review


def _leaf_table(path: tuple[str, ...]) -> bool:
    """Tables judged as one value: a server, a spec."""
    return any(
        len(path) == len(pattern.split("."))
        and all(want in ("*", part) for part, want in zip(path, pattern.split("."), strict=True))
        for pattern in LEAF_TABLES
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


def _plain(value: Any) -> str:
    return str(getattr(value, "value", value))


def _judge(
    path: tuple[str, ...], value: Any, base: Any, root: Mapping[str, Any] | None = None
) -> tuple[str, Why] | None:
    """None when the value may apply untrusted, else (what it would do, why it waits).

    ``root``: all the settings below the workspace file, for keys whose base lives elsewhere
    (a tool's own time limit falls back to the default one).
    """
    if value == base:
        return None
    if path[:2] in (("agent", "tool_timeout"), ("agent", "tool_timeouts")):
        return _judge_time_limit(path, value, base, root or {})
    if isinstance(value, Mapping) and value == {"enabled": False}:
        return None  # switching off a server or an API the person configured
    kind = kind_of(path)
    if kind == "harmless":
        return None
    if kind == "tightening":
        return _tightens(path, value, base)
    if kind is None:
        return f"sets {'.'.join(path)} to {_show(value)} (a setting not known to be safe)", (
            "loosens"
        )
    return _held_effect(path, value), why_of(path)


def _tightens(path: tuple[str, ...], value: Any, base: Any) -> tuple[str, Why] | None:
    """The rules of the ``tightening`` keys: None when this value tightens."""
    if path == ("approval", "mode"):
        if _rank(APPROVAL_ORDER, value) <= _rank(APPROVAL_ORDER, base):
            return None
        return f"approval mode {_plain(base)} → {_plain(value)}", "loosens"
    if path[0] == "security" and len(path) == 2:
        return _judge_security(path[1], value, base)
    if path[0] == "tools" and len(path) == 2:
        if value is False or base is not False:
            return None
        return f"switches the tool {path[1]} back on", "loosens"
    if path[0] == "sandbox" and len(path) == 2:
        return _judge_sandbox(path[1], value, base)
    if path[0] == "fleet":
        return _judge_fleet(path, value, base)
    if path == ("cron", "enabled"):
        return None if value is False else ("runs scheduled jobs again", "loosens")
    if path == ("agent", "output_disk_cap"):
        if isinstance(value, int) and isinstance(base, int) and value <= base:
            return None
        return f"raises the disk kept for command output to {_show(value)} bytes", "loosens"
    if path in (("agent", "max_turns"), ("agent", "subagent_max_turns")):
        if isinstance(value, int) and value >= 1 and (base is None or value <= base):
            return None
        return f"raises {path[1]} to {_show(value)}", "loosens"
    if path in (("agent", "loop_ping_pong_cycles"), ("agent", "loop_no_progress_repeats")):
        # 0 turns the guard off; a smaller count catches a loop sooner.
        if isinstance(value, int) and value >= 1 and (base == 0 or value <= base):
            return None
        what = "turns off the loop guard" if value == 0 else "lets loops run longer"
        return f"{what} {path[1]} ({_show(base)} → {_show(value)})", "loosens"
    return f"sets {'.'.join(path)} to {_show(value)}", "loosens"


def _judge_fleet(path: tuple[str, ...], value: Any, base: Any) -> tuple[str, Why] | None:
    """More blocked hosts, stricter per-host rules: at once; the rest waits for trust."""
    key = path[-1]
    where = "fleet " + ".".join(path[1:-1]) if len(path) > 2 else "fleet"
    if key == "approval_mode":
        # Unset follows the session's mode, which may be read-only: only that is sure.
        if _plain(value) == "read-only" or (
            base is not None and _rank(APPROVAL_ORDER, value) <= _rank(APPROVAL_ORDER, base)
        ):
            return None
        return f"{where}: approval mode {_plain(base)} → {_plain(value)}", "loosens"
    if key in ("always_ask", "blocked") and len(path) > 2:
        return None if value is True or value == base else (f"{where}: {key} off", "loosens")
    if key in ("blocked", "ask", "deny"):
        missing = sorted(_as_set(base) - _as_set(value))
        if isinstance(value, list) and not missing:
            return None
        return f"{where}: drops {key} entries {_show(missing)}", "loosens"
    if key == "allow":
        added = sorted(_as_set(value) - _as_set(base))
        if isinstance(value, list) and not added:
            return None
        return f"{where}: allows {_show(added)} without asking", "loosens"
    return f"sets {'.'.join(path)} to {_show(value)}", "loosens"


def _held_effect(path: tuple[str, ...], value: Any) -> str:
    """What a ``trust`` key would do, in words."""
    if path[0] == "subagents" and len(path) == 3:
        if path[2] == "base_url":
            return f"sends your API key and the sub-agent {path[1]}'s prompts to {_show(value)}"
        return f"switches the sub-agent {path[1]}'s {path[2]} to {_show(value)}"
    if path == ("provider", "base_url"):
        return f"sends your API key and prompts to {_show(value)}"
    if path == ("provider", "api_key"):
        return "uses an API key from the workspace file"
    if path == ("provider", "name"):
        return f"switches the provider to {_show(value)}"
    if path == ("web", "search_url"):
        return f"sends web searches to {_show(value)}"
    if path == ("agent", "json_schema"):
        return f"reads {_show(value)} and sends it with every request"
    if path[0] == "openapi":
        spec = value.get("spec") if isinstance(value, Mapping) else value
        return f"adds the API {path[-1]} from {_show(spec, 60)}"
    if path[:2] == ("mcp", "servers"):
        return f"starts the MCP server {path[-1]}: {_server(value)}"
    if path[0] == "hooks":
        items = value if isinstance(value, list) else [value]
        count = len(items)
        return f"runs {count} command{'s' if count != 1 else ''} around tool calls ({path[1]})"
    return f"sets {path[0]} {'.'.join(path[1:])} to {_show(value)}"


def _server(value: Any) -> str:
    """A server in a few words (its whole command is in the details)."""
    if not isinstance(value, Mapping):
        return _show(value)
    if value.get("command"):
        return _show(" ".join([str(value["command"]), *(str(a) for a in value.get("args") or [])]))
    return _show(value.get("url", "?"))


def details(path: tuple[str, ...], value: Any) -> tuple[str, ...]:
    """The whole value, one line an item: a server's command, arguments and environment, a
    hook's command, a URL. Short plain values need none (the effect says them whole)."""
    if (path[:2] == ("mcp", "servers") or path[:1] == (MCP_PROJECT_FILE,)) and isinstance(
        value, Mapping
    ):
        return server_details(value)
    if path[0] == "hooks":
        items = value if isinstance(value, list) else [value]
        lines = []
        for hook in items:
            if isinstance(hook, Mapping):
                lines.append(f"command: {hook.get('command')}")
                lines.append(f"  for tools matching {hook.get('matcher', '*')}")
            else:
                lines.append(f"command: {hook}")
        return tuple(lines)
    if isinstance(value, Mapping):
        return tuple(f"{key}: {json.dumps(item, default=str)}" for key, item in value.items())
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return (text,) if len(text) > 60 else ()


def server_details(server: Mapping[str, Any]) -> tuple[str, ...]:
    """What a server entry runs, as written (variables are not filled in): its command, each
    argument, its environment and working directory, or its URL and header names."""
    lines: list[str] = []
    if server.get("command"):
        lines.append(f"command: {server['command']}")
        for argument in server.get("args") or []:
            lines.append(f"  arg: {argument}")
    if server.get("url"):
        lines.append(f"url: {server['url']}")
    env = server.get("env")
    if isinstance(env, Mapping):
        lines.extend(f"env: {name}={item}" for name, item in env.items())
    if server.get("cwd"):
        lines.append(f"cwd: {server['cwd']}")
    headers = server.get("headers")
    if isinstance(headers, Mapping):
        lines.extend(f"header: {name}: {item}" for name, item in headers.items())
    return tuple(lines)


_SUPERSET_TIGHTENS = {"forbidden_paths", "extra_forbidden_paths", "ask", "deny"}
_SUPERSET_TIGHTENS |= {"command_denylist", "blocked_hosts"}
_SUBSET_TIGHTENS = {"allow", "allowed_roots", "env_allowlist", "env_passthrough"}
_NONE_MEANS_ANY = {"command_allowlist", "allowed_hosts"}


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
        return f"sets the sandbox mode to {_show(value)}, which only your own config may set", (
            "never"
        )
    return f"lets sandboxed commands reach the network ([sandbox] {key} = {_show(value)})", (
        "loosens"
    )


def _judge_security(key: str, value: Any, base: Any) -> tuple[str, Why] | None:
    if key == "permission_ceiling":
        if _rank(PERMISSION_ORDER, value) <= _rank(PERMISSION_ORDER, base):
            return None
        return f"raises the permission ceiling to {_plain(value)}", "loosens"
    if key == "workspace_only":
        if value is True:
            return None
        return "lets tools leave the workspace", "loosens"
    if key in ("block_high_risk_commands", "require_approval_for_medium_risk"):
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
    except (OSError, ValueError, RecursionError):
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
            server_details(server) if isinstance(server, Mapping) else (),
        )
        for name, server in servers.items()
    ]

"""Settings: one validated model built from layered TOML files, the environment and CLI flags.

Why layers: a person keeps their provider and taste in the user file, a project pins what its
workspace needs (a model, rules, hooks) in ``.agent-tui.toml``, CI overrides a value with an
environment variable, and a flag wins for one run. Each layer is merged section by section, so a
workspace file that sets only ``[provider].model`` keeps the user file's ``[provider].name``.

Why the bookkeeping: a config typo found at start-up is only useful if the message says where
to fix it. Every value remembers the layer that set it, so a validation error names the file,
the line and the key (or the environment variable) instead of a bare pydantic path. Every
section forbids unknown keys for the same reason: ``max_turn = 5`` must fail, not be ignored.

Lists are values, not sections: a later layer's ``[security].allow`` replaces an earlier one,
it is never concatenated (so a workspace cannot quietly extend what a user file restricts by
accident, and what is in force is always what one file says).
"""

from __future__ import annotations

import ast
import bisect
import copy
import enum
import inspect
import itertools
import json
import re
import textwrap
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tomlkit
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from tui.agent.hooks import HookCommand
from tui.agent.subagent_settings import SubAgentSettings
from tui.errors import AgentTuiError
from tui.locations import config_dir
from tui.security.own_environ import process_environ
from tui.security.permissions import ApprovalMode
from tui.security.rules import InvalidRule, Rule
from tui.security.settings import SecuritySettings
from tui.security.trust import (
    MCP_PROJECT_FILE,
    TrustSettings,
    WorkspaceTrust,
    files_digest,
    is_recorded,
    review_layer,
    review_mcp_file,
    workspace_files,
)
from tui.spill import DEFAULT_DISK_CAP
from tui.tools.loops import DEFAULT_NO_PROGRESS_REPEATS, DEFAULT_PING_PONG_CYCLES

ENV_PREFIX = "AGENT_TUI_"
ENV_NESTED_DELIMITER = "__"
USER_CONFIG_NAME = "config.toml"
WORKSPACE_CONFIG_NAME = ".agent-tui.toml"

ProviderName = Literal["openai", "openai-responses", "anthropic"]
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4.1",
    "openai-responses": "gpt-5",
    "anthropic": "claude-sonnet-4-5",
}

KeyPath = tuple[str | int, ...]

_SECTION = ConfigDict(extra="forbid", use_attribute_docstrings=True)


def default_model(name: str) -> str:
    """The model used when none is configured: each provider has a sensible everyday one."""
    return DEFAULT_MODELS[name]


# --------------------------------------------------------------------------- sections


class ProviderSettings(BaseModel):
    """Which model API to talk to and how."""

    model_config = _SECTION

    name: ProviderName = "openai"
    """The API flavour: ``openai`` (Chat Completions), ``openai-responses`` (the Responses
    API) or ``anthropic`` (Messages)."""
    api: Literal["chat", "responses"] | None = None
    """For ``openai``: ``responses`` talks to the Responses API (as ``openai-responses``)."""
    model: str | None = None
    """The model id; left unset it follows ``name`` (gpt-4.1 / claude-sonnet-4-5)."""
    base_url: str | None = None
    """An OpenAI- or Anthropic-compatible endpoint (a proxy, a local server)."""
    api_key: SecretStr | None = None
    """Discouraged: prefer OPENAI_API_KEY / ANTHROPIC_API_KEY in the environment, which never
    lands in a file someone might commit or share."""
    stream: bool = True
    """Stream tokens as they arrive (off only for endpoints that cannot stream)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Cap on the tokens of one answer; unset uses the provider's own default."""
    request_timeout: float = Field(default=600, gt=0)
    """Seconds one model request may take before it is abandoned."""
    context_window: int | None = Field(default=None, ge=1024)
    """The model's window in tokens; unset uses a table of known model families (and a
    smaller limit a server states in an error is always believed)."""
    thinking_budget: int | None = Field(default=None, ge=1024)
    """Anthropic: turn extended thinking on with this many tokens to think in."""
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    """OpenAI reasoning models: how hard to think (sent as is; unset: the model's default)."""

    @model_validator(mode="after")
    def _fill_model(self) -> ProviderSettings:
        """Resolve the model here so every consumer sees a concrete id, never None."""
        if self.model is None:
            self.model = default_model(self.name)
        return self


class AgentSettings(BaseModel):
    """How the agent loop runs."""

    model_config = _SECTION

    max_turns: int | None = Field(default=None, ge=1)
    """Model requests allowed for one user message before the loop stops and says so; unset
    (the default) sets no cap: the context is compacted as it fills instead."""
    strategy: Literal["sequential", "parallel", "batched"] = "parallel"
    """How the tool calls of one answer run: one by one, all at once, or ``batch_size`` at
    a time."""
    batch_size: int = Field(default=4, ge=1)
    """Calls run together under the ``batched`` strategy."""
    system_prompt: str | None = None
    """Extra instructions appended to the built-in system prompt."""
    subagent_max_turns: int = Field(default=20, ge=1)
    """The ``max_turns`` of a sub-agent's own loop."""
    json_schema: str | None = None
    """A JSON Schema file the final answer must match (``--json-schema``): the model then
    answers through the ``structured_output`` tool, which validates it."""
    defer_tools_above: int = Field(default=40, ge=0)
    """When MCP and OpenAPI add more tools than this in all, theirs are not sent to the model
    up front: ``tool_search`` finds and activates them between turns. 0 never defers."""
    loop_ping_pong_cycles: int = Field(default=DEFAULT_PING_PONG_CYCLES, ge=0)
    """The same two calls alternating with unchanged results this many times (A B A B … :
    cycles of A B) get a note telling the model to change course, and the next call that
    would go on alternating is not run. 0 turns the detector off."""
    loop_no_progress_repeats: int = Field(default=DEFAULT_NO_PROGRESS_REPEATS, ge=0)
    """The same call returning the same successful output this many times gets the same
    note, and repeating it straight away again is not run. 0 turns the detector off."""
    output_disk_cap: int = Field(default=DEFAULT_DISK_CAP, ge=0)
    """Bytes of one command's output saved to disk (the full-output file the model may page
    through, and each tool block's stream for the pager). Past it nothing more is saved, and
    the file ends with a line saying how much was not; the result and the block say so too."""


class ToolsSettings(RootModel[dict[str, bool]]):
    """Per-tool switches, keyed by tool name.

    Names are not checked against the built-in set: MCP servers add tools later, and a switch
    for a tool that is not there is harmless.
    """

    root: dict[str, bool] = Field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        """A tool is on unless switched off explicitly."""
        return self.root.get(name, True)

    def disabled(self) -> list[str]:
        return sorted(name for name, on in self.root.items() if not on)


class WebSettings(BaseModel):
    """Where web_search sends queries."""

    model_config = _SECTION

    search_url: str | None = None
    """A SearXNG instance's search URL (its JSON API is used), e.g.
    ``http://127.0.0.1:8888/search``; unset uses DuckDuckGo's HTML endpoint."""


class McpServerSettings(BaseModel):
    """One MCP server: a command to start (stdio) or a URL (streamable HTTP)."""

    model_config = _SECTION

    command: str | None = None
    """The program that serves MCP on its stdin/stdout."""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Variables added to the server's environment (it also gets the usual safe ones)."""
    cwd: str | None = None
    url: str | None = None
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

    model_config = _SECTION

    servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    """``[mcp.servers.NAME]`` tables; tools appear as ``NAME__tool``."""
    trusted_projects: list[str] = Field(default_factory=list)
    """No longer read: a project's ``.mcp.json`` servers start once the workspace is trusted
    (``/trust``, recorded in ``[trust]`` with a digest of the file). Kept so that older
    config files still load."""


class OpenApiSpecSettings(BaseModel):
    """One OpenAPI 3.0/3.1 description turned into tools, one per operation."""

    model_config = _SECTION

    spec: str
    """A file path, an http(s) URL, or the spec text itself (YAML or JSON)."""
    base_url: str | None = None
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


class CronSettings(BaseModel):
    """Jobs scheduled with ``cron_add``: run by the app while it is open."""

    model_config = _SECTION

    enabled: bool = True
    """Run due jobs; off keeps them stored but idle."""
    command_timeout: float = Field(default=600, gt=0)
    """Seconds a scheduled shell command may run."""


class SavedGrant(BaseModel):
    """One "allow always" grant saved by the GrantStore (which reads them itself)."""

    model_config = _SECTION

    rule: str
    """``tool``, ``tool(exact)`` or ``tool(prefix:*)``."""
    workspace: str = "*"
    """The canonical workspace it applies to, or ``*`` for all."""
    created: float = 0
    """Unix seconds when it was granted."""

    @field_validator("rule")
    @classmethod
    def _rule_parses(cls, value: str) -> str:
        """A broken saved rule would otherwise only fail later, inside the GrantStore."""
        try:
            Rule.parse(value)
        except InvalidRule as exc:
            raise ValueError(exc.msg) from None
        return value


class ApprovalSettings(BaseModel):
    """When a person is asked before a call runs."""

    model_config = _SECTION

    mode: ApprovalMode = ApprovalMode.ASK
    """``read-only``, ``ask``, ``auto-edit`` or ``full-auto`` (see ``--approval-mode``)."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds to wait for an answer before the call is denied; unset waits for ever."""
    grants: list[SavedGrant] = Field(default_factory=list)
    """Saved "allow always" grants, written by the app; delete an entry to revoke it."""


class NotifySettings(BaseModel):
    """Bell and desktop notification while the terminal is not focused (the app only)."""

    model_config = _SECTION

    enabled: bool = True
    bell: bool = True
    """Ring the terminal bell."""
    desktop: Literal["osc9", "osc777", "both", "off"] = "osc9"
    """Desktop notification escape: OSC 9 (iTerm2, WezTerm, kitty…) or OSC 777 (VTE, foot)."""
    min_turn_seconds: float = Field(default=10.0, ge=0)
    """A turn at least this long notifies when it ends; an approval always does."""


class HooksSettings(BaseModel):
    """Commands run before and after tool calls (checks, formatters, notifications)."""

    model_config = _SECTION

    pre_tool_use: list[HookCommand] = Field(default_factory=list)
    """Run before a matching call; a non-zero exit blocks the call."""
    post_tool_use: list[HookCommand] = Field(default_factory=list)
    """Run after a matching call has finished without error."""
    post_tool_use_failure: list[HookCommand] = Field(default_factory=list)
    """Run instead of ``post_tool_use`` after a matching call ended in error."""


class TmuxSettings(BaseModel):
    """The tmux server the agent's long-running commands live in."""

    model_config = _SECTION

    socket_name: str | None = None
    """A private tmux socket (``tmux -L``); unset uses a per-user agent-tui socket."""
    session: str | None = None
    """A fixed session name, shared by every instance that uses it; unset gives each app
    instance and headless run its own session, named after the workspace (``atui-NAME-ID``)."""
    keep_session: bool = False
    """Keep the instance's session after quitting (as ``/pane keep`` does); the next start in
    the same workspace re-attaches it."""
    max_sessions: int = Field(default=8, ge=1)
    """Sessions the agent may keep open at once, its shared one included (Buddy's default: 1)."""
    max_panes: int = Field(default=16, ge=1)
    """Panes the agent may keep open at once, across its sessions (Buddy's default: 5, counted
    per session)."""
    allow_user_pane_capture: bool = False
    """Let ``tmux_capture_pane user_pane=true`` read your own tmux pane (``$TMUX_PANE``) when
    agent-tui runs inside tmux. Only your own config can set it, never a workspace's."""
    history_limit: int = Field(default=50000, ge=0)
    """Scroll-back lines kept per pane."""


class SshSettings(BaseModel):
    """The remote host commands run on when the SSH backend is chosen."""

    model_config = _SECTION

    host: str | None = None
    """``user@host[:port]`` or an alias from ~/.ssh/config."""
    identity_file: str | None = None
    """A private key file; unset uses the agent and ssh config."""
    known_hosts: str | None = None
    """A known_hosts file; unset uses ~/.ssh/known_hosts."""
    connect_timeout: float = Field(default=10, gt=0)
    """Seconds to wait for the connection."""


class Settings(BaseModel):
    """Everything configurable, one attribute per TOML section."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    tmux: TmuxSettings = Field(default_factory=TmuxSettings)
    ssh: SshSettings = Field(default_factory=SshSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    openapi: dict[str, OpenApiSpecSettings] = Field(default_factory=dict)
    """``[openapi.NAME]`` tables; tools appear as ``NAME__operationId``."""
    cron: CronSettings = Field(default_factory=CronSettings)
    subagents: dict[str, SubAgentSettings] = Field(default_factory=dict)
    """``[subagents.NAME]`` tables: each sub-agent is offered to the model as a tool ``NAME``."""
    trust: TrustSettings = Field(default_factory=TrustSettings)


# --------------------------------------------------------------------------- errors


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


# --------------------------------------------------------------------------- layers


@dataclass
class _Layer:
    """One source of values and enough about it to point at a key inside it."""

    data: dict[str, Any]
    path: Path | None = None
    text: str = ""
    env_names: dict[KeyPath, str] = field(default_factory=dict)
    label: str = ""
    _lines: dict[KeyPath, int] | None = None

    @property
    def description(self) -> str:
        return str(self.path) if self.path is not None else self.label

    def locate(self, loc: KeyPath) -> tuple[str, int | None]:
        """Where ``loc`` was written: (source, line) — the variable name for the environment."""
        if self.env_names:
            hit = _longest_prefix(loc, self.env_names)
            if hit is not None:
                return f"environment variable {self.env_names[hit]}", None
            # An unknown section: every variable below it is to blame.
            names = [n for p, n in self.env_names.items() if p[: len(loc)] == loc]
            plural = "s" if len(names) > 1 else ""
            return f"environment variable{plural} {', '.join(names) or 'AGENT_TUI_*'}", None
        if self.path is None:
            return self.label, None
        if self._lines is None:
            self._lines = key_lines(self.text)
        hit = _longest_prefix(loc, self._lines)
        return str(self.path), (self._lines[hit] if hit is not None else None)


def _longest_prefix(loc: KeyPath, known: Mapping[KeyPath, Any]) -> KeyPath | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in known:
            return loc[:end]
    return None


def _read_file_layer(path: Path) -> _Layer:
    """Parse one TOML file; a syntax error names the line and, when it can, the key."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([ConfigIssue(str(path), None, "", f"cannot read: {exc}")]) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([_syntax_issue(path, text, exc)]) from exc
    return _Layer(data=data, path=path, text=text)


_TOML_POSITION = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at end of document)\)\s*$")


def _syntax_issue(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> ConfigIssue:
    raw = str(exc)
    match = _TOML_POSITION.search(raw)
    reason = raw[: match.start()] if match else raw
    if match and match.group(1):
        line, column = int(match.group(1)), int(match.group(2))
        reason = f"{reason} (column {column})"
    else:
        line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    return ConfigIssue(str(path), line, _key_near_line(text, line), f"TOML syntax error: {reason}")


_HEADER_LINE = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY_LINE = re.compile(r"""^\s*([A-Za-z0-9_\-."' ]+?)\s*=""")


def _key_near_line(text: str, line: int) -> str:
    """A best guess at the key a broken line was setting: the text is not valid TOML, so
    this is a line scan, not a parse."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    current = lines[line - 1]
    header = _HEADER_LINE.match(current)
    if header:
        return f"[{header.group(1)}]"
    section = ""
    for previous in reversed(lines[: line - 1]):
        found = _HEADER_LINE.match(previous)
        if found:
            section = found.group(1)
            break
    key = _KEY_LINE.match(current)
    if key is None:
        return f"[{section}]" if section else ""
    name = key.group(1).strip()
    return f"[{section}].{name}" if section else name


def _env_layer(env: Mapping[str, str]) -> _Layer:
    """``AGENT_TUI_SECTION__KEY=value``; a value that looks like JSON (``[…]``/``{…}``) is
    parsed as JSON, everything else stays a string for pydantic's lax coercion.

    Only names with the ``__`` delimiter are settings: a section is never a scalar, and this
    keeps ``AGENT_TUI_CONFIG_DIR``/``AGENT_TUI_DATA_DIR`` (read by ``tui.locations``) out.
    """
    layer = _Layer(data={}, label="environment")
    for name in sorted(env):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX) :]
        if ENV_NESTED_DELIMITER not in rest:
            continue
        parts = tuple(part.lower() for part in rest.split(ENV_NESTED_DELIMITER))
        where = f"environment variable {name}"
        if not all(parts):
            raise ConfigError([ConfigIssue(where, None, "", "empty key between '__' separators")])
        _env_insert(layer.data, parts, _env_value(env[name]), where)
        layer.env_names[parts] = name
    return layer


def _env_insert(data: dict[str, Any], parts: tuple[str, ...], value: Any, where: str) -> None:
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(
                [
                    ConfigIssue(
                        where,
                        None,
                        _format_key(parts),
                        "conflicts with a variable that sets its parent",
                    )
                ]
            )
        node = child
    if isinstance(node.get(parts[-1]), dict):
        raise ConfigError(
            [
                ConfigIssue(
                    where,
                    None,
                    _format_key(parts),
                    "conflicts with a variable that sets a key inside it",
                )
            ]
        )
    node[parts[-1]] = value


def _env_value(raw: str) -> Any:
    if raw.strip().startswith(("[", "{")):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _drop_none(data: Mapping[str, Any]) -> dict[str, Any]:
    """CLI parsers give None for a flag not given; TOML has no null, so None means "unset"."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out[key] = _drop_none(value)
        elif value is not None:
            out[key] = value
    return out


def find_workspace_config(workspace: Path) -> Path | None:
    """The ``.agent-tui.toml`` of the workspace or of its nearest parent that has one, so a
    command started in a sub-folder still gets the project's settings."""
    start = workspace.resolve()
    for folder in (start, *start.parents):
        candidate = folder / WORKSPACE_CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


# --------------------------------------------------------------------------- merging


@dataclass
class _Merged:
    data: dict[str, Any] = field(default_factory=dict)
    origins: dict[KeyPath, _Layer] = field(default_factory=dict)

    def add(self, layer: _Layer) -> None:
        self._merge(self.data, layer.data, (), layer)

    def _merge(
        self, base: dict[str, Any], new: Mapping[str, Any], prefix: KeyPath, layer: _Layer
    ) -> None:
        for key, value in new.items():
            path = (*prefix, key)
            if isinstance(value, Mapping) and isinstance(base.get(key), dict):
                self.origins[path] = layer
                self._merge(base[key], value, path, layer)
                continue
            self._forget(path)
            base[key] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)
            for sub in _dict_paths(value, path):
                self.origins[sub] = layer

    def _forget(self, path: KeyPath) -> None:
        """A value replaced wholesale no longer has parts set by an older layer."""
        for known in [k for k in self.origins if k[: len(path)] == path]:
            del self.origins[known]


def _dict_paths(value: Any, path: KeyPath) -> Iterator[KeyPath]:
    """The path itself and every key below it through tables (lists are single values)."""
    yield path
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from _dict_paths(child, (*path, key))


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class LoadedSettings:
    """The settings plus where they came from (for ``config show`` and saved grants)."""

    settings: Settings
    sources: list[Path]
    """Config files read, lowest layer first."""
    user_config_path: Path
    """The user file (it may not exist yet): where saved grants are written."""
    workspace_config_path: Path | None = None
    origins: Mapping[KeyPath, str] = field(default_factory=dict)
    """Which layer set each key path: a file path, an environment variable, the CLI."""
    trust: WorkspaceTrust = field(default_factory=lambda: WorkspaceTrust(key=""))
    """What the workspace's own files would change, and whether that applies."""

    def origin(self, dotted: str) -> str:
        """Where ``"approval.mode"`` came from; lets the app warn when a workspace file (a
        cloned repository, say) loosened approval or added hooks."""
        loc: KeyPath = tuple(dotted.split("."))
        hit = _longest_prefix(loc, self.origins)
        return self.origins[hit] if hit is not None else "built-in default"


def load_settings(
    workspace: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    trust: bool | None = None,
) -> LoadedSettings:
    """Defaults < user config < workspace ``.agent-tui.toml`` < ``AGENT_TUI_*`` < overrides.

    ``overrides`` is a nested dict from CLI flags; None values in it mean "flag not given".
    The workspace file applies only in part until the workspace is trusted (see
    ``tui.security.trust``): ``trust=True`` accepts it for this run (``--trust-workspace``),
    ``False`` refuses it, None asks the user's config for a record of these very files.

    Raises:
        ConfigError: a file cannot be read or parsed, or a value is invalid or unknown; the
            message names the file and line (or the variable) and the key of each problem.
    """
    user_path = config_dir() / USER_CONFIG_NAME
    workspace_path = find_workspace_config(workspace)
    user_layer = _read_file_layer(user_path) if user_path.is_file() else None
    workspace_layer = (
        _read_file_layer(workspace_path)
        if workspace_path is not None and workspace_path != user_path
        else None
    )
    layers = [layer for layer in (user_layer, workspace_layer) if layer is not None]
    layers.append(_env_layer(process_environ() if env is None else env))
    layers.append(_Layer(data=_drop_none(overrides or {}), label="command-line options"))
    # Every key is checked, held back or not: a typo in a workspace file is reported at its
    # line whether or not the workspace is trusted yet.
    merged, settings = _merge_and_validate(layers)
    trust_state, applied = _review_workspace(
        workspace, workspace_path, user_layer, workspace_layer, trust
    )
    if workspace_layer is not None and applied != workspace_layer.data:
        workspace_layer.data = applied
        merged, settings = _merge_and_validate(layers)
    return LoadedSettings(
        settings=settings,
        sources=[layer.path for layer in layers if layer.path is not None],
        user_config_path=user_path,
        workspace_config_path=workspace_path,
        origins={path: layer.description for path, layer in merged.origins.items()},
        trust=trust_state,
    )


def _merge_and_validate(layers: list[_Layer]) -> tuple[_Merged, Settings]:
    merged = _Merged()
    for layer in layers:
        merged.add(layer)
    try:
        return merged, Settings.model_validate(merged.data)
    except ValidationError as exc:
        raise ConfigError(_validation_issues(exc, merged)) from None


def workspace_trust_key(workspace: Path) -> str:
    """How trust records name a workspace: its real path."""
    return str(workspace.resolve())


def _review_workspace(
    workspace: Path,
    config_file: Path | None,
    user_layer: _Layer | None,
    layer: _Layer | None,
    trust: bool | None,
) -> tuple[WorkspaceTrust, dict[str, Any]]:
    """What of the workspace layer applies, and where the workspace stands."""
    key = workspace_trust_key(workspace)
    files = workspace_files(workspace, config_file if layer is not None else None)
    if not files:
        return WorkspaceTrust(key=key), {}
    digest = files_digest(files)
    user_data = user_layer.data if user_layer is not None else {}
    records = (user_data.get("trust") or {}).get("workspaces") or []
    recorded = is_recorded(records if isinstance(records, list) else [], key, digest)
    trusted = recorded if trust is None else trust
    held, refused, applied = [], [], {}
    if layer is not None:
        try:
            base = Settings.model_validate(user_data).model_dump(mode="json")
        except ValidationError:
            base = Settings().model_dump(mode="json")
        review = review_layer(
            layer.data, base, locate=lambda path: layer.locate(path), source=str(config_file)
        )
        held, refused = review.held, review.refused
        applied = review.trusted if trusted else review.safe
    mcp_file = workspace / MCP_PROJECT_FILE
    if mcp_file in files:
        held.extend(review_mcp_file(mcp_file))
    state = WorkspaceTrust(
        key=key,
        files=tuple(files),
        digest=digest,
        held=tuple(held),
        refused=tuple(refused),
        trusted=trusted,
        recorded=recorded,
    )
    return state, applied


def _validation_issues(exc: ValidationError, merged: _Merged) -> list[ConfigIssue]:
    issues = []
    for error in exc.errors():
        loc: KeyPath = tuple(error["loc"])
        hit = _longest_prefix(loc, merged.origins)
        if hit is None:
            source, line = "built-in defaults", None
        else:
            source, line = merged.origins[hit].locate(loc)
        issues.append(ConfigIssue(source, line, _format_key(loc), _describe(error)))
    return issues


def _describe(error: Mapping[str, Any]) -> str:
    message = str(error["msg"])
    if error["type"] == "missing" or "api_key" in error["loc"]:
        return message
    try:
        shown = json.dumps(error.get("input"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        shown = repr(error.get("input"))
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{message} (got {shown})"


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _format_key(loc: tuple[Any, ...]) -> str:
    """``("hooks", "pre_tool_use", 0, "timeout")`` → ``[hooks].pre_tool_use[0].timeout``."""
    if not loc:
        return ""
    text = f"[{loc[0]}]"
    for part in loc[1:]:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if _BARE_KEY.match(str(part)) else f".{json.dumps(str(part))}"
    return text


# --------------------------------------------------------------------------- key lines


class _KeyLocator:
    """A small scanner over a *valid* TOML text recording the line of every key.

    tomllib keeps no positions and tomlkit keeps no line numbers, but the grammar needed to
    find keys — headers, dotted and quoted keys, strings, arrays, inline tables — is small.
    Array elements are recorded by index so ``grants[2].rule`` points at its own line.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.lines: dict[KeyPath, int] = {}
        self._newlines = [i for i, char in enumerate(text) if char == "\n"]
        self._aot: dict[KeyPath, int] = {}

    def run(self) -> dict[KeyPath, int]:
        table: KeyPath = ()
        while True:
            self._skip(newlines=True)
            if self.pos >= len(self.text):
                return self.lines
            start = self.pos
            if self.text.startswith("[[", self.pos):
                self.pos += 2
                keys = self._key()
                self._expect("]]")
                base = (*self._resolve(keys[:-1]), keys[-1])
                index = self._aot.get(base, 0)
                self._aot[base] = index + 1
                table = (*base, index)
                self._mark(table, start)
            elif self.text[self.pos] == "[":
                self.pos += 1
                keys = self._key()
                self._expect("]")
                table = self._resolve(keys)
                self._mark(table, start)
            else:
                self._key_value(table)

    def _line(self, pos: int) -> int:
        return bisect.bisect_left(self._newlines, pos) + 1

    def _mark(self, path: KeyPath, pos: int) -> None:
        line = self._line(pos)
        for end in range(1, len(path) + 1):
            self.lines.setdefault(path[:end], line)
        self.lines[path] = line

    def _resolve(self, keys: tuple[str, ...]) -> KeyPath:
        """Header keys through arrays of tables mean their latest element."""
        out: KeyPath = ()
        for key in keys:
            out = (*out, key)
            if out in self._aot:
                out = (*out, self._aot[out] - 1)
        return out

    def _skip(self, *, newlines: bool) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t" or (newlines and char in "\r\n"):
                self.pos += 1
            elif char == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                return

    def _expect(self, token: str) -> None:
        self._skip(newlines=False)
        if not self.text.startswith(token, self.pos):
            raise ValueError(f"expected {token!r} at {self.pos}")
        self.pos += len(token)

    def _key(self) -> tuple[str, ...]:
        keys: list[str] = []
        while True:
            self._skip(newlines=False)
            char = self.text[self.pos]
            if char in "\"'":
                start = self.pos
                self._string()
                keys.append(tomllib.loads(f"k = {self.text[start : self.pos]}")["k"])
            else:
                match = re.compile(r"[A-Za-z0-9_-]+").match(self.text, self.pos)
                if match is None:
                    raise ValueError(f"no key at {self.pos}")
                keys.append(match.group())
                self.pos = match.end()
            self._skip(newlines=False)
            if self.pos < len(self.text) and self.text[self.pos] == ".":
                self.pos += 1
                continue
            return tuple(keys)

    def _key_value(self, table: KeyPath) -> None:
        start = self.pos
        path = (*table, *self._key())
        self._mark(path, start)
        self._expect("=")
        self._value(path)

    def _value(self, path: KeyPath) -> None:
        self._skip(newlines=False)
        char = self.text[self.pos]
        if char == "[":
            self._array(path)
        elif char == "{":
            self._inline_table(path)
        elif char in "\"'":
            self._string()
        else:
            match = re.compile(r"[^,\]}\r\n#]*").match(self.text, self.pos)
            self.pos = match.end() if match else self.pos

    def _array(self, path: KeyPath) -> None:
        self.pos += 1
        index = 0
        while True:
            self._skip(newlines=True)
            if self.text[self.pos] == "]":
                self.pos += 1
                return
            self._mark((*path, index), self.pos)
            self._value((*path, index))
            self._skip(newlines=True)
            if self.text[self.pos] == ",":
                self.pos += 1
                index += 1
            elif self.text[self.pos] != "]":
                raise ValueError(f"unexpected {self.text[self.pos]!r} in an array")

    def _inline_table(self, path: KeyPath) -> None:
        self.pos += 1
        while True:
            self._skip(newlines=False)
            if self.text[self.pos] == "}":
                self.pos += 1
                return
            self._key_value(path)
            self._skip(newlines=False)
            if self.text[self.pos] == ",":
                self.pos += 1
            elif self.text[self.pos] != "}":
                raise ValueError(f"unexpected {self.text[self.pos]!r} in an inline table")

    def _string(self) -> None:
        text = self.text
        quote = text[self.pos]
        if text.startswith(quote * 3, self.pos):
            self.pos += 3
            while not text.startswith(quote * 3, self.pos):
                if self.pos >= len(text):
                    raise ValueError("unterminated string")
                self.pos += 2 if quote == '"' and text[self.pos] == "\\" else 1
            self.pos += 3
            while self.pos < len(text) and text[self.pos] == quote:  # """a"""" ends in a quote
                self.pos += 1
            return
        self.pos += 1
        while text[self.pos] != quote:
            self.pos += 2 if quote == '"' and text[self.pos] == "\\" else 1
        self.pos += 1


def key_lines(text: str) -> dict[KeyPath, int]:
    """The 1-based line of every key path in a valid TOML text (best effort: on anything it
    cannot follow it returns what it found so far, and callers fall back to a shorter path)."""
    locator = _KeyLocator(text)
    try:
        return locator.run()
    except (ValueError, IndexError, tomllib.TOMLDecodeError):
        return locator.lines


# --------------------------------------------------------------------------- default file

_EXAMPLES: dict[KeyPath, str] = {
    ("provider", "model"): '"gpt-4.1"',
    ("provider", "base_url"): '"https://api.openai.com/v1"',
    ("provider", "api_key"): '"sk-..."',
    ("provider", "max_tokens"): "8192",
    ("provider", "context_window"): "32768",
    ("agent", "max_turns"): "200",
    ("agent", "system_prompt"): '"Prefer small, reviewed changes."',
    ("agent", "json_schema"): '"answer.schema.json"',
    ("web", "search_url"): '"http://127.0.0.1:8888/search"',
    ("security", "allowed_hosts"): '["api.github.com", "example.com"]',
    ("approval", "timeout"): "300",
    ("security", "command_allowlist"): '["git", "ls", "cat"]',
    ("tmux", "socket_name"): '"agent-tui"',
    ("ssh", "host"): '"deploy@example.com:22"',
    ("ssh", "identity_file"): '"~/.ssh/id_ed25519"',
    ("ssh", "known_hosts"): '"~/.ssh/known_hosts"',
}

_SECTION_EXTRAS: dict[str, list[str]] = {
    "tools": ["# run_shell = false", "# mcp_github_create_issue = false"],
    "hooks": [
        "# Example (one table per hook):",
        "# [[hooks.pre_tool_use]]",
        '# matcher = "run_shell"',
        '# command = "./scripts/check-command.sh"',
        "# timeout = 30",
    ],
    "mcp": [
        "# Example (one table per server; a project's .mcp.json is read too):",
        "# [mcp.servers.time]",
        '# command = "uvx"',
        '# args = ["mcp-server-time"]',
        "# [mcp.servers.docs]",
        '# url = "http://127.0.0.1:8000/mcp"',
        '# headers = { Authorization = "Bearer ..." }',
    ],
    "openapi": [
        "# Example (one table per API):",
        "# [openapi.petstore]",
        '# spec = "https://petstore3.swagger.io/api/v3/openapi.json"',
        '# tags = ["pet"]',
        '# auth = "bearer"',
        '# token_env = "PETSTORE_TOKEN"',
    ],
    "subagents": [
        "# Example (one table per sub-agent; the model calls it as the tool `reviewer`):",
        "# [subagents.reviewer]",
        '# description = "Reviews a diff for bugs and says what it found."',
        '# system_prompt = "You review code. Read, never write. Answer with a list."',
        '# tools = ["read_file", "grep_search", "run_shell"]',
        '# model = "gpt-4.1-mini"',
        "# max_turns = 10",
        '# thinking = "low"',
    ],
}

_DUMP_SKIP: set[KeyPath] = {("approval", "grants"), ("mcp", "servers")}


def dump_default_config() -> str:
    """A commented ``config.toml`` listing every section, key, default and what it is for.

    Defaults are written commented out (``#key = value``) so future releases can improve a
    default without every user's file pinning the old one; uncomment to change a value.
    Lines ``# key = …`` (with a space) are examples for keys unset by default.
    """
    out = [
        "# agent-tui configuration.",
        "# Layers, lowest first: built-in defaults < this file < a workspace's .agent-tui.toml",
        "# < AGENT_TUI_<SECTION>__<KEY> environment variables < command-line flags.",
        "# Defaults are shown commented out as '#key = value'; uncomment a line to change it.",
    ]
    for name, info in Settings.model_fields.items():
        section = info.annotation
        out.append("")
        if isinstance(section, type) and issubclass(section, BaseModel):
            out.extend(_comment(inspect.getdoc(section) or ""))
            out.append(f"[{name}]")
            out.extend(_section_lines(name, section))
        else:
            out.extend(_comment(info.description or _attribute_docs(Settings).get(name, "")))
            out.append(f"[{name}]")
        out.extend(_SECTION_EXTRAS.get(name, []))
    return "\n".join(out) + "\n"


def _section_lines(name: str, section: type[BaseModel]) -> list[str]:
    if issubclass(section, RootModel):
        return []
    docs = _attribute_docs(section)
    defaults = section()
    lines: list[str] = []
    for key, info in section.model_fields.items():
        lines.extend(_comment(info.description or docs.get(key, "")))
        if (name, key) in _DUMP_SKIP:
            continue
        value = getattr(defaults, key)
        if (name, key) == ("provider", "model") or value is None:
            example = _EXAMPLES.get((name, key), '""')
            lines.append(f"# {key} = {example}")
        else:
            lines.extend(_commented_value(key, value))
    return lines


def _comment(text: str) -> list[str]:
    """Docstrings re-wrapped as ``# `` lines, paragraphs kept apart by a bare ``#``."""
    lines: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.replace("``", "").strip()):
        if lines:
            lines.append("#")
        lines.extend(f"# {line}" for line in textwrap.wrap(" ".join(paragraph.split()), 96))
    return lines


def _commented_value(key: str, value: Any) -> list[str]:
    rendered = _toml_value(value)
    if len(rendered) + len(key) <= 96:
        return [f"#{key} = {rendered}"]
    items = [_toml_value(item) for item in value]
    return [f"#{key} = [", *(f"#    {item}," for item in items), "#]"]


def _toml_value(value: Any) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return tomlkit.item(value).as_string()


def _attribute_docs(cls: type) -> dict[str, str]:
    """Docstrings under fields, for sections (like SecuritySettings) that do not turn on
    pydantic's ``use_attribute_docstrings``."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs

"""``dump_default_config``: the commented default ``config.toml``, every key with its default.

It is written from the models themselves (every section, key, default and field docstring),
so a new setting appears in it without anyone remembering to document it twice.
"""

from __future__ import annotations

import ast
import enum
import inspect
import itertools
import re
import textwrap
from typing import Any

import tomlkit
from pydantic import BaseModel, RootModel

from tui.config.keys import KeyPath
from tui.config.settings import Settings

_EXAMPLES: dict[KeyPath, str] = {
    ("provider", "model"): '"gpt-4.1"',
    ("provider", "base_url"): '"https://api.openai.com/v1"',
    ("provider", "api_key"): '"sk-..."',
    ("provider", "max_tokens"): "8192",
    ("provider", "context_window"): "32768",
    ("agent", "max_turns"): "200",
    ("agent", "system_prompt"): '"Prefer small, reviewed changes."',
    ("agent", "json_schema"): '"answer.schema.json"',
    ("agent", "tool_timeout"): "600",
    ("agent", "tool_timeouts"): "{ fetch_url = 30, run_shell = 0 }",
    ("web", "search_url"): '"http://127.0.0.1:8888/search"',
    ("security", "allowed_hosts"): '["api.github.com", "example.com"]',
    ("approval", "timeout"): "300",
    ("security", "command_allowlist"): '["git", "ls", "cat"]',
    ("tmux", "socket_name"): '"agent-tui"',
    ("ssh", "host"): '"deploy@example.com:22"',
    ("ssh", "identity_file"): '"~/.ssh/id_ed25519"',
    ("ssh", "known_hosts"): '"~/.ssh/known_hosts"',
    ("fleet", "inventory"): '"~/ops/inventory.ini"',
    ("fleet", "limit"): '"web:&staging"',
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
    "fleet": [
        "# Example (one table per group or host; a host in several groups gets the strictest):",
        "# [fleet.groups.prod]",
        "# always_ask = true",
        '# deny = ["run_shell(reboot:*)"]',
        "# [fleet.groups.staging]",
        '# approval_mode = "auto-edit"',
        "# [fleet.hosts.db1]",
        "# blocked = true",
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


_DUMP_SKIP: set[KeyPath] = {
    ("approval", "grants"),
    ("mcp", "servers"),
    ("fleet", "groups"),
    ("fleet", "hosts"),
}


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
        if (name, key) == ("provider", "model") or value is None or value == {}:
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
    return str(tomlkit.item(value).as_string())


def _attribute_docs(cls: type) -> dict[str, str]:
    """Docstrings under fields, read from the source only when a config file is written:
    pydantic's ``use_attribute_docstrings`` would parse every section's source at every start."""
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

"""The layers settings are built from: a TOML file, the environment, the command line.

Each layer keeps its values and enough about where they came from to point at a key inside
it: a file's path and text (its lines are found only when an error needs them), or the name of
the environment variable that set each key.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.config.errors import ConfigError, ConfigIssue
from tui.config.keys import KeyPath, format_key, longest_prefix
from tui.config.locate import key_lines, syntax_issue

ENV_PREFIX = "AGENT_TUI_"
ENV_NESTED_DELIMITER = "__"


@dataclass
class Layer:
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
            hit = longest_prefix(loc, self.env_names)
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
        hit = longest_prefix(loc, self._lines)
        return str(self.path), (self._lines[hit] if hit is not None else None)


def read_file_layer(path: Path) -> Layer:
    """Parse one TOML file; a syntax error names the line and, when it can, the key."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([ConfigIssue(str(path), None, "", f"cannot read: {exc}")]) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([syntax_issue(path, text, exc)]) from exc
    return Layer(data=data, path=path, text=text)


def env_layer(env: Mapping[str, str]) -> Layer:
    """``AGENT_TUI_SECTION__KEY=value``; a value that looks like JSON (``[…]``/``{…}``) is
    parsed as JSON, everything else stays a string for pydantic's lax coercion.

    Only names with the ``__`` delimiter are settings: a section is never a scalar, and this
    keeps ``AGENT_TUI_CONFIG_DIR``/``AGENT_TUI_DATA_DIR`` (read by ``tui.locations``) out.
    """
    layer = Layer(data={}, label="environment")
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
                        format_key(parts),
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
                    format_key(parts),
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


def drop_none(data: Mapping[str, Any]) -> dict[str, Any]:
    """CLI parsers give None for a flag not given; TOML has no null, so None means "unset".
    A table that held only unset flags is dropped too: nothing set anything in it, so it must
    not be named as the origin of that section's settings (a table given empty stays)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            inner = drop_none(value)
            if inner or not value:
                out[key] = inner
        elif value is not None:
            out[key] = value
    return out

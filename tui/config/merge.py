"""Merging the layers section by section and validating the result, errors at their source.

A later layer replaces an earlier one key by key, tables merged and lists replaced whole, and
the merge remembers which layer set each key path: a validation error is then reported at the
file line (or environment variable) that set the bad value, not as a bare pydantic path.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from tui.config.errors import ConfigError, ConfigIssue
from tui.config.keys import KeyPath, format_key, longest_prefix
from tui.config.layers import Layer
from tui.config.settings import Settings


@dataclass
class MergedLayers:
    """The layers merged so far, and the layer that set each key path."""

    data: dict[str, Any] = field(default_factory=dict)
    origins: dict[KeyPath, Layer] = field(default_factory=dict)
    """Which layer set each key path (a table's path points at the last layer that touched it)."""

    def add(self, layer: Layer) -> None:
        self._merge(self.data, layer.data, (), layer)

    def _merge(
        self, base: dict[str, Any], new: Mapping[str, Any], prefix: KeyPath, layer: Layer
    ) -> None:
        for key, value in new.items():
            path = (*prefix, key)
            if isinstance(value, Mapping) and isinstance(base.get(key), dict):
                self.origins[path] = layer
                self._merge(base[key], value, path, layer)
                continue
            if key in base and isinstance(value, Mapping) != isinstance(base[key], dict):
                # A table written as one value (``provider = "anthropic"``), or the reverse:
                # one layer would silently replace the other's whole table.
                self._clash(path, base[key], value, layer)
            self._forget(path)
            base[key] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)
            for sub in _dict_paths(value, path):
                self.origins[sub] = layer

    def _clash(self, path: KeyPath, old: Any, new: Any, layer: Layer) -> None:
        scalar_layer, scalar = (layer, new) if isinstance(old, dict) else (self.origins[path], old)
        source, line = scalar_layer.locate(path)
        raise ConfigError(
            [
                ConfigIssue(
                    source,
                    line,
                    format_key(path),
                    f"must be a table ([{'.'.join(map(str, path))}] with keys below it), "
                    f"not one value (got {_shown(scalar)})",
                )
            ]
        )

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


def merge_and_validate(layers: list[Layer]) -> tuple[MergedLayers, Settings]:
    merged = MergedLayers()
    for layer in layers:
        merged.add(layer)
    nul = list(_nul_paths(merged.data, ()))
    if nul:
        raise ConfigError([_issue(merged, path, _NUL) for path in nul])
    try:
        return merged, Settings.model_validate(merged.data)
    except ValidationError as exc:
        raise ConfigError(_validation_issues(exc, merged)) from None


_NUL = "contains a NUL character (\\u0000), which no program, path or header can take"


def _nul_paths(value: Any, path: KeyPath) -> Iterator[KeyPath]:
    """Every key path whose key or text holds a NUL (TOML allows ``\\u0000``)."""
    if isinstance(value, str):
        if "\x00" in value:
            yield path
    elif isinstance(value, Mapping):
        for key, child in value.items():
            if "\x00" in str(key):
                yield (*path, key)
            else:
                yield from _nul_paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _nul_paths(child, (*path, index))


def _issue(merged: MergedLayers, loc: KeyPath, message: str) -> ConfigIssue:
    hit = longest_prefix(loc, merged.origins)
    if hit is None:
        return ConfigIssue("built-in defaults", None, format_key(loc), message)
    source, line = merged.origins[hit].locate(loc)
    return ConfigIssue(source, line, format_key(loc), message)


def _validation_issues(exc: ValidationError, merged: MergedLayers) -> list[ConfigIssue]:
    return [_issue(merged, tuple(error["loc"]), _describe(error)) for error in exc.errors()]


def _describe(error: Mapping[str, Any]) -> str:
    message = str(error["msg"])
    if error["type"] == "missing" or "api_key" in error["loc"]:
        return message
    return f"{message} (got {_shown(error.get('input'))})"


def _shown(value: Any) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."

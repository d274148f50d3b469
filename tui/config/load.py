"""Loading: one validated ``Settings`` from the layers, and where each value came from.

Defaults < the user's ``config.toml`` < the workspace's ``.agent-tui.toml`` (the part of it
that applies before trust) < ``AGENT_TUI_*`` variables < command-line flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.config.errors import ConfigError, ConfigIssue
from tui.config.keys import KeyPath, format_key, longest_prefix
from tui.config.layers import Layer, drop_none, env_layer, read_file_layer
from tui.config.locate import key_lines
from tui.config.merge import merge_and_validate
from tui.config.settings import Settings
from tui.config.workspace import find_workspace_config, review_workspace
from tui.locations import config_dir
from tui.security.own_environ import process_environ
from tui.security.trust import WorkspaceTrust

USER_CONFIG_NAME = "config.toml"


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
        hit = longest_prefix(loc, self.origins)
        return self.origins[hit] if hit is not None else "built-in default"

    def error_at(self, dotted: str, message: str) -> ConfigError:
        """A problem with the value of ``dotted`` found after loading (a file it names is
        missing, say), pinned to the file and line that set it like any other config error."""
        origin = self.origin(dotted)
        line: int | None = None
        if any(str(path) == origin for path in self.sources):
            try:
                lines = key_lines(Path(origin).read_text(encoding="utf-8"))
            except OSError:
                lines = {}
            hit = longest_prefix(tuple(dotted.split(".")), lines)
            line = lines[hit] if hit is not None else None
        return ConfigError(
            [ConfigIssue(origin, line, format_key(tuple(dotted.split("."))), message)]
        )


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
    user_layer = read_file_layer(user_path) if user_path.is_file() else None
    workspace_layer = (
        read_file_layer(workspace_path)
        if workspace_path is not None and workspace_path != user_path
        else None
    )
    layers = [layer for layer in (user_layer, workspace_layer) if layer is not None]
    layers.append(env_layer(process_environ() if env is None else env))
    layers.append(Layer(data=drop_none(overrides or {}), label="command-line options"))
    # Every key is checked, held back or not: a typo in a workspace file is reported at its
    # line whether or not the workspace is trusted yet.
    merged, settings = merge_and_validate(layers)
    trust_state, applied = review_workspace(
        workspace, workspace_path, user_layer, workspace_layer, trust
    )
    if workspace_layer is not None and applied != workspace_layer.data:
        workspace_layer.data = applied
        merged, settings = merge_and_validate(layers)
    return LoadedSettings(
        settings=settings,
        sources=[layer.path for layer in layers if layer.path is not None],
        user_config_path=user_path,
        workspace_config_path=workspace_path,
        origins={path: layer.description for path, layer in merged.origins.items()},
        trust=trust_state,
    )

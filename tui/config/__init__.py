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

The package: ``sections/`` (one model per TOML table, by topic) and ``settings`` (their root);
``layers``, ``merge`` and ``load`` (layered loading); ``keys`` and ``locate`` (key paths and
their lines, for errors with file:line); ``workspace`` (the part of a workspace file that
applies before trust); ``dump`` (the commented default file, imported where it is
written). This module is the package's face: it names what the rest of agent-tui imports
from ``tui.config``.
"""

from __future__ import annotations

from tui.config.errors import ConfigError
from tui.config.load import USER_CONFIG_NAME, LoadedSettings, load_settings
from tui.config.locate import key_lines
from tui.config.sections.adapters import McpServerSettings, OpenApiSpecSettings
from tui.config.sections.provider import ProviderSettings, default_model
from tui.config.sections.targets import SshSettings, TmuxSettings
from tui.config.settings import Settings
from tui.config.workspace import find_workspace_config

__all__ = [
    "USER_CONFIG_NAME",
    "ConfigError",
    "LoadedSettings",
    "McpServerSettings",
    "OpenApiSpecSettings",
    "ProviderSettings",
    "Settings",
    "SshSettings",
    "TmuxSettings",
    "default_model",
    "find_workspace_config",
    "key_lines",
    "load_settings",
]

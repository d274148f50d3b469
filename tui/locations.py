"""Where agent-tui keeps things: platformdirs for user data, the package for its styles."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "agent-tui"


def config_dir() -> Path:
    """The user's config folder (``AGENT_TUI_CONFIG_DIR`` overrides it, for tests and CI)."""
    override = os.environ.get("AGENT_TUI_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    """The user's data folder: transcripts, memory database, saved tool output."""
    override = os.environ.get("AGENT_TUI_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME))


def tool_output_dir() -> Path:
    """Where the full output of a truncated tool result is kept for the model to page through."""
    return data_dir() / "tool-output"


def styles_dir() -> Path:
    """The folder of ``.tcss`` files.

    A wheel carries them inside the package (``tui/styles``); a source checkout or an editable
    install has them at the top level beside ``tui/``. Both must work, so look in that order.
    """
    package = Path(__file__).resolve().parent
    for candidate in (package / "styles", package.parent / "styles"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"agent-tui styles not found next to {package}")

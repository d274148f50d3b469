"""The workspace's own config file: where it is, and how much of it applies before trust.

The rules for what a workspace file may set untrusted (tighten anything, set what is harmless,
hold back what loosens, runs or sends) are ``tui.security.trust``'s, and only there; this module
gathers what those rules need (the workspace's files and their digest, the trust records and
the settings below the workspace file) and keeps the part of the file that may apply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tui.config.layers import Layer
from tui.config.settings import Settings
from tui.security.trust import (
    MCP_PROJECT_FILE,
    WorkspaceTrust,
    files_digest,
    is_recorded,
    review_layer,
    review_mcp_file,
    workspace_files,
)
from tui.security.workspace_prompts import review_prompt_files, workspace_prompt_files

WORKSPACE_CONFIG_NAME = ".agent-tui.toml"


def find_workspace_config(workspace: Path) -> Path | None:
    """The ``.agent-tui.toml`` of the workspace or of its nearest parent that has one, so a
    command started in a sub-folder still gets the project's settings."""
    start = workspace.resolve()
    for folder in (start, *start.parents):
        candidate = folder / WORKSPACE_CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def workspace_trust_key(workspace: Path) -> str:
    """How trust records name a workspace: its real path."""
    return str(workspace.resolve())


def review_workspace(
    workspace: Path,
    config_file: Path | None,
    user_layer: Layer | None,
    layer: Layer | None,
    trust: bool | None,
) -> tuple[WorkspaceTrust, dict[str, Any]]:
    """What of the workspace layer applies, and where the workspace stands."""
    key = workspace_trust_key(workspace)
    files = workspace_files(workspace, config_file if layer is not None else None)
    prompts = [path for _, paths in workspace_prompt_files(workspace) for path in paths]
    files = [*files, *prompts]
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
    if prompts:
        held.extend(review_prompt_files(workspace))
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

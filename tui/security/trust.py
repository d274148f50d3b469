"""Workspace trust: what a repository's own files may change before the person trusts it.

A cloned repository's ``.agent-tui.toml`` and ``.mcp.json`` are written by whoever wrote the
repository. They may always *tighten* what the person configured (a stricter approval mode, an
extra deny rule, a tool switched off) and set what is harmless (a model, a system prompt). What
would loosen approvals or security, run a program (hooks, MCP servers), send a secret or a
prompt elsewhere (base URLs, search URLs, OpenAPI specs), pass the environment on, or touch
trust itself waits until the person trusts that workspace; some keys (trust records, saved
grants) never come from a workspace file at all.

Trust is recorded in the person's own config, keyed by the workspace's real path and a digest of
those files' content, so a changed file is asked about again. Which key is which is one table
(``tui.security.setting_kinds``); the review against it is ``tui.security.trust_review``. Unknown
keys are held back by default: a new setting is safe from a workspace until someone decides, in
that table, that it is harmless.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tui.security.trust_review import (
    APPROVAL_ORDER,
    MCP_PROJECT_FILE,
    PERMISSION_ORDER,
    HeldChange,
    Review,
    Why,
    review_layer,
    review_mcp_file,
)

__all__ = [
    "APPROVAL_ORDER",
    "MCP_PROJECT_FILE",
    "PERMISSION_ORDER",
    "HeldChange",
    "Review",
    "TrustSettings",
    "TrustedWorkspace",
    "Why",
    "WorkspaceTrust",
    "control_file",
    "files_digest",
    "is_recorded",
    "review_layer",
    "review_mcp_file",
    "revoke_trust",
    "save_trust",
    "workspace_files",
]

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
            lines.extend(f"             {detail}" for detail in change.details)
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
        nested = parts[index + 1] if index + 1 < len(parts) else ""
        if part in (".claude", ".agents") and nested in ("skills", "commands"):
            return f"{part}/{nested} holds instructions the agent loads"
    return None

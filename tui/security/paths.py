"""Path checks done the safe way round: canonicalise first, then judge.

A path is refused when it has a NUL byte, or when either its lexical form (``..`` folded) or
its real form (symlinks followed) lands in a forbidden place, or — in workspace-only mode —
outside the workspace. Checking both forms catches a symlink inside the workspace that points
at ``~/.ssh`` as well as a ``..`` walk out of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tui.tools.errors import InvalidArguments, PermissionDenied


def _canonical(path: str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(path)))


def _expand_home(path: str, home: str | None) -> str:
    if home is None:
        return os.path.expanduser(path)
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    return path


@dataclass
class PathGuard:
    workspace: Path
    forbidden: list[str]
    workspace_only: bool = False
    allowed_roots: list[str] = field(default_factory=list)
    local: bool = True
    """False for a remote or container target: paths name files *there*, so they are judged
    lexically (``..`` folded, ``~`` as ``home``) — this machine's symlinks mean nothing."""
    home: str | None = None
    """The target's home folder, for ``~`` when the target is not this machine."""

    def __post_init__(self) -> None:
        self.workspace = self._canonical(str(self.workspace))
        # Both spellings of each forbidden place: as written and with symlinks followed.
        self._forbidden: list[Path] = []
        for item in self.forbidden:
            lexical = Path(os.path.normpath(_expand_home(item, self.home)))
            for candidate in (lexical, self._canonical(item)):
                if candidate not in self._forbidden:
                    self._forbidden.append(candidate)
        self._roots = [self.workspace, *(self._canonical(root) for root in self.allowed_roots)]

    def _canonical(self, path: str) -> Path:
        if self.local:
            return _canonical(path)
        return Path(os.path.normpath(_expand_home(path, self.home)))

    def inside_workspace(self, path: Path) -> bool:
        return any(path.is_relative_to(root) for root in self._roots)

    def forbidden_match(self, path: Path) -> Path | None:
        for place in self._forbidden:
            if path.is_relative_to(place):
                return place
        return None

    def resolve(self, raw: str) -> Path:
        """A checked, canonical absolute path.

        Raises:
            InvalidArguments: empty path.
            PermissionDenied: NUL byte, forbidden place, or outside the workspace when
                workspace-only is on.
        """
        if "\x00" in raw:
            raise PermissionDenied("path contains a NUL byte; pass a plain path")
        if not raw.strip():
            raise InvalidArguments("path is empty")
        expanded = Path(_expand_home(raw, self.home))
        if not expanded.is_absolute():
            expanded = self.workspace / expanded
        lexical = Path(os.path.normpath(expanded))
        real = Path(os.path.realpath(expanded)) if self.local else lexical
        for candidate in (lexical, real):
            place = self.forbidden_match(candidate)
            if place is not None:
                via = "" if candidate == lexical else f" (it resolves to {real})"
                raise PermissionDenied(
                    f"{raw} is inside the protected path {place}{via}; agent tools may not "
                    "touch credentials or system secrets"
                )
        if self.workspace_only and not (
            self.inside_workspace(lexical) and self.inside_workspace(real)
        ):
            escape = " via a symlink" if self.inside_workspace(lexical) else ""
            raise PermissionDenied(
                f"{raw} resolves to {real}, outside the workspace {self.workspace}{escape}; "
                "workspace-only mode is on, so use a path inside the workspace"
            )
        return real

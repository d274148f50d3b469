"""Path checks done the safe way round: canonicalise first, then judge.

A path is refused when it has a NUL byte or climbs with ``..`` (as ZeroClaw's
``is_path_allowed`` refuses it: a lexical fold would let ``../../etc/hostname`` through in
every mode), or — in workspace-only mode — when it lands outside the workspace. A path in a
secret place (``[security] forbidden_paths``, by default ``SECRET_PATHS``) is a secret when its
lexical form, its real form (symlinks followed) or — on this machine — its inode (a hard link
to a key) lands there. Checking all three catches a symlink inside the workspace that points at
``~/.ssh``, a ``..`` inside a symlink's target, and ``ln ~/.ssh/id_rsa notes.txt``. Secrets are
never written; they are read only when the user lists them in ``allowed_secret_paths`` or
approves that one call.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from tui.errors import InvalidArguments, PermissionDenied
from tui.security.secret_inodes import SecretInodes, linked_secret
from tui.security.secrets import secret_regex

ALLOW_SETTING = "[security].allowed_secret_paths"


def _canonical(path: str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(path)))


def _expand_home(path: str, home: str | None) -> str:
    if home is None:
        return os.path.expanduser(path)
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    return path


@dataclass(frozen=True)
class Checked:
    """A path after every check but the secret one, and why it is a secret if it is."""

    path: Path
    """Canonical (symlinks followed on this machine)."""
    secret: str | None = None
    """``"<path> is inside <place>"``, or None when it is no secret (or an allowed one)."""


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
    allowed_secrets: list[str] = field(default_factory=list)
    """Secret places the user lets the agent read (``allowed_secret_paths``)."""
    relative_base: Callable[[], str | None] | None = field(default=None, repr=False)
    """Where relative paths start when it answers an absolute path (a shared shell's
    directory); the workspace otherwise."""

    def __post_init__(self) -> None:
        self.workspace = self._canonical(str(self.workspace))
        home = self.home if self.home is not None else os.path.expanduser("~")
        # A relative entry (``.env``, ``secrets/``) names a place in the workspace.
        patterns = [self._absolute(item) for item in self.forbidden]
        if self.local:
            # A secret place that is itself a symlink: its real spelling is secret too.
            for item in list(patterns):
                if "*" not in item and "?" not in item and "[" not in item:
                    real = str(self._canonical(item))
                    if real != os.path.normpath(_expand_home(item, self.home)):
                        patterns.append(real)
        self.patterns = tuple(dict.fromkeys(patterns))
        self._home = home
        self.inodes = SecretInodes(self.patterns, home)
        self._roots = [self.workspace, *(self._canonical(root) for root in self.allowed_roots)]

    @functools.cached_property
    def _secret(self) -> re.Pattern[str]:
        """Compiled on the first path checked (~25 ms): a run's first request need not wait."""
        return secret_regex(self.patterns, self._home)

    @functools.cached_property
    def _allowed(self) -> re.Pattern[str]:
        return secret_regex(tuple(self.allowed_secrets), self._home)

    def _absolute(self, item: str) -> str:
        if item.startswith(("/", "~")):
            return item
        return str(self.workspace / item)

    def _canonical(self, path: str) -> Path:
        if self.local:
            return _canonical(path)
        return Path(os.path.normpath(_expand_home(path, self.home)))

    def base_dir(self) -> Path:
        """The directory relative paths start at (see ``relative_base``)."""
        base = self.relative_base() if self.relative_base is not None else None
        if base and base.startswith("/") and "\x00" not in base:
            return Path(_expand_home(base, self.home))
        return self.workspace

    def inside_workspace(self, path: Path) -> bool:
        return any(path.is_relative_to(root) for root in self._roots)

    def forbidden_match(self, path: Path) -> str | None:
        """The secret place holding ``path`` (lexically), or None."""
        match = self._secret.match(os.path.normpath(str(path)))
        return match.group(0).rstrip("/") if match else None

    def _hit(self, path: str, allowance: Collection[Path]) -> str | None:
        place = self.forbidden_match(Path(path))
        if place is None or self._allowed.match(path) or _granted(path, allowance):
            return None
        return place

    def secret_reason(
        self, lexical: str, real: str | None = None, allowance: Collection[Path] = ()
    ) -> str | None:
        """Why ``lexical`` (absolute, ``..`` folded) is a secret, or None.

        Args:
            lexical: the path as named.
            real: its canonical form when known (None: computed here on a local target).
            allowance: paths approved for this one call; they and what they hold pass.
        """
        place = self._hit(lexical, allowance)
        if place is not None:
            return f"{lexical} is inside the protected path {place}"
        if not self.local:
            return None
        real = real if real is not None else os.path.realpath(lexical)
        if real != lexical and (place := self._hit(real, allowance)) is not None:
            return f"{lexical} resolves to {real}, inside the protected path {place}"
        linked = linked_secret(real, self.inodes)
        if (
            linked is not None
            and self._hit(linked, allowance) is not None
            and not _granted(real, allowance)
        ):
            return f"{lexical} is a hard link to the secret file {linked}"
        return None

    def withheld(self, path: str, *, follow: bool = True, allowance: Collection[Path] = ()) -> bool:
        """Whether a listing or search must leave this (absolute) path out.

        ``follow=False`` when the caller knows the entry is no symlink (a walk that does not
        follow links): the real path is then the lexical one, and one ``realpath`` is saved.
        """
        lexical = os.path.normpath(path)
        return self.secret_reason(lexical, None if follow else lexical, allowance) is not None

    def check(self, raw: str, allowance: Collection[Path] = (), base: str | None = None) -> Checked:
        """Every refusal but the secret one, which is reported for the caller to decide.

        Raises:
            InvalidArguments: empty path.
            PermissionDenied: NUL byte, or outside the workspace when workspace-only is on.
        """
        if "\x00" in raw:
            raise PermissionDenied("path contains a NUL byte; pass a plain path")
        if not raw.strip():
            raise InvalidArguments("path is empty")
        traversal = climbs(raw)
        if traversal is not None:
            raise PermissionDenied(
                f"{raw}: {traversal}; tool paths never climb with `..` (the path-traversal rule, "
                "as ZeroClaw's is_path_allowed). Name the place directly: an absolute path, or "
                "one relative to where the call starts"
            )
        expanded = Path(_expand_home(raw, self.home))
        if not expanded.is_absolute():
            expanded = (Path(base) if base else self.base_dir()) / expanded
        lexical = Path(os.path.normpath(expanded))
        real = Path(os.path.realpath(expanded)) if self.local else lexical
        if self.workspace_only and not (
            self.inside_workspace(lexical) and self.inside_workspace(real)
        ):
            escape = " via a symlink" if self.inside_workspace(lexical) else ""
            raise PermissionDenied(
                f"{raw} resolves to {real}, outside the workspace {self.workspace}{escape}; "
                "workspace-only mode is on, so use a path inside the workspace"
            )
        return Checked(real, self.secret_reason(str(lexical), str(real), allowance))

    def resolve(
        self,
        raw: str,
        *,
        write: bool = False,
        allowance: Collection[Path] = (),
        base: str | None = None,
    ) -> Path:
        """A checked, canonical absolute path.

        Args:
            raw: the path as the model gave it.
            write: the call writes there; a secret place is never written.
            allowance: secret paths the user approved for this one call (reads only).

        Raises:
            InvalidArguments: empty path.
            PermissionDenied: NUL byte, a secret, or outside the workspace when
                workspace-only is on.
        """
        checked = self.check(raw, () if write else allowance, base)
        if checked.secret is not None:
            raise PermissionDenied(secret_refusal(raw, checked.secret, write=write))
        return checked.path


def climbs(raw: str) -> str | None:
    """What makes ``raw`` a traversal ZeroClaw's ``is_path_allowed`` refuses, or None: a
    ``..`` component (``../x``, ``a/../b``, ``..``), its URL-encoded spelling (``..%2f``), or
    ``~user`` (another account's home, which a shell would expand at run time)."""
    if ".." in raw.split("/"):
        return "it has a `..` component"
    lowered = raw.lower()
    if "..%2f" in lowered or "%2f.." in lowered:
        return "it has a URL-encoded `..` component"
    if raw.startswith("~") and raw != "~" and not raw.startswith("~/"):
        return "it names another account's home (~user)"
    return None


def secret_refusal(raw: str, reason: str, *, write: bool) -> str:
    if write:
        return f"{raw}: {reason}; agent tools never write credentials, keys or histories"
    return (
        f"{raw}: {reason}; agent tools do not read credentials, keys or histories unless the "
        f"user approves that read or lists the path in {ALLOW_SETTING}"
    )


def _granted(path: str, allowance: Collection[Path]) -> bool:
    return any(Path(path).is_relative_to(root) for root in allowance)

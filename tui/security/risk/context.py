"""Where a command is rated for: the facts the rater needs beyond the command's text.

``git status`` is read-only in a clean repository and runs a program in one whose config sets
``core.fsmonitor``; ``grep -r x .`` reads secrets when ``.`` is a home folder. The text alone
cannot tell, so the policy hands the rater a context, and without one the rater assumes the
worst it cannot check.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from dataclasses import dataclass
from typing import Literal

from tui.security.secrets import SECRET_PATHS, expanded_patterns, secret_match, secret_regex

__all__ = ["RiskContext", "secret_inside", "secret_path"]


@dataclass(frozen=True)
class RiskContext:
    """The place a command starts in; frozen, so verdicts can be cached per context."""

    cwd: str | None = None
    """The directory the command starts in (absolute), or None when unknown."""
    home: str | None = None
    """The target's home folder, for ``~`` and ``$HOME``; None means "any home"."""
    local: bool = False
    """True when the target is this machine, so its files (git config) can be read to check."""
    shell: Literal["bash", "zsh", "sh"] = "zsh"
    """The shell that runs the command. zsh is the cautious default: without
    ``interactive_comments`` it runs what bash would treat as a ``#`` comment."""
    secrets: tuple[str, ...] = SECRET_PATHS
    """The secret places (the policy's configured ``forbidden_paths``)."""


_VARIABLE = re.compile(r"\$(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|[0-9$!#?*@-])")
_HOME_VARIABLE = re.compile(r"^(\$HOME|\$\{HOME\})(?=/|$)")


def _absolute(path: str, cwd: str | None, home: str | None) -> str | None:
    """``path`` as an absolute, normalised path; expansions stand for any one component."""
    base_home = home or "/root"
    if path == "~" or path.startswith("~/"):
        path = base_home + path[1:]
    path = _HOME_VARIABLE.sub(base_home, path)
    # ``/proc/$PPID/environ``: a variable can be any name, so it matches like ``*``.
    path = _VARIABLE.sub("*", path)
    if not path.startswith("/"):
        if cwd is None:
            return None
        path = posixpath.join(cwd, path)
    return posixpath.normpath(path)


def secret_path(
    path: str, cwd: str | None, home: str | None, patterns: tuple[str, ...] = SECRET_PATHS
) -> str | None:
    """The secret place ``path`` names (itself or inside it), or None."""
    absolute = _absolute(path, cwd, home)
    if absolute is None:
        return None
    if _WILD.search(absolute):
        return _wild_match(absolute, home, patterns)
    # One regex scan rules most words out; the matcher then names the place.
    if not secret_regex(patterns, home if home is not None else os.path.expanduser("~")).match(
        absolute
    ):
        return None
    return secret_match(absolute, patterns=patterns, home=home)


_WILD = re.compile(r"[*?\[{]")
_BRACES = re.compile(r"\{[^}]*\}")


def _wild_match(path: str, home: str | None, patterns: tuple[str, ...]) -> str | None:
    """``cat ~/.s*/id_rsa``, ``cat ~/.{ssh,aws}/*``: a glob the shell may expand to a secret.

    Each glob component is compared both ways (it may match the secret's name, and the
    secret's own wildcards may match it); braces count as ``*``.
    """
    parts = tuple(part for part in _BRACES.sub("*", path).split("/") if part)
    for pattern in patterns:
        for expanded in expanded_patterns((pattern,), home=home):
            if len(parts) >= len(expanded) and all(
                fnmatch.fnmatchcase(want, part) or fnmatch.fnmatchcase(part, want)
                for part, want in zip(parts, expanded, strict=False)
            ):
                return pattern
    return None


def secret_inside(
    path: str, cwd: str | None, home: str | None, patterns: tuple[str, ...] = SECRET_PATHS
) -> str | None:
    """A secret place a recursive read of ``path`` would reach, or None.

    A folder that contains ``~/.ssh`` (``~``, ``/home``, ``/``) hands the keys to ``grep -r``
    or ``tar c`` as surely as naming them does.
    """
    absolute = _absolute(path, cwd, home)
    if absolute is None:
        return None
    found = secret_match(absolute, patterns=patterns, home=home)
    if found is not None:
        return found
    parts = tuple(part for part in absolute.split("/") if part)
    for pattern in patterns:
        for expanded in expanded_patterns((pattern,), home=home):
            if len(parts) < len(expanded) and all(
                part == want or "*" in part or fnmatch.fnmatchcase(part, want)
                for part, want in zip(parts, expanded, strict=False)
            ):
                return pattern
    return None

"""Where secrets live: one list, read by the path guard and by the command rater alike.

Reading one of these hands its content to the model and, through it, to the provider; so the
file tools refuse them, listing tools skip them, and a shell command that reads one is rated a
secret read. The list is deliberately broad: a false "secret" costs one approval, a missed one
costs a leaked key.

Patterns are paths whose components may hold shell-style wildcards (``*`` matches within one
component); a pattern covers the place it names and everything below it. ``~`` stands for every
home folder a command could name: the target's own, ``/root`` and ``/home/*``.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from collections.abc import Iterable

SECRET_PATHS: tuple[str, ...] = (
    # keys and cloud credentials
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.config/gh",
    "~/.config/hub",
    "~/.netrc",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.password-store",
    "~/.npmrc",
    "~/.yarnrc.yml",
    "~/.pypirc",
    "~/.config/pip/pip.conf",
    "~/.gem/credentials",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.vault-token",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.config/op",
    "~/.local/share/keyrings",
    # shell and REPL histories: typed passwords and tokens end up there
    "~/.bash_history",
    "~/.zsh_history",
    "~/.zhistory",
    "~/.history",
    "~/.sh_history",
    "~/.ash_history",
    "~/.local/share/fish/fish_history",
    "~/.python_history",
    "~/.node_repl_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
    "~/.rediscli_history",
    # the system's own
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private",
    "/proc/kcore",
    "/dev/mem",
    "/dev/kmem",
    # every process's environment and memory: the agent's API key lived there
    "/proc/*/environ",
    "/proc/*/mem",
    "/proc/*/task/*/environ",
    "/proc/*/task/*/mem",
)
"""Built-in secret places; ``[security] forbidden_paths`` starts from this list."""

_HOMES = ("/root", "/home/*", "/Users/*")


def _parts(path: str) -> tuple[str, ...]:
    return tuple(part for part in path.split("/") if part)


@functools.lru_cache(maxsize=64)
def _expanded(patterns: tuple[str, ...], home: str | None) -> tuple[tuple[str, ...], ...]:
    """Each pattern as path components, ``~`` spelled out for every home it may mean."""
    out: list[tuple[str, ...]] = []
    homes = [*_HOMES, *([home] if home else [])]
    for pattern in patterns:
        if pattern == "~" or pattern.startswith("~/"):
            for base in homes:
                out.append(_parts(posixpath.normpath(base + pattern[1:])))
        else:
            out.append(_parts(posixpath.normpath(pattern)))
    return tuple(dict.fromkeys(out))


def _covers(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    if len(path) < len(pattern):
        return False
    return all(
        part == want or fnmatch.fnmatchcase(part, want)
        for part, want in zip(path, pattern, strict=False)
    )


def secret_match(
    path: str, *, patterns: Iterable[str] = SECRET_PATHS, home: str | None = None
) -> str | None:
    """The pattern that makes ``path`` a secret, or None.

    Args:
        path: an absolute path, already normalised (``..`` folded); a relative path never
            matches, so callers resolve first.
        patterns: the secret places (``SECRET_PATHS`` or the configured list).
        home: the home folder ``~`` means on the target, besides ``/root`` and ``/home/*``.
    """
    if not path.startswith("/"):
        return None
    home = home if home is not None else os.path.expanduser("~")
    parts = _parts(posixpath.normpath(path))
    for pattern, expanded in _pairs(tuple(patterns), home):
        if _covers(expanded, parts):
            return pattern
    return None


@functools.lru_cache(maxsize=64)
def _pairs(patterns: tuple[str, ...], home: str | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each original pattern beside each of its expansions (messages name the original)."""
    return tuple(
        (pattern, expanded) for pattern in patterns for expanded in _expanded((pattern,), home)
    )


def expanded_patterns(
    patterns: Iterable[str] = SECRET_PATHS, *, home: str | None = None
) -> tuple[tuple[str, ...], ...]:
    """Each pattern as absolute path components, ``~`` spelled out for every home.

    For callers that prune a walk or build exclusions relative to a search root.
    """
    home = home if home is not None else os.path.expanduser("~")
    return _expanded(tuple(patterns), home)


def _component_regex(component: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(component):
        char = component[index]
        index += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := component.find("]", index + 1)) != -1:
            body = component[index:end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            index = end + 1
        else:
            out.append(re.escape(char))
    return "".join(out)


@functools.lru_cache(maxsize=64)
def secret_regex(patterns: tuple[str, ...], home: str | None) -> re.Pattern[str]:
    """One regex equivalent to ``secret_match`` for normalised absolute paths.

    A listing or a search checks every path it returns; ``secret_match`` tries each expanded
    pattern in turn (hundreds of wildcard matches a path), one alternation is a single scan.
    """
    alternatives = [
        "/" + "/".join(_component_regex(part) for part in parts)
        for parts in _expanded(patterns, home)
        if parts
    ]
    if not alternatives:
        return re.compile(r"(?!x)x")
    return re.compile("(?:" + "|".join(alternatives) + ")(?:/|$)")

"""Which programs a repository's own config makes git run.

A cloned repository's ``.git/config`` is attacker-written: ``core.fsmonitor`` runs a program on
``git status``, ``core.pager`` on ``git log``, ``diff.*.textconv`` on ``git diff``. So a git
"read" is read-only only in a repository whose config sets none of these for that subcommand.
The config is read in pure Python (no ``git`` process per rating) and cached by file and mtime;
``include.path`` and ``includeIf.*.path`` are followed, since they pull in more keys.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

__all__ = ["GitHazard", "RepoConfig", "hazards_for", "repo_config"]

_MAX_INCLUDES = 10


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class GitHazard:
    """One config key that makes some git subcommands run a program."""

    key: str
    """The key as git spells it lower-cased, e.g. ``core.fsmonitor``."""
    source: str
    """The file that sets it."""


@dataclass(frozen=True)
class RepoConfig:
    """What was found for one repository."""

    hazards: tuple[GitHazard, ...]
    checked: bool
    """False when some config could not be read (an include out of reach, a bad file)."""
    stamp: tuple[tuple[str, float], ...]
    """Each file read with its mtime: a changed file means a fresh verdict."""


# Subcommands that refresh the index or read the work tree, and so run fsmonitor and filters.
_WORKTREE = _names(
    "status diff add commit checkout switch restore stash reset merge rebase pull cherry-pick "
    "revert am apply ls-files describe blame grep mv rm clean update-index difftool "
    "submodule worktree bisect archive"
)
_DIFFING = _names(
    "diff log show blame grep whatchanged range-diff stash format-patch cat-file diff-tree "
    "diff-index diff-files annotate difftool add"
)
_NETWORK = _names(
    "fetch pull push ls-remote clone submodule remote archive request-pull send-email"
)
_HOOKS = _names(
    "commit merge checkout switch rebase am push pull reset cherry-pick revert worktree gc clone"
)
_EDITING = _names("commit rebase tag merge notes config add revert cherry-pick")
_SIGNING = _names("log show verify-commit verify-tag commit tag merge rebase")
_ALL = frozenset({"*"})

_RULES: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile(r"^core\.fsmonitor$"), _WORKTREE),
    (re.compile(r"^filter\..+\.(clean|smudge|process)$"), _WORKTREE | {"show"}),
    (re.compile(r"^core\.pager$"), _ALL),
    (re.compile(r"^diff\.external$"), _DIFFING),
    (re.compile(r"^diff\..+\.(textconv|command)$"), _DIFFING),
    (re.compile(r"^interactive\.difffilter$"), frozenset({"add", "checkout", "reset", "stash"})),
    (
        re.compile(
            r"^(core\.(sshcommand|gitproxy|askpass|alternaterefscommand)|credential\..*helper"
            r"|remote\..+\.(uploadpack|receivepack|proxy)|url\..+\.(insteadof|pushinsteadof)"
            r"|protocol\..*allow|ssh\.variant)$"
        ),
        _NETWORK,
    ),
    (re.compile(r"^core\.hookspath$"), _HOOKS),
    (re.compile(r"^(core\.editor|sequence\.editor)$"), _EDITING),
    (re.compile(r"^gpg\.(.+\.)?program$"), _SIGNING),
    (re.compile(r"^merge\..+\.driver$"), frozenset({"merge", "pull", "rebase", "cherry-pick"})),
    (re.compile(r"^submodule\..+\.update$"), frozenset({"submodule"})),
    (re.compile(r"^(difftool|mergetool)\..+\.cmd$"), frozenset({"difftool", "mergetool"})),
    (re.compile(r"^(man|web|browser)\..*(cmd|path|browser)$"), frozenset({"help", "instaweb"})),
)
_NEUTRAL = frozenset({"", "false", "no", "off", "0", "true", "yes", "on", "1"})
"""Values that name no program: ``core.fsmonitor=false`` (or ``true``, git's own daemon)."""


def hazards_for(config: RepoConfig, subcommand: str) -> list[GitHazard]:
    """The keys that would make ``git <subcommand>`` run a program."""
    found = []
    for hazard in config.hazards:
        key = hazard.key
        if key.startswith("alias."):
            if key[len("alias.") :] == subcommand:
                found.append(hazard)
            continue
        if key.startswith("pager."):
            if key[len("pager.") :] == subcommand:
                found.append(hazard)
            continue
        for pattern, subcommands in _RULES:
            if pattern.match(key) and ("*" in subcommands or subcommand in subcommands):
                found.append(hazard)
                break
    return found


def _is_hazard(key: str, value: str) -> bool:
    if key.startswith("alias."):
        return True  # an alias may shadow any name and run a shell command with ``!``
    if key.startswith("pager."):
        return value.strip().lower() not in _NEUTRAL
    if key in ("core.fsmonitor",) and value.strip().lower() in _NEUTRAL:
        return False
    return any(pattern.match(key) for pattern, _ in _RULES)


def _find_git_dir(start: str) -> tuple[str, str] | None:
    """(git dir, common dir) of the repository holding ``start``, or None."""
    current = os.path.abspath(start)
    while True:
        dot_git = os.path.join(current, ".git")
        if os.path.isdir(dot_git):
            return dot_git, _common_dir(dot_git)
        if os.path.isfile(dot_git):
            with open(dot_git, encoding="utf-8", errors="replace") as handle:
                line = handle.readline().strip()
            if not line.startswith("gitdir:"):
                raise OSError(f"{dot_git} does not name a git dir")
            git_dir = os.path.normpath(os.path.join(current, line[len("gitdir:") :].strip()))
            return git_dir, _common_dir(git_dir)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _common_dir(git_dir: str) -> str:
    path = os.path.join(git_dir, "commondir")
    if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as handle:
            return os.path.normpath(os.path.join(git_dir, handle.read().strip()))
    return git_dir


_UNESCAPE = re.compile(r"\\(.)")
_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')


def _parse(text: str) -> list[tuple[str, str]]:
    """(key, value) pairs of a git config file, keys lower-cased except the subsection."""
    pairs: list[tuple[str, str]] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        while line.startswith("["):
            match = _SECTION.match(line)
            if match is None:
                raise ValueError(f"unreadable section header {raw!r}")
            name, sub, rest = match.groups()
            name = name.lower()
            if sub is None and "." in name:  # ``[branch.main]``: old-style subsection
                head, _, tail = name.partition(".")
                section = f"{head}.{tail}"
            else:
                section = name if sub is None else name + "." + _UNESCAPE.sub(r"\1", sub)
            line = rest.strip()
        if not line or line[0] in "#;":
            continue
        key, eq, value = line.partition("=")
        key = key.strip().lower()
        value = value.strip() if eq else "true"
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if section:
            pairs.append((f"{section}.{key}" if "." not in section else _join(section, key), value))
    return pairs


def _join(section: str, key: str) -> str:
    head, _, sub = section.partition(".")
    return f"{head}.{sub}.{key}".lower() if head in ("alias", "pager") else f"{head}.{sub}.{key}"


@functools.lru_cache(maxsize=256)
def _read_file(path: str, mtime: float) -> tuple[tuple[str, str], ...]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return tuple(_parse(handle.read()))


def _lower_key(key: str) -> str:
    """git ignores case in section and variable names, not in subsections (``diff.X.textconv``)."""
    head, _, rest = key.partition(".")
    if "." in rest:
        sub, _, name = rest.rpartition(".")
        return f"{head.lower()}.{sub}.{name.lower()}"
    return key.lower()


def repo_config(directory: str) -> RepoConfig | None:
    """The hazards of the repository ``directory`` is in; None when it is in no repository."""
    try:
        found = _find_git_dir(directory)
    except OSError:
        return RepoConfig((), checked=False, stamp=())
    if found is None:
        return None
    git_dir, common = found
    files = [os.path.join(common, "config")]
    worktree_config = os.path.join(git_dir, "config.worktree")
    if git_dir != common and os.path.isfile(worktree_config):
        files.append(worktree_config)
    hazards: list[GitHazard] = []
    stamp: list[tuple[str, float]] = []
    checked = True
    seen: set[str] = set()
    queue = [(path, 0) for path in files]
    while queue:
        path, depth = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            mtime = os.stat(path).st_mtime
            pairs = _read_file(path, mtime)
        except FileNotFoundError:
            if depth > 0:
                checked = False  # an include we cannot see might set anything
            continue
        except (OSError, ValueError):
            checked = False
            continue
        stamp.append((path, mtime))
        for key, value in pairs:
            key = _lower_key(key)
            if key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
                if depth >= _MAX_INCLUDES:
                    checked = False
                    continue
                target = os.path.expanduser(value)
                if not os.path.isabs(target):
                    target = os.path.join(os.path.dirname(path), target)
                queue.append((os.path.normpath(target), depth + 1))
            elif _is_hazard(key, value):
                hazards.append(GitHazard(key, path))
    return RepoConfig(tuple(hazards), checked, tuple(stamp))


def config_stamp(directory: str) -> tuple[tuple[str, float], ...] | None:
    """A cheap fingerprint of the repository's config, for cache keys (None: no repository)."""
    config = repo_config(directory)
    return None if config is None else (*config.stamp, ("checked", float(config.checked)))

"""The pure-Python file walk the search tools use when ripgrep is not on this machine.

It gives ripgrep's answers for the common cases: the same traversal order (``--sort path``),
hidden files included, symlinks not followed, the same folders skipped, and a
".gitignore-lite" that honours the usual pattern forms, so a search reads the same whichever
engine ran.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tui.tools.builtin.files.access import (
    SKIP_DIRS,
)
from tui.tools.builtin.search.globs import GlobRule


@dataclass
class IgnoreFile:
    """The rules of one ``.gitignore``, which apply to paths below its own folder."""

    base: Path
    rules: list[GlobRule]

    def verdict(self, path: Path, is_dir: bool) -> bool | None:
        """True ignored, False re-included by a ``!`` rule, None no rule matched."""
        if not path.is_relative_to(self.base):
            return None
        rel = path.relative_to(self.base).as_posix()
        result: bool | None = None
        for rule in self.rules:
            if rule.matches(rel, is_dir):
                result = not rule.negate
        return result


def load_ignore_file(folder: Path) -> IgnoreFile | None:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    rules = [rule for line in text.split("\n") if (rule := GlobRule.parse(line, braces=False))]
    return IgnoreFile(folder, rules) if rules else None


def enclosing_ignore_files(root: Path) -> list[IgnoreFile]:
    """``.gitignore`` files of ``root`` and its parents up to the repository root, outermost
    first (a deeper file overrides a shallower one, as in git)."""
    found: list[IgnoreFile] = []
    folder = root
    while True:
        ignore = load_ignore_file(folder)
        if ignore is not None:
            found.append(ignore)
        if (folder / ".git").exists() or folder.parent == folder:
            break
        folder = folder.parent
    found.reverse()
    return found


def is_ignored(ignores: list[IgnoreFile], path: Path, is_dir: bool) -> bool:
    verdict: bool | None = None
    for ignore in ignores:
        answer = ignore.verdict(path, is_dir)
        if answer is not None:
            verdict = answer
    return bool(verdict)


Override = Callable[[str, bool], bool | None]
"""ripgrep's ``-g`` semantics for a path relative to the search root: True includes it
whatever ``.gitignore`` says, False excludes it, None leaves it to ``.gitignore``."""


Hides = Callable[[str], bool]
"""True for an absolute path (no symlink) a walk must neither return nor enter: a secret."""


def walk_files(
    root: Path,
    *,
    override: Override | None = None,
    stop: Callable[[], bool] | None = None,
    hides: Hides | None = None,
) -> Iterator[str]:
    """Files under ``root`` (relative, ``/``-separated) in ripgrep's ``--sort path`` order.

    Hidden files are included; symlinks are not followed (as ripgrep without ``-L``);
    ``SKIP_DIRS``, whatever the ``.gitignore`` files say and what ``hides`` says are skipped.
    """
    yield from _walk(root, "", enclosing_ignore_files(root), override, stop, hides)


def _walk(
    folder: Path,
    rel: str,
    ignores: list[IgnoreFile],
    override: Override | None,
    stop: Callable[[], bool] | None,
    hides: Hides | None = None,
) -> Iterator[str]:
    if stop is not None and stop():
        return
    try:
        with os.scandir(folder) as listing:
            items = sorted(listing, key=lambda item: item.name)
    except OSError:
        return
    if rel and (own := load_ignore_file(folder)) is not None:
        ignores = [*ignores, own]
    for item in items:
        if item.name in SKIP_DIRS or item.is_symlink():
            continue
        try:
            is_dir = item.is_dir(follow_symlinks=False)
        except OSError:
            continue
        child = rel + item.name
        verdict = override(child, is_dir) if override is not None else None
        if verdict is False or (verdict is None and is_ignored(ignores, Path(item.path), is_dir)):
            continue
        if hides is not None and hides(item.path):
            continue
        if is_dir:
            yield from _walk(Path(item.path), child + "/", ignores, override, stop, hides)
        elif item.is_file(follow_symlinks=False):
            yield child

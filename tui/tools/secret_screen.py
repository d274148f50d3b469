"""What listing and search tools leave out: every path the guard calls a secret.

``grep_search`` on ``~`` must not hand the model ``~/.ssh/id_rsa``, nor a folder holding a
symlink or a hard link to it. Two layers, because either alone has a gap: ripgrep (and
``find``) get exclusions so they never descend into a secret place, and every path they
return is screened again through the guard (lexical, real, inode), which catches the links
no exclusion can name. The Python walks ask the screen before descending. Results then say
how many entries were withheld, never which.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from tui.security.paths import ALLOW_SETTING, PathGuard
from tui.security.secrets import expanded_patterns
from tui.tools.context import ToolContext


@dataclass
class SecretScreen:
    """One call's screen: the guard, the secrets approved for this call, and a tally."""

    guard: PathGuard
    allowance: tuple[Path, ...] = ()
    withheld: int = 0

    @classmethod
    def of(cls, ctx: ToolContext) -> SecretScreen:
        return cls(ctx.policy.paths, ctx.secret_allowance)

    def hides(self, path: str, *, follow: bool = True) -> bool:
        """True (and counted) when ``path`` (absolute) must be left out.

        ``follow=False`` for an entry the caller knows is no symlink.
        """
        if self.guard.withheld(path, follow=follow, allowance=self.allowance):
            self.withheld += 1
            return True
        return False

    def unlinked(self, path: str) -> bool:
        """``hides`` for a walk that never follows symlinks (one ``realpath`` saved a file)."""
        return self.hides(path, follow=False)

    def exclusions(self, root: Path) -> list[str]:
        """ripgrep ``-g`` globs (relative to ``root``, run with ``root`` as the working
        folder) that keep it out of every secret place below ``root``; the places that
        exist on a local target are counted as withheld."""
        globs: list[str] = []
        for rel in _places_below(self.guard, root):
            globs += ["-g", f"!/{rel}"]
            if self.guard.local:
                self.withheld += len(glob.glob(str(root / rel), include_hidden=True))
        return globs

    def note(self) -> str:
        """The line a result carries when something was left out (empty otherwise)."""
        if not self.withheld:
            return ""
        entries = "entry" if self.withheld == 1 else "entries"
        return (
            f"note: {self.withheld} {entries} withheld as secrets (keys, credentials, "
            "histories): the file tools never list or search them; ask the user to add a "
            f"path to {ALLOW_SETTING} if a task truly needs one\n"
        )


def _places_below(guard: PathGuard, root: Path) -> list[str]:
    """Each secret pattern that lies strictly below ``root``, relative to it."""
    home = guard.home if guard.home is not None else os.path.expanduser("~")
    root_parts = Path(os.path.normpath(root)).parts[1:]
    below: list[str] = []
    for parts in expanded_patterns(guard.patterns, home=home):
        if len(parts) <= len(root_parts):
            continue
        if all(fnmatchcase(have, want) for have, want in zip(root_parts, parts, strict=False)):
            below.append("/".join(parts[len(root_parts) :]))
    return list(dict.fromkeys(below))

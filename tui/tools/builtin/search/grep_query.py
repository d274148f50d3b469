"""What a ``grep_search`` asks for, and how its pattern and ``glob`` are read.

The parameters, the pattern compiled for the Python engine, and the ``glob`` filter applied
with ripgrep's meaning by both engines (a name glob leaves ``.gitignore`` in charge, a path
glob wins over it).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from tui.errors import InvalidArguments
from tui.tools.base import ToolParams
from tui.tools.builtin.search.globs import GlobRule
from tui.tools.builtin.search.ripgrep import type_filter

OutputMode = Literal["content", "files_with_matches", "count"]


class GrepSearchParams(ToolParams):
    pattern: str = Field(
        min_length=1,
        description="Regular expression to search for (ripgrep/Rust syntax, e.g. "
        "`def \\w+_handler`, `TODO|FIXME`); set fixed_strings for a literal string.",
    )
    path: str | None = Field(
        default=None, description="File or folder to search (default: the workspace)."
    )
    glob: str | None = Field(
        default=None,
        description="Only search files matching this glob, e.g. `*.py`, `*.{ts,tsx}`; prefix "
        "with `!` to exclude instead, e.g. `!*.min.js`. A glob with a `/` (`src/*/api.go`) is "
        "matched against the path relative to `path` and includes files even if .gitignore "
        "lists them.",
    )
    case_insensitive: bool = Field(default=False, description="Ignore letter case.")
    fixed_strings: bool = Field(
        default=False, description="Treat pattern as a literal string, not a regex."
    )
    context: int = Field(
        default=0,
        ge=0,
        le=20,
        description="Lines of context to show before and after each match (content mode).",
    )
    output_mode: OutputMode = Field(
        default="content",
        description="`content` (matching lines with line numbers, the default), "
        "`files_with_matches` (only the file paths) or `count` (matching lines per file).",
    )
    max_results: int = Field(
        default=100,
        ge=1,
        le=2000,
        description="Most matching lines (content) or files (the other modes) to return.",
    )


def compile_pattern(params: GrepSearchParams) -> re.Pattern[str]:
    source = re.escape(params.pattern) if params.fixed_strings else params.pattern
    try:
        return re.compile(source, re.IGNORECASE if params.case_insensitive else 0)
    except re.error as error:
        raise InvalidArguments(
            f"invalid regular expression {params.pattern!r}: {error}. Escape special "
            "characters such as ( [ . * + ?, or set fixed_strings to search literally"
        ) from None


class FileFilter:
    """The ``glob`` parameter, as ripgrep applies it; ``!`` excludes instead of including.

    A name glob (no ``/``, like ``*.py`` or ``**/*.py``) filters file names and leaves
    ``.gitignore`` in charge (ripgrep's ``--type-add`` / ``-t``). A path glob (``src/*/x.py``)
    is matched against the path relative to the search root with ripgrep's ``-g`` meaning:
    it wins over ``.gitignore`` for what it matches, and excluding one prunes folders too.
    """

    def __init__(self, glob: str | None) -> None:
        self.glob = glob
        self.rule: GlobRule | None = None
        self.by_name = True
        if not glob:
            return
        negate = glob.startswith("!")
        body = glob[1:] if negate else glob
        while body.startswith("**/"):
            body = body[3:]
        self.by_name = "/" not in body.rstrip("/")
        text = ("!" if negate else "") + (body if self.by_name else glob.lstrip("!"))
        self.rule = GlobRule.parse(text, braces=True, strict=True)
        if self.rule is None:
            raise InvalidArguments(f"glob {glob!r} has no pattern in it")
        self.name_glob = body

    def rg_args(self) -> list[str]:
        if self.rule is None or self.glob is None:
            return []
        if self.by_name:
            return type_filter(self.name_glob, exclude=self.rule.negate)
        return ["-g", self.glob]

    def override(self, rel: str, is_dir: bool) -> bool | None:
        if self.rule is None or self.by_name:
            return None
        if self.rule.matches(rel, is_dir):
            return not self.rule.negate
        if not self.rule.negate and not is_dir:
            return False
        return None

    def wants(self, rel: str) -> bool:
        """The name filter, applied after .gitignore (files only)."""
        if self.rule is None or not self.by_name:
            return True
        return self.rule.matches(rel, False) != self.rule.negate

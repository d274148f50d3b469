"""ARCHITECTURE.md names only places that exist: a contributor who follows the map finds every
file and folder it points at.

A path is a word in backticks with a ``/`` in it or a file's extension; it is read from
``tui/`` or from the repository's root (``tests/``, ``bench/``, ``styles/``, ``pyproject.toml``).
Placeholders (``<family>``), flags, slash commands and a bare extension are not paths.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAP = REPO / "ARCHITECTURE.md"
EXTENSIONS = (".py", ".md", ".toml", ".tcss", ".json", ".svg")
"""A word ending so names a file even without a folder."""
ROOTS = (REPO / "tui", REPO)


def named_paths(text: str) -> list[str]:
    """Every path the text names in backticks, in order, each once."""
    found: dict[str, None] = {}
    for quoted in re.findall(r"`([^`\n]+)`", text):
        for word in quoted.split():
            word = word.rstrip(",.;:)")
            if not word or word[0] in "-./[%<" or "<" in word or "*" in word:
                continue
            if "/" in word or word.endswith(EXTENSIONS):
                found[word] = None
    return list(found)


def test_the_reader_finds_paths_and_skips_what_is_not_one() -> None:
    text = (
        "`cli.py` and `exec/tmux/` (`tools/builtin/<family>.py`), `--inventory FILE`, "
        "`/undo`, `.tcss`, `python bench/startup.py`, `AgentSession`, `[fleet]`"
    )
    assert named_paths(text) == ["cli.py", "exec/tmux/", "bench/startup.py"]


PATHS = named_paths(MAP.read_text(encoding="utf-8"))


def test_the_map_names_many_places() -> None:
    """Guards the reader: a pattern that matched nothing would make the next test vacuous."""
    assert len(PATHS) >= 60, PATHS


@pytest.mark.parametrize("path", PATHS)
def test_every_path_the_map_names_exists(path: str) -> None:
    where = [root / path for root in ROOTS]
    assert any(place.exists() for place in where), (
        f"ARCHITECTURE.md names `{path}`, which is neither "
        + " nor ".join(str(place.relative_to(REPO)) for place in where)
    )

"""What the prompt's completion popup offers: the word under the cursor, and ranked choices.

Pure functions on text, so the ranking and the token rules are tested without a screen. Two
kinds of word complete: a slash command at the very start of the prompt (``/mo`` → ``/model``,
then its argument) and an ``@`` mention anywhere (``@srcmain`` → ``@src/main.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from tui.ui.command_table import COMMANDS

MAX_CHOICES = 50
"""The popup shows at most this many rows; a longer query narrows it."""


@dataclass(frozen=True)
class Choice:
    """One row: what it shows, what replaces the word when accepted, and a one-line help."""

    label: str
    insert: str
    help: str = ""


@dataclass(frozen=True)
class Word:
    """The word being completed: its kind, its text (after ``/`` or ``@``) and where it is."""

    kind: Literal["command", "argument", "path"]
    query: str
    row: int
    start: int
    """Column where the replaced text starts (the ``/`` or ``@`` itself, or the argument)."""
    end: int
    command: str = ""
    """For an argument: the words before it (``mcp restart``)."""


_MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s@]*)$")


def word_at(text: str, row: int, column: int) -> Word | None:
    """The completable word ending at the cursor, or None (then the popup closes)."""
    lines = text.split("\n")
    if row >= len(lines):
        return None
    before = lines[row][:column]
    if row == 0 and before.startswith("/") and not before.startswith("//"):
        body = before[1:]
        if " " not in body:
            return Word("command", body, 0, 0, column)
        words = body.split(" ")
        return Word(
            "argument",
            words[-1],
            0,
            column - len(words[-1]),
            column,
            command=" ".join(w for w in words[:-1] if w).lower(),
        )
    match = _MENTION.search(before)
    if match is not None:
        return Word("path", match.group(1), row, match.start(), column)
    return None


def fuzzy_score(query: str, candidate: str) -> float | None:
    """Higher is better; None when ``query`` is not a subsequence of ``candidate``.

    Case-insensitive. Rewards consecutive letters, letters at the start of a path component
    or word, and a match in the file name rather than its folders; shorter candidates win ties.
    """
    if not query:
        return 0.0  # nothing typed yet: the source's own order (current model first)
    lowered = candidate.lower()
    score = 0.0
    position = -1
    name_start = lowered.rfind("/") + 1
    for letter in query.lower():
        found = lowered.find(letter, position + 1)
        if found < 0:
            return None
        if found == position + 1:
            score += 3
        if found == 0 or lowered[found - 1] in "/_-. ":
            score += 2
        if found >= name_start:
            score += 1
        position = found
    if lowered.startswith(query.lower()):
        score += 5
    return score - len(candidate) / 1000


def rank(query: str, choices: Iterable[Choice], limit: int = MAX_CHOICES) -> list[Choice]:
    """The choices whose label matches ``query`` as a subsequence, best first."""
    scored: list[tuple[float, int, Choice]] = []
    for index, choice in enumerate(choices):
        score = fuzzy_score(query, choice.label)
        if score is not None:
            scored.append((-score, index, choice))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [choice for _score, _index, choice in scored[:limit]]


def command_choices() -> list[Choice]:
    """Every slash command; one that takes an argument is inserted with a trailing space."""
    out = []
    for command in COMMANDS:
        takes = command.usage.strip() != f"/{command.name}"
        out.append(
            Choice(f"/{command.name}", f"/{command.name}{' ' if takes else ''}", command.help)
        )
    return out


FIXED_ARGUMENTS: dict[str, tuple[Choice, ...]] = {
    "mode": tuple(
        Choice(m, m, h)
        for m, h in (
            ("read-only", "nothing that changes files or runs programs"),
            ("ask", "ask before anything risky"),
            ("auto-edit", "file edits run without asking"),
            ("full-auto", "everything runs without asking"),
        )
    ),
    "approve": tuple(
        Choice(a, a, h)
        for a, h in (
            ("90s", "auto-approve for 90 seconds"),
            ("10m", "auto-approve for 10 minutes"),
            ("1h", "auto-approve for an hour"),
            ("off", "end auto-approve now"),
        )
    ),
    "pane": (
        Choice("keep", "keep", "keep the tmux session after quitting"),
        Choice("close", "close", "close the tmux session when quitting"),
    ),
    "mcp": (
        Choice("restart", "restart ", "restart one MCP server"),
        Choice("trust", "trust", "review and trust this workspace's servers"),
    ),
}


class ArgumentSource(Protocol):
    """Where the arguments that depend on the session come from (models, sessions, servers)."""

    async def arguments(self, command: str) -> list[Choice]: ...

    async def commands(self) -> list[Choice]:
        """The session's own slash commands (command files and skills)."""
        ...

    async def paths(self) -> list[str]: ...

    def forget(self) -> None:
        """Drop what was listed for this prompt (called when it is sent)."""

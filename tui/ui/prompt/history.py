"""Prompt history: bounded, newest last, saved as JSON lines beside the transcripts.

Walking it with up/down keeps what the person was typing as a draft, so stepping back down
past the newest entry gives it back instead of losing it.
"""

from __future__ import annotations

import json
from pathlib import Path

MAX_ENTRIES = 500


class PromptHistory:
    def __init__(self, path: Path | None = None, *, limit: int = MAX_ENTRIES) -> None:
        self.path = path
        self.limit = limit
        self.entries: list[str] = []
        self._index: int | None = None
        self._draft = ""
        if path is not None:
            self.entries = _load(path, limit)

    def add(self, text: str) -> None:
        """Remember a sent prompt (a repeat of the newest entry is not stored twice)."""
        self._index = None
        if not text.strip() or (self.entries and self.entries[-1] == text):
            return
        self.entries.append(text)
        if len(self.entries) > self.limit:
            del self.entries[: len(self.entries) - self.limit]
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as file:
                    file.write(json.dumps(text) + "\n")
            except OSError:
                pass  # history is a convenience: never fail a prompt over it

    def previous(self, current: str) -> str | None:
        """The entry before the one shown; None at the oldest."""
        if not self.entries:
            return None
        if self._index is None:
            self._draft = current
            self._index = len(self.entries)
        if self._index == 0:
            return None
        self._index -= 1
        return self.entries[self._index]

    def next(self) -> str | None:
        """The entry after the one shown, then the draft; None when not walking."""
        if self._index is None:
            return None
        self._index += 1
        if self._index >= len(self.entries):
            self._index = None
            return self._draft
        return self.entries[self._index]

    def reset(self) -> None:
        self._index = None

    def search(self, query: str) -> list[str]:
        """Entries containing ``query`` (case-insensitive), newest first, without repeats."""
        needle = query.lower()
        seen: set[str] = set()
        found = []
        for entry in reversed(self.entries):
            if needle in entry.lower() and entry not in seen:
                seen.add(entry)
                found.append(entry)
        return found


def _load(path: Path, limit: int) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines[-limit * 2 :]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, str):
            entries.append(value)
    return entries[-limit:]

"""Keys and starts that people bring from Claude Code and Codex.

- Shift+Tab in the prompt cycles the approval mode (ask → auto-edit → read-only; full-auto too
  when the session was started in it, as Claude Code offers bypass only when launched with
  it), through ``SessionAPI.set_approval_mode``, so the watched shell moves into the new
  mode's walls exactly as ``/mode`` does.
- Ctrl+D on an empty prompt quits; with text in it, it deletes as before.
- The theme chosen in the palette is kept for the next start (``ui-state.json`` in the data
  folder); tests keep it in memory.
- ``agent-tui "fix the tests"`` sends that prompt once the session is up; ``agent-tui -r``
  opens the session picker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.ui.host import AppHost

CYCLE = ("ask", "auto-edit", "read-only")
"""Shift+Tab's order; ``full-auto`` joins only a session started in it."""


def next_mode(current: str, started_in: str) -> str:
    """The mode after ``current`` in Shift+Tab's cycle."""
    cycle = [*CYCLE, "full-auto"] if started_in == "full-auto" else list(CYCLE)
    if current not in cycle:
        return cycle[0]
    return cycle[(cycle.index(current) + 1) % len(cycle)]


def cycle_mode(host: AppHost) -> None:
    """Shift+Tab: the next approval mode, said in the chat and the status bar."""
    session = host.session
    started = session.start_mode
    mode = next_mode(session.approval_mode, started)
    session.set_approval_mode(mode)
    host.status.set(mode=session.approval_mode, sandbox=session.sandbox_status)
    cycle = " → ".join([*CYCLE, "full-auto"] if started == "full-auto" else CYCLE)
    host.chat.add_notice(f"approval mode is now {mode} (shift+tab: {cycle})")


class ThemeMemory:
    """The theme the person chose, read at start and written when it changes.

    Args:
        path: The state file (None: nothing is read or written).
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def load(self) -> str | None:
        if self.path is None:
            return None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        theme = data.get("theme") if isinstance(data, dict) else None
        return theme if isinstance(theme, str) and theme else None

    def save(self, theme: str) -> None:
        """Blocking but tiny; the app calls it from a thread."""
        if self.path is None:
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        if data.get("theme") == theme:
            return
        data["theme"] = theme
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(data), encoding="utf-8")
            temporary.replace(self.path)
        except OSError:
            pass  # an unwritable data folder: the theme is simply not kept

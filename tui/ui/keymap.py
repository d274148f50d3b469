"""The app's keys. Several are priority bindings, because the prompt's text area binds the
same key for itself (and would take it first); each such action passes the key on with
``SkipAction`` where it is not meant for the app."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from tui.ui.fleet.control import FOCUS_KEY
from tui.ui.panels import SWITCH_KEY, ZOOM_KEY

APP_BINDINGS: list[BindingType] = [
    Binding("escape", "cancel_turn", "Cancel"),
    # Priority: the prompt's own ctrl+c (copy) would swallow it otherwise; a selection is
    # still copied (see ``action_interrupt``).
    Binding("ctrl+c", "interrupt", "Cancel / quit", show=False, priority=True),
    Binding("ctrl+t", "take_pane", "Take pane"),
    # Priority: the prompt's text area binds f7 (select all) for itself.
    Binding(FOCUS_KEY, "focus_host", "Host / grid", show=False, priority=True),
    Binding("f4", "toggle_mirror", "Mirror"),
    # Priority: the prompt's text area would take f6 (select line) for itself.
    Binding(ZOOM_KEY, "zoom_mirror", "Zoom", priority=True),
    Binding(SWITCH_KEY, "switch_panel", "Switch panel", priority=True),
    Binding("ctrl+o", "toggle_latest", "Expand"),
    Binding("ctrl+l", "latest_output", "Output"),
    Binding("ctrl+g", "grants", "Grants"),
    # Priority: the prompt's text area binds ctrl+y to redo (super+y still redoes there).
    Binding("ctrl+y", "copy_answer", "Copy answer", show=False, priority=True),
    Binding("ctrl+right_square_bracket", "release_pane", "Give the pane back"),
    # Priority, so the prompt's own keys (focus back, delete right) do not take them
    # first; each action passes the key on (SkipAction) where it is not meant.
    Binding("shift+tab", "cycle_mode", "Cycle approval mode", show=False, priority=True),
    Binding("ctrl+d", "quit_when_empty", "Quit (empty prompt)", show=False, priority=True),
    Binding("alt+left", "resize_columns(-4)", "Narrower chat", show=False),
    Binding("alt+right", "resize_columns(4)", "Wider chat", show=False),
]

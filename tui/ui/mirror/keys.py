"""Textual key events to ``tmux send-keys`` arguments.

Printable characters go as literal text (``send-keys -l``), everything else as one tmux key
name (``Enter``, ``C-c``, ``M-f``, ``PPage``). Ctrl+] is never forwarded: it is how the
person gives the keyboard back.
"""

from __future__ import annotations

from textual import events

RELEASE_KEYS = frozenset({"ctrl+right_square_bracket"})

_NAMED = {
    "enter": "Enter",
    "escape": "Escape",
    "backspace": "BSpace",
    "tab": "Tab",
    "shift+tab": "BTab",
    "space": "Space",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "PPage",
    "pagedown": "NPage",
    "insert": "IC",
    "delete": "DC",
}
_NAMED.update({f"f{n}": f"F{n}" for n in range(1, 13)})
_MODIFIERS = {"ctrl": "C-", "alt": "M-", "shift": "S-"}


def tmux_key(event: events.Key) -> tuple[str, bool] | None:
    """``(keys, literal)`` for one key press, or None when it cannot be forwarded."""
    key = event.key
    if key in _NAMED:
        return _NAMED[key], False
    if event.is_printable and event.character and not key.startswith(("ctrl+", "alt+")):
        return event.character, True
    *modifiers, base = key.split("+")
    if not modifiers:
        return (event.character, True) if event.character else None
    prefix = ""
    for modifier in modifiers:
        if modifier not in _MODIFIERS:
            return None
        prefix += _MODIFIERS[modifier]
    if base in _NAMED:
        return prefix + _NAMED[base], False
    if len(base) == 1:
        return prefix + base, False
    symbols = {
        "at": "@",
        "left_square_bracket": "[",
        "backslash": "\\",
        "circumflex_accent": "^",
        "underscore": "_",
    }
    if base in symbols:
        return prefix + symbols[base], False
    return None


def coalesce(keys: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Join runs of literal text, so typing a word is one ``send-keys -l``."""
    merged: list[tuple[str, bool]] = []
    for keys_text, literal in keys:
        if literal and merged and merged[-1][1]:
            merged[-1] = (merged[-1][0] + keys_text, True)
        else:
            merged.append((keys_text, literal))
    return merged

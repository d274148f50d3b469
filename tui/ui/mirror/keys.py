"""The person's keys during a take-over, from Textual events to the pane, in order.

Three kinds of input reach a pane: text (every printable character, ``;``, a leading
``--``, quotes, unicode), which goes as its UTF-8 bytes so tmux's command parser never reads
it; named keys (arrows, F-keys, Ctrl/Alt combinations), which go as tmux key names so tmux
writes the escape sequence the pane's program asked for (cursor-key mode, extended keys);
and pastes, which go through a tmux buffer and ``paste-buffer -p`` (bracketed when the
program asked for it). Ctrl+] is never forwarded: it is how the person gives the keyboard
back. The session sends them (``SessionAPI.send_to_pane``), in order.
"""

from __future__ import annotations

from textual import events

from tui.session_api import Typed

RELEASE_KEYS = frozenset({"ctrl+right_square_bracket"})

_NAMED = {
    "enter": "Enter",
    "escape": "Escape",
    "backspace": "BSpace",
    "tab": "Tab",
    "shift+tab": "BTab",
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
_SYMBOLS = {
    "space": "Space",
    "at": "@",
    "left_square_bracket": "[",
    "backslash": "\\",
    "circumflex_accent": "^",
    "underscore": "_",
}


def typed_for(event: events.Key) -> Typed | None:
    """What one key press sends to the pane, or None for a key with nothing to send.

    Text is whatever character the key produced; modified keys become tmux names
    (``C-Left``, ``M-f``, ``S-Up``); a combination tmux has no name for falls back to the
    character the terminal sent (Alt as a leading Escape), so no key with a character is lost.
    """
    key = event.key
    if key.startswith("<"):
        return None  # a sequence Textual chose to ignore (``<ignore>``), not a key press
    if key in _NAMED:
        return Typed("key", _NAMED[key])
    *modifiers, base = key.split("+")
    if not modifiers or not set(modifiers) & {"ctrl", "alt"}:
        if event.character:
            return Typed("text", event.character)
        if not modifiers:
            return None
    name = _key_name(modifiers, base)
    if name is not None:
        return Typed("key", name)
    if not event.character:
        return None
    if modifiers == ["alt"] or modifiers == ["alt", "shift"]:
        return Typed("text", "\x1b" + event.character)
    return Typed("text", event.character)


def typed_paste(event: events.Paste) -> Typed | None:
    """A paste goes whole, as one bracketed paste if the pane's program asked for that."""
    return Typed("paste", event.text) if event.text else None


def _key_name(modifiers: list[str], base: str) -> str | None:
    if any(modifier not in _MODIFIERS for modifier in modifiers):
        return None
    if len(base) == 1 and base.isalpha() and "shift" in modifiers:
        # Alt+Shift+a is M-A to tmux, as the terminal sends it: ESC A.
        modifiers = [modifier for modifier in modifiers if modifier != "shift"]
        base = base.upper()
    prefix = "".join(_MODIFIERS[modifier] for modifier in modifiers)
    if base in _NAMED:
        return prefix + _NAMED[base]
    if len(base) == 1 and base.isascii() and base.isprintable():
        return prefix + base
    if base in _SYMBOLS:
        return prefix + _SYMBOLS[base]
    return None


__all__ = ["RELEASE_KEYS", "Typed", "typed_for", "typed_paste"]

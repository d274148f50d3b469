"""Key paths: how a setting is named inside the layers, and how a message shows it.

A value's place is a tuple of keys and list indexes (``("hooks", "pre_tool_use", 0,
"timeout")``). Layers, the merge and the error messages all speak of keys this way, and fall
back to the longest known prefix when a deeper key was never written anywhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

KeyPath = tuple[str | int, ...]


def longest_prefix(loc: KeyPath, known: Mapping[KeyPath, Any]) -> KeyPath | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in known:
            return loc[:end]
    return None


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def format_key(loc: tuple[Any, ...]) -> str:
    """``("hooks", "pre_tool_use", 0, "timeout")`` → ``[hooks].pre_tool_use[0].timeout``."""
    if not loc:
        return ""
    text = f"[{loc[0]}]"
    for part in loc[1:]:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if _BARE_KEY.match(str(part)) else f".{json.dumps(str(part))}"
    return text

"""A working directory as the person may safely read it.

A directory name is anyone's text: a cloned repository can hold a folder named with a newline,
an escape sequence or Rich markup. Shown raw it could fake a second line in the approval, or
drive the terminal. Control characters become visible escapes; the caller escapes markup.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(path: str) -> str:
    """``path`` with every control character shown as ``\\xNN`` (a newline as ``\\n``)."""
    return _CONTROL.sub(lambda m: "\\n" if m.group() == "\n" else f"\\x{ord(m.group()):02x}", path)

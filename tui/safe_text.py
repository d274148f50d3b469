"""Text from outside made safe to keep, print and send again.

Why one module: a model (or a proxy in front of it) can send strings no encoder accepts — a
lone UTF-16 surrogate decoded from ``"\\ud800"`` — and numbers no JSON writer accepts (``NaN``,
``1e999``). Python holds them happily, so the failure comes later, in whichever writer meets
them first (the request body, the transcript line, the printed event), and comes back on every
resume. So model output is cleaned once, where it enters the conversation, with these
functions, and every writer downstream can trust what it gets.

Cleaning replaces rather than refuses: a lone surrogate becomes U+FFFD, in decoded strings and
in the ``\\uXXXX`` escapes of raw JSON text alike, so what is shown, approved, run and stored is
the same text.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any

REPLACEMENT = "\ufffd"

_JSON_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a valid pair: kept
    r"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"  # a lone surrogate escape: replaced
    r"|\\.",  # any other escape (``\\\\`` included): kept, and never half-read
    re.DOTALL,
)

MAX_INT_DIGITS = 40
"""Integers longer than this are refused in arguments: no tool takes one, and Python's own
limit (4,300 digits) would raise deep inside a parser instead of saying so."""


class UnsafeJson(ValueError):
    """JSON that is valid to Python's parser but not to strict JSON or to any tool."""


def clean(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (pairs held as two code points
    are joined into the character they encode)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clean_json_text(raw: str) -> str:
    """Raw JSON text (a tool call's arguments) with lone surrogates replaced, both as
    characters and as ``\\uXXXX`` escapes; everything else stays byte for byte."""
    text = clean(raw)
    if "\\u" not in text:
        return text
    return _JSON_ESCAPE.sub(lambda match: "\\ufffd" if match.group(1) else match.group(0), text)


def clean_value(value: Any) -> Any:
    """A decoded JSON value with every string (keys included) cleaned; iterative, so depth
    cannot overflow the stack."""
    if isinstance(value, str):
        return clean(value)
    if not isinstance(value, dict | list):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        source, parent, slot = stack.pop()
        if isinstance(source, dict):
            copy: Any = {}
            for key, item in source.items():
                name = clean(key) if isinstance(key, str) else key
                copy[name] = None
                stack.append((item, copy, name))
        elif isinstance(source, list):
            copy = [None] * len(source)
            stack.extend((item, copy, index) for index, item in enumerate(source))
        else:
            copy = clean(source) if isinstance(source, str) else source
        parent[slot] = copy
    return root[0]


def _no_constant(name: str) -> Any:
    raise UnsafeJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise UnsafeJson(f"the number {excerpt(text, 40)} is out of range")
    return number


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise UnsafeJson(f"an integer of {digits} digits is out of range")
    return int(text)


def loads_strict(text: str) -> Any:
    """Parse JSON as the standard defines it: no ``NaN``/``Infinity``, no number that
    overflows, with lone surrogates in strings replaced.

    Raises:
        ValueError: not JSON, or a number out of range (``UnsafeJson``); ``RecursionError``
            is turned into ``UnsafeJson`` too, so callers catch one type.
    """
    try:
        value = json.loads(
            text,
            parse_constant=_no_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except RecursionError:
        raise UnsafeJson("the JSON is nested too deeply") from None
    return clean_value(value)


def excerpt(text: str, limit: int = 120) -> str:
    """At most ``limit`` characters of ``text`` (cleaned), saying how much was left out, for
    error messages that quote what the model sent."""
    head = clean(text[:limit])
    if len(text) <= limit:
        return head
    return f"{head}… ({len(text) - limit} more characters)"


# -- text a person reads: controls spelled out ---------------------------------------------


def _spelled(char: str) -> str:
    code = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\t":
        return "\\t"
    if char == "\r":
        return "\\r"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _hidden(char: str) -> bool:
    """A character that moves, hides or reorders what a terminal shows: C0 and C1 controls,
    DEL, and the format characters (bidi overrides, zero-width joiners) of category Cf."""
    return not char.isprintable() or unicodedata.category(char) == "Cf"


def spell_controls(text: str, keep: str = "") -> str:
    """``text`` with every control and format character written out as an escape
    (``\\x1b``, ``\\n``, ``\\u202e``), except those in ``keep`` (say ``"\\n"`` for a command
    whose lines are its lines)."""
    if text.isprintable() and text.isascii():
        return text
    return "".join(_spelled(char) if char not in keep and _hidden(char) else char for char in text)


def one_line(text: str, limit: int | None = None) -> str:
    """A field written by someone else (the model's ``why``, a tool's name) as exactly one
    line a person can trust: every control spelled out — a newline too, so it cannot fake a
    line of its own — and at most ``limit`` characters, saying how many more there were."""
    head = text if limit is None else text[:limit]
    shown = spell_controls(head)
    if limit is not None and len(text) > limit:
        shown += f"… ({len(text) - limit:,} more characters)"
    return shown


_TERMINAL_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` as it may be written to a terminal outside the app: C0 and C1 controls
    (escape sequences, OSC 52 clipboard writes, title changes, carriage returns) spelled out,
    newline and tab kept. A ``\\r\\n`` line end stays a line end."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _TERMINAL_CONTROLS.sub(lambda match: _spelled(match.group()), text)


# -- values nested past what a reader survives -----------------------------------------------

TOO_DEEP = "(nested too deeply to show)"


def loads_or(text: str, default: Any = None) -> Any:
    """``json.loads(text)``, or ``default`` when it is not JSON — nested too deeply included
    (Python's parser raises ``RecursionError`` there, which ``except ValueError`` misses)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return default


def dumps_or(value: Any, fallback: str = TOO_DEEP, **options: Any) -> str:
    """``json.dumps(value, **options)``, or ``fallback`` when it cannot be written (nested
    too deeply, a value JSON has no form for)."""
    try:
        return json.dumps(value, **options)
    except (ValueError, TypeError, RecursionError):
        return fallback

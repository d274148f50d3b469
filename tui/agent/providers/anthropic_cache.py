"""Where Anthropic prompt-cache breakpoints go, so a long session pays for its prefix once.

A ``cache_control`` marker makes the API cache everything up to and including its block;
a later request that starts with the same blocks reads them back at a tenth of the input
price. The API allows four markers: one on the last tool definition, one on the system
prompt, and two in the conversation (see ``cache_conversation``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CACHE_CONTROL", "MAX_BREAKPOINTS", "cache_conversation", "mark"]

CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
"""The API refuses a request with more ``cache_control`` blocks than this."""


def mark(block: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``block`` with a breakpoint."""
    return {**block, "cache_control": dict(CACHE_CONTROL)}


def cache_conversation(wire: list[dict[str, Any]], breakpoints: int) -> list[dict[str, Any]]:
    """Breakpoints on the last ``breakpoints`` user turns (user text or tool results).

    The last one writes this request's prefix to the cache; the one before it sits where the
    previous request put its last breakpoint, so the next request reads everything up to it
    even when a turn added more blocks than the API looks back over. User text is always sent
    as blocks here, so a turn reads the same whether or not it carries a breakpoint. Marked
    messages are copied: the conversation itself never changes.
    """
    out = [
        {**message, "content": [{"type": "text", "text": message["content"]}]}
        if message.get("role") == "user" and isinstance(message["content"], str)
        else message
        for message in wire
    ]
    marked = 0
    for position in range(len(out) - 1, -1, -1):
        if marked >= breakpoints:
            break
        message = out[position]
        if message.get("role") != "user":
            continue
        content = message["content"]
        last = content[-1]
        if last.get("type") == "text" and not last.get("text"):
            continue  # the API refuses cache_control on an empty text block
        out[position] = {**message, "content": [*content[:-1], mark(last)]}
        marked += 1
    return out

"""Reading one JSON object off the wire, and telling a cut from garbage; writing arguments back.

The same broken text means two different things. A body or stream event that stops in the
middle (the connection closed mid-line, a server with no length marker closing early) is a
cut: nothing is wrong with the request, and sending it again works. A complete line that is not
JSON is a server's mistake, which may pass too (a proxy's hiccup). Neither ran anything, so
both are retried; only the message differs, so a person reads what happened, not "not JSON"
for a dropped connection.
"""

from __future__ import annotations

import json
from typing import Any

from tui.agent.providers.base import ProviderError, StreamInterrupted


def load_object(raw: bytes | str, what: str, api: str, *, retryable: bool) -> dict[str, Any]:
    """``raw`` as a JSON object.

    Raises:
        StreamInterrupted: the text stops mid-value (cut off); always retryable.
        ProviderError: it is not JSON, or not an object (``retryable`` as given).
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        if text.strip() and error.pos >= len(text.rstrip()):
            raise StreamInterrupted(
                f"the {api} answer was cut off mid-{what.split()[-1]}", retryable=True
            ) from None
        raise ProviderError(
            f"{api} sent {what} that is not JSON: {text[:200]!r}", retryable=retryable
        ) from None
    except (ValueError, RecursionError):
        raise ProviderError(
            f"{api} sent {what} that is not JSON: {text[:200]!r}", retryable=retryable
        ) from None
    if not isinstance(data, dict):
        raise ProviderError(f"{api} sent {what} that is not a JSON object", retryable=retryable)
    return data


def dump_arguments(value: Any) -> str:
    """Decoded tool-call arguments back to text; a value that cannot be written becomes
    ``{}`` (the registry then says the required arguments are missing)."""
    try:
        return json.dumps(value)
    except (ValueError, TypeError, RecursionError):
        return "{}"


__all__ = ["dump_arguments", "load_object"]

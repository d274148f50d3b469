"""The diff shown with a file tool's approval: read when asking, never trusted to exist.

The preview reads the file through the same backend and path checks as the call itself
(a secret place is refused, so its content never reaches the prompt or the transcript). It
is best effort: a file that cannot be read, an edit that would not match, or a slow remote
host leaves the prompt without a diff, and the call reports the real problem when it runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from tui.diffs import bounded_diff
from tui.safe_text import clean

PREVIEW_TIMEOUT = 10.0
"""Seconds a preview may take (a read over SSH) before the prompt opens without it."""


class HasPreview(Protocol):
    preview: Callable[[], Awaitable[str | None]] | None


async def call_preview(call: HasPreview, timeout: float = PREVIEW_TIMEOUT) -> str | None:
    """The call's diff, clean and bounded, or None."""
    if call.preview is None:
        return None
    try:
        diff = await asyncio.wait_for(call.preview(), timeout)
    except asyncio.CancelledError:
        raise
    except Exception:  # a refused path, an edit that does not match, a timeout
        return None
    return bounded_diff(clean(diff)) if diff else None

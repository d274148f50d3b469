"""The cyclic garbage collector held back while ``agent-tui`` starts.

Start-up imports some hundreds of modules and builds thousands of classes, functions and
pydantic models: a great many container objects, and none of them garbage. The collector, run
every 700 new objects by default, scans them again and again on the way: about a tenth of the
time to the first request. So the command raises that threshold as it starts (``hold``), and
once the first session is built (``release``) moves everything start-up made into the permanent
generation, which later collections do not scan, and sets the threshold back. Held, the
collector still runs, only less often: a start that never reaches ``release`` stays bounded.
"""

from __future__ import annotations

import gc

HELD_THRESHOLD = 100_000
"""New objects between two young collections while held (700 by default)."""

_held: tuple[int, int, int] | None = None
"""The thresholds to set back, while held."""


def hold() -> None:
    """Collect rarely from now until ``release``."""
    global _held
    if _held is None:
        _held = gc.get_threshold()
        gc.set_threshold(HELD_THRESHOLD, _held[1], _held[2])


def release() -> None:
    """Start-up is over: what it made is frozen out of later scans, the thresholds set back.
    Nothing happens unless held (a session built by a test or the second one of a run)."""
    global _held
    if _held is not None:
        gc.freeze()
        gc.set_threshold(*_held)
        _held = None

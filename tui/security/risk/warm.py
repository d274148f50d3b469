"""Loading the command rater ahead of the first command it judges.

The rater (its rules, tables and the tree-sitter grammar) takes ~55 ms to load, so it is not
loaded at start-up, where the first frame and the first request wait; but the first tool call
should not wait for it either. The loop calls ``warm`` in a thread once its first answer starts
to arrive (not before: the request itself would wait for the interpreter lock), and the rest of
the answer takes longer to stream than the rater takes to load.
"""

from __future__ import annotations

_warm = False


def warm() -> None:
    """Import the rater and build its parser (blocking: call it in a thread). Parsing itself
    is left to the callers: one parser is not to be used from two threads at once."""
    global _warm
    if _warm:
        return
    from tui.security.risk import assess  # noqa: F401 - the import is the work
    from tui.security.risk.source import parser

    parser()
    _warm = True


def is_warm() -> bool:
    return _warm


__all__ = ["is_warm", "warm"]

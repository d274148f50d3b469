"""The ``agent-tui`` command's first lines.

A ``-p`` run is handed to a warm process if one is ready for it (``tui.warm``): then this
process only relays signals and the exit status. Otherwise a run remembered from before sends
its first request here (``tui.agent.providers.ahead``), before the rest of agent-tui is
imported, and the command proper (``tui.cli``) starts as always. A warm process's runs start
from ``ordinary`` too, so a handed-over run is the same code path as any other.
"""

from __future__ import annotations

import sys

SKIPPED = ("tui.ui", "tui.warm", "tui.launch", "tui.__main__")
"""Not loaded by a warm process: the full-screen app (never handed over) and the starters."""


def console() -> None:
    from tui.warm.flags import headless

    if headless(sys.argv[1:]):  # the app itself is never handed over: no need to load more
        from tui.warm.client import hand_over

        hand_over(sys.argv)
    ordinary()


def ordinary() -> None:
    from tui.agent.providers.ahead import send_ahead

    send_ahead(sys.argv[1:])
    from tui.cli import console as command

    command()


def serve_warm() -> None:
    """A warm process (``python -P -c ... KEY``): load, then serve runs; each run's process
    comes back here from ``serve`` and starts."""
    from tui.warm.server import serve

    serve(sys.argv[1], preload)
    ordinary()


def preload() -> None:
    """Import every module a ``-p`` run may use, and what they load on first use."""
    import importlib
    import pkgutil

    import tui

    packages = [(list(tui.__path__), "tui.")]
    while packages:
        path, prefix = packages.pop()
        for info in pkgutil.iter_modules(path, prefix):
            if info.name.startswith(SKIPPED):
                continue
            try:
                module = importlib.import_module(info.name)
            except Exception:  # an optional part this install lacks: a run would fail alike
                continue
            if info.ispkg:
                packages.append((list(module.__path__), info.name + "."))
    from tui.agent.pricing import warm_now
    from tui.security.risk.warm import warm

    importlib.import_module("anyio._backends._asyncio")  # httpx's first request loads it
    warm_now()
    warm()

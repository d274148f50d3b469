"""libtmux, imported safely from inside the running app.

libtmux reads ``sys.stdout.encoding`` once, when it is first imported. Inside a running Textual
app ``sys.stdout`` is Textual's print capture, which has no ``encoding``, so a plain import
there raises. The import is lazy on purpose (it costs ~45 ms, and the first frame must not pay
for it), so it happens after the app has started: give libtmux the real stdout for that moment.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

_LOCK = threading.Lock()


def load_libtmux() -> ModuleType:
    """The ``libtmux`` module, imported once whatever ``sys.stdout`` is at the time."""
    loaded = sys.modules.get("libtmux")
    if loaded is not None:
        return loaded
    with _LOCK:
        stdout = sys.stdout
        if getattr(stdout, "encoding", None) is not None:
            return importlib.import_module("libtmux")
        sys.stdout = sys.__stdout__
        try:
            return importlib.import_module("libtmux")
        finally:
            sys.stdout = stdout

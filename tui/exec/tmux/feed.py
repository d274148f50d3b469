"""Where pane output and pane use go: the managed pane, and whoever listens (the mirror).

Every ``%output`` a control client hears is routed here: to the ``ManagedPane`` it belongs to
(its prompt watch and running job), then to the raw-output listeners of that pane. The mirror
also follows the pane the agent last acted on, so every act on a pane is reported to the use
listeners when the pane changes. A failing listener is logged and skipped, never allowed to
stop the control client's reader.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tui.exec.tmux.panes import PaneRegistry

log = logging.getLogger(__name__)


class PaneFeed:
    """Routes pane output to managed panes and listeners; tracks the pane last used."""

    def __init__(self, panes: PaneRegistry) -> None:
        self.panes = panes
        self.last_pane: str | None = None
        """The pane the agent acted on last (what the mirror shows)."""
        self._output_listeners: dict[str, list[Callable[[bytes], None]]] = {}
        self._use_listeners: list[Callable[[str], None]] = []

    def on_output(self, session: str, pane_id: str, data: bytes) -> None:
        """A ``%output`` heard by the client of ``session``."""
        pane = self.panes.get(pane_id)
        if pane is not None and pane.session != session:
            return  # a window linked into two sessions: take it from its own session only
        if pane is not None:
            pane.feed(data)
        for listener in list(self._output_listeners.get(pane_id, ())):
            try:
                listener(data)
            except Exception:
                log.exception("pane output listener failed")

    def add_output_listener(
        self, pane_id: str, listener: Callable[[bytes], None]
    ) -> Callable[[], None]:
        """Call ``listener`` with every raw output chunk of ``pane_id``; returns the remover."""
        self._output_listeners.setdefault(pane_id, []).append(listener)

        def remove() -> None:
            listeners = self._output_listeners.get(pane_id, [])
            if listener in listeners:
                listeners.remove(listener)

        return remove

    def add_use_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(pane_id)`` whenever the agent acts on a pane."""
        self._use_listeners.append(listener)

        def remove() -> None:
            if listener in self._use_listeners:
                self._use_listeners.remove(listener)

        return remove

    def mark_used(self, pane_id: str) -> None:
        """The agent acted on ``pane_id``: tell the use listeners if that is a change."""
        changed = pane_id != self.last_pane
        self.last_pane = pane_id
        if changed:
            for listener in list(self._use_listeners):
                try:
                    listener(pane_id)
                except Exception:
                    log.exception("pane-use listener failed")

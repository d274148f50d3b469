"""The bar of keys at the bottom of every screen: Textual's ``Footer``, each key styled once.

The bar is rebuilt whenever the keys on offer change, which is at every focus change. Textual's
``FooterKey`` starts out compact and only then takes its bar's (not compact) look from a binding,
so each key of each rebuild had its styles worked out three times (mounted, made compact, made
not compact): about 2 ms a key on this machine, tens of milliseconds a focus change for a bar of
a dozen keys. Keys made here start out with their bar's look, so that is once.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["KeyBar"]


class KeyBar(Footer):
    """A ``Footer`` whose keys are made with the look they would end with.

    That is the bar's for a key bound to it; a key that is not (the command palette's) keeps
    its own, set as before: the bar looks exactly as Textual's does."""

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            # ``textual`` is pinned: ``_reactive_connect`` holds what ``data_bind`` bound.
            if isinstance(widget, FooterKey) and "compact" in (widget._reactive_connect or {}):
                # Set before the key is mounted: its watcher never runs for the first value.
                widget.set_reactive(FooterKey.compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
            yield widget

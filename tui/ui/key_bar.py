"""The bar of keys at the bottom of every screen: Textual's ``Footer``, each key styled once.

The bar is rebuilt whenever the keys on offer change, which is at every focus change. Textual's
``FooterKey`` starts out compact and only then takes its bar's (not compact) look from a binding,
so each key of each rebuild had its styles worked out three times (mounted, made compact, made
not compact): about 2 ms a key on this machine, tens of milliseconds a focus change for a bar of
a dozen keys. Keys made here start out with their bar's look, so that is once.

Most focus changes (between the prompt, the chat and the tool blocks) leave the keys on offer as
they were: the bar is then not rebuilt at all. What it would show is compared, key by key, with
what it shows.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["KeyBar"]


class KeyBar(Footer):
    """A ``Footer`` whose keys are made with the look they would end with.

    That is the bar's for a key bound to it; a key that is not (the command palette's) keeps
    its own, set as before: the bar looks exactly as Textual's does."""

    _shown: tuple[object, ...] | None = None
    """What the bar shows (``_on_offer`` when it was last built)."""

    def _on_offer(self) -> tuple[object, ...]:
        """Everything ``Footer.compose`` draws the keys from, in its order."""
        keys = tuple(
            (
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                enabled,
                tooltip,
                binding.tooltip,
                (binding.group.description, binding.group.compact) if binding.group else None,
            )
            for _node, binding, enabled, tooltip in self.screen.active_bindings.values()
            if binding.show or binding.action == "command_palette"
        )
        return keys, self.compact, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        if self.is_attached and self._on_offer() != self._shown:
            await self.recompose()

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._shown = self._on_offer()
        for widget in super().compose():
            # ``textual`` is pinned: ``_reactive_connect`` holds what ``data_bind`` bound.
            if isinstance(widget, FooterKey) and "compact" in (widget._reactive_connect or {}):
                # Set before the key is mounted: its watcher never runs for the first value.
                widget.set_reactive(FooterKey.compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
            yield widget

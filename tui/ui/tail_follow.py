"""Follow the tail of a scrolling panel, but only while the person is at the bottom.

Textual's ``anchor()`` does the hard part (released by scrolling up, restored by scrolling
back to the end), but an anchored container shorter than its viewport is drawn bottom-aligned.
Panels here start top-aligned and anchor the first time their content overflows.
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.geometry import Size


class TailFollowing(VerticalScroll):
    """A ``VerticalScroll`` that anchors itself once its content is taller than the view."""

    def content_changed(self) -> None:
        """Call after adding content (cheap: one check after the next refresh)."""
        if not self.is_anchored:
            self.call_after_refresh(self._maybe_anchor)

    def _maybe_anchor(self) -> None:
        if (
            not self.is_anchored
            and self.virtual_size.height > self.scrollable_content_region.height
        ):
            self.anchor()

    def reset_follow(self) -> None:
        """After clearing: top-aligned again until the content overflows."""
        self.anchor(False)
        self.scroll_home(animate=False, immediate=True)

    def on_resize(self) -> None:
        self.content_changed()

    def _scroll_update(self, virtual_size: Size) -> None:
        # Children grew (a block got output, an answer streamed): check once laid out.
        super()._scroll_update(virtual_size)
        if not self.is_anchored:
            self.call_later(self._maybe_anchor)
        self.content_resized()

    def content_resized(self) -> None:
        """Called whenever the content's height changed (after layout)."""

"""Where the panels go at each terminal size: side by side, stacked with tabs, or zoomed.

Wide terminals show the chat on the left and the tool stream over the pane mirror on the
right. Below ``NARROW_BELOW`` columns two columns of 40 no longer fit, so the right column
moves under the chat and shows one of its two panels at a time, with a one-line tab bar
saying which and the key that switches (the chat and the prompt always stay on screen).
The zoom shows the mirror alone, the whole terminal for a full-screen program.

Everything here is CSS classes on the containers (``styles/app.tcss``), so a hidden panel
keeps its state and its scroll position.
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

NARROW_BELOW = 100
"""Below this many columns the tool stream and the mirror stack under the chat, as tabs."""
SWITCH_KEY = "f6"
ZOOM_KEY = "f5"

Tab = Literal["tools", "mirror"]


class PanelTabs(Static):
    """The tab bar of the stacked layout: which panel is shown, and how to switch."""

    def show_tab(self, tab: Tab) -> None:
        text = Text()
        for name, label in (("tools", "tool calls"), ("mirror", "pane mirror")):
            style = "bold reverse" if name == tab else "dim"
            text.append(f" {label} ", style)
            text.append(" ")
        text.append(f" {SWITCH_KEY} switch · {ZOOM_KEY} zoom", "dim")
        self.update(text)


class PanelLayout:
    """Applies the layout for a width, and the person's choices (tab, mirror shown, zoom).

    Args:
        main: The container of both columns (``#main``).
        right: The right column (``#right``): the tool stream over the mirror.
        tabs: The tab bar shown in the stacked layout.
        mirror: The mirror panel (what the zoom maximizes).
    """

    def __init__(self, main: Widget, right: Widget, tabs: PanelTabs, mirror: Widget) -> None:
        self.main = main
        self.right = right
        self.tabs = tabs
        self.mirror = mirror
        self.narrow = False
        self.tab: Tab = "tools"
        self.mirror_hidden = False

    def fit(self, width: int) -> None:
        """The layout for a terminal ``width`` columns wide."""
        self.narrow = width < NARROW_BELOW
        self.main.set_class(self.narrow, "-narrow")
        if self.narrow:
            # A column width the person set with alt+←/→ means nothing when stacked.
            self.main.query_one("#left").styles.width = None
        self._sync()

    def switch(self) -> Tab:
        """The other tab of the stacked layout (the mirror shows even if f4 hid it)."""
        self.tab = "mirror" if self.tab == "tools" else "tools"
        self._sync()
        return self.tab

    def toggle_mirror(self) -> None:
        """f4: the mirror on or off beside the tools; stacked, it switches to/from its tab."""
        if self.narrow:
            self.switch()
            return
        self.mirror_hidden = not self.mirror_hidden
        self._sync()

    def show_mirror(self) -> None:
        """Make sure the mirror is on screen (``/pane``, taking the pane's keyboard)."""
        self.mirror_hidden = False
        self.tab = "mirror"
        self._sync()

    @property
    def zoomed(self) -> bool:
        return self.mirror.screen.maximized is self.mirror

    def toggle_zoom(self) -> bool:
        """The mirror alone on the whole terminal, or back; returns whether it is zoomed."""
        screen = self.mirror.screen
        if self.zoomed:
            screen.minimize()
            return False
        self.show_mirror()
        return screen.maximize(self.mirror, container=False)

    def _sync(self) -> None:
        self.right.set_class(self.tab == "tools", "-tab-tools")
        self.right.set_class(self.tab == "mirror", "-tab-mirror")
        self.right.set_class(self.mirror_hidden, "-mirror-off")
        self.tabs.show_tab(self.tab)

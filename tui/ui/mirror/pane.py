"""The mirrored tmux pane: the agent's real shell, in colour, and the person's way into it.

It is a line-API ``ScrollView``: each snapshot is compared line by line with the previous one
and only the lines that changed are re-rendered (through a strip cache) and repainted, so a
full-screen program redrawing one line costs one line. ``ctrl+t`` (in the app) gives the
person the pane's keyboard: keys are then forwarded to tmux and the panel says so in bold;
``ctrl+]`` gives it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.cache import LRUCache
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from tui.ui.mirror.keys import RELEASE_KEYS, typed_for, typed_paste
from tui.ui.mirror.messages import PaneKeys, PaneRelease

if TYPE_CHECKING:
    from tui.events import PaneSnapshot


@dataclass
class PaneFrame:
    """One ``PaneSnapshot`` event's content, as the mirror draws it.

    A frame of size 0 (the pane's size not known yet) takes the width of its widest line and
    the height of its lines."""

    pane_id: str
    actor: str
    lines: list[str] = field(default_factory=list)
    cursor_x: int = 0
    cursor_y: int = 0
    width: int = 80
    height: int = 24
    sandbox: str | None = None

    @classmethod
    def from_event(cls, event: PaneSnapshot) -> PaneFrame:
        return cls(
            pane_id=event.pane_id,
            actor=event.actor,
            lines=list(event.lines),
            cursor_x=event.cursor_x,
            cursor_y=event.cursor_y,
            width=event.width,
            height=event.height or len(event.lines),
            sandbox=event.sandbox,
        )


class PaneMirror(ScrollView, can_focus=True):
    """Renders ``PaneFrame``s; forwards keys while ``holding``."""

    COMPONENT_CLASSES = {"pane-mirror--cursor"}

    holding: var[bool] = var(False, toggle_class="-holding")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.frame: PaneFrame | None = None
        self._strips: LRUCache[tuple[str, int, bool], Strip] = LRUCache(1024)
        self.rendered_lines = 0
        """How many lines were (re)rendered so far: a test hook for 'only changed lines'."""
        self.last_changed: list[int] = []

    def show(self, frame: PaneFrame) -> list[int]:
        """Display ``frame``; returns the line numbers that changed."""
        previous = self.frame
        self.frame = frame
        width = frame.width or max(
            (Text.from_ansi(line).cell_len for line in frame.lines), default=1
        )
        size = Size(max(width, 1), max(frame.height, len(frame.lines)))
        # Follow the cursor (a terminal's bottom) unless the person scrolled away from it.
        height = max(1, self.scrollable_content_region.height)
        top = int(self.scroll_y)
        follow = previous is None or top <= previous.cursor_y < top + height
        if follow or self.holding:
            self.call_after_refresh(self._show_cursor, frame.cursor_y)
        if previous is None or previous.pane_id != frame.pane_id or self.virtual_size != size:
            self.virtual_size = size
            changed = list(range(len(frame.lines)))
            self.last_changed = changed
            self.refresh()
            return changed
        changed = []
        count = max(len(previous.lines), len(frame.lines))
        old_cursor = (previous.cursor_x, previous.cursor_y)
        new_cursor = (frame.cursor_x, frame.cursor_y)
        for y in range(count):
            before = previous.lines[y] if y < len(previous.lines) else None
            after = frame.lines[y] if y < len(frame.lines) else None
            if before != after:
                changed.append(y)
        if old_cursor != new_cursor:
            for y in {previous.cursor_y, frame.cursor_y}:
                if y not in changed:
                    changed.append(y)
        for y in changed:
            self.refresh_lines(y, 1)
        self.last_changed = changed
        return changed

    def on_resize(self) -> None:
        # Shown for the first time, or resized: bring the cursor (the shell's prompt) into view.
        if self.frame is not None:
            self._show_cursor(self.frame.cursor_y, 0)

    def _show_cursor(self, cursor_y: int, tries: int = 5) -> None:
        height = self.scrollable_content_region.height
        if height <= 0 or (self.max_scroll_y <= 0 and self.virtual_size.height > height):
            if tries:  # not laid out yet: try again after the next refresh
                self.call_after_refresh(self._show_cursor, cursor_y, tries - 1)
            return
        top = int(self.scroll_y)
        if cursor_y < top or cursor_y >= top + height:
            self.scroll_to(y=max(0, cursor_y - height + 1), animate=False, immediate=True)

    def _line_strip(self, y: int) -> Strip:
        frame = self.frame
        assert frame is not None
        source = frame.lines[y] if y < len(frame.lines) else ""
        cursor = frame.cursor_x if y == frame.cursor_y else -1
        key = (source, cursor, self.holding)
        cached = self._strips.get(key)
        if cached is not None:
            return cached
        self.rendered_lines += 1
        text = Text.from_ansi(source, no_wrap=True, end="")
        width = self.virtual_size.width
        if text.cell_len < width:
            text.append(" " * (width - text.cell_len))
        if cursor >= 0:
            if cursor >= len(text.plain):
                text.append(" ")
            style = self.get_component_rich_style("pane-mirror--cursor")
            if not self.holding:
                style += Style(dim=True)
            text.stylize(style, cursor, cursor + 1)
        strip = Strip(list(text.render(self.app.console)), text.cell_len)
        self._strips[key] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        line = scroll_y + y
        if self.frame is None or line >= self.virtual_size.height:
            return Strip.blank(width, base)
        strip = self._line_strip(line)
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_style(base)

    def watch_holding(self, holding: bool) -> None:
        self._strips.clear()
        self.refresh()

    async def _on_key(self, event: events.Key) -> None:
        if not self.holding:
            return
        event.stop()
        event.prevent_default()
        if event.key in RELEASE_KEYS:
            self.post_message(PaneRelease())
            return
        typed = typed_for(event)
        if typed is not None:
            self.post_message(PaneKeys([typed]))

    def on_paste(self, event: events.Paste) -> None:
        typed = typed_paste(event)
        if self.holding and typed is not None:
            event.stop()
            self.post_message(PaneKeys([typed]))


class MirrorPanel(Vertical):
    """The mirror with its frame: which pane, where, who holds the keyboard."""

    ALLOW_MAXIMIZE = True

    @dataclass
    class Resized(Message):
        """The box's inner size changed: the pane should take it."""

        columns: int
        rows: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mirror = PaneMirror(id="pane-mirror")
        self.placeholder = Static("", id="mirror-placeholder")
        self.unavailable: str | None = None
        self.note: str | None = None
        """Said after the title (a fleet's focused host)."""
        self.gone: str | None = None
        """Why the pane shown is no more (its last frame stays until the next one's)."""

    def compose(self) -> ComposeResult:
        yield self.placeholder
        yield self.mirror

    def on_mount(self) -> None:
        self.border_title = "pane mirror"
        self._refresh_frame_titles()

    def on_resize(self) -> None:
        self.post_message(self.Resized(*self.inner_size()))

    def inner_size(self) -> tuple[int, int]:
        """Columns and rows inside the border: the size the mirrored pane should have."""
        if not self.display or self.unavailable is not None:
            return 0, 0
        return self.content_size.width, self.content_size.height

    def set_unavailable(self, reason: str | None) -> None:
        """``no tmux pane: the backend is local`` — or None when a tmux backend is there."""
        self.unavailable = reason
        self.set_class(reason is not None, "-unavailable")
        self._refresh_frame_titles()

    def show(self, frame: PaneFrame) -> list[int]:
        changed = self.mirror.show(frame)
        self.gone = None
        self.set_class(False, "-gone")
        self._refresh_frame_titles()
        return changed

    def set_gone(self, why: str) -> None:
        """The pane shown went with its session or server: say so under its last frame."""
        self.gone = why
        self.set_class(True, "-gone")
        self._refresh_frame_titles()

    def set_holding(self, holding: bool) -> None:
        self.mirror.holding = holding
        self.set_class(holding, "-holding")
        self._refresh_frame_titles()
        if holding:
            self.mirror.focus()

    def refresh_titles(self, note: str | None) -> None:
        """Redraw the frame's titles; ``note`` (a fleet's focused host) is added to them."""
        self.note = note
        self._refresh_frame_titles()

    def _refresh_frame_titles(self) -> None:
        if self.has_class("-grid"):  # a fleet's grid of hosts' panes fills the box
            self.mirror.display = self.placeholder.display = False
            self.border_title = "fleet · every host's pane"
            self.border_subtitle = "enter or click: a host full-size · f7 back and forth"
            return
        frame = self.mirror.frame
        has_frame = frame is not None
        self.mirror.display = has_frame
        self.placeholder.display = not has_frame
        if not has_frame:
            self.placeholder.update(
                self.unavailable
                or "No pane yet: the agent's tmux pane appears here when it runs a command in one."
            )
            self.border_title = "pane mirror"
            self.border_subtitle = None
            return
        assert frame is not None
        walls = ""
        if frame.sandbox:
            label = escape(frame.sandbox)
            if frame.sandbox.startswith("OUTSIDE"):
                walls = f"[b reverse $error] {label} [/] · "
            elif frame.sandbox.startswith("no sandbox"):
                walls = "[b $warning]no sandbox[/] · "
            else:
                walls = f"{label} · "
        self.border_title = (
            f"tmux {escape(frame.pane_id)} · {walls}{escape(frame.actor)} · "
            f"{frame.width}\u00d7{frame.height}"
        ) + (f" · {escape(self.note)}" if self.note else "")
        if self.gone is not None:
            self.border_subtitle = (
                f"[b $warning]pane gone[/] · the next command starts a fresh one · "
                f"{escape(self.gone)}"
            )
        elif self.mirror.holding:
            self.border_subtitle = "[b]YOU have the keyboard[/b] · ctrl+] gives it back"
        else:
            self.border_subtitle = "agent has the keyboard · ctrl+t takes it"


if __name__ == "__main__":
    from textual.app import App

    from tui.locations import styles_dir

    demo = PaneFrame(
        pane_id="%3",
        actor="local",
        lines=[
            "\x1b[1;32mroot@box\x1b[0m:\x1b[1;34m/srv/app\x1b[0m$ ls --color",
            "\x1b[1;34msrc\x1b[0m  \x1b[1;34mtests\x1b[0m  README.md  \x1b[1;32mrun.sh\x1b[0m",
            "\x1b[1;32mroot@box\x1b[0m:\x1b[1;34m/srv/app\x1b[0m$ ",
        ],
        cursor_x=19,
        cursor_y=2,
        width=80,
        height=6,
    )

    class _Demo(App[None]):
        CSS_PATH = [str(styles_dir() / "app.tcss"), str(styles_dir() / "mirror.tcss")]

        def compose(self) -> ComposeResult:
            yield MirrorPanel()

        def on_mount(self) -> None:
            self.query_one(MirrorPanel).show(demo)

    _Demo().run()

"""``/sessions``: the saved sessions of this workspace, newest first; Enter resumes one."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tui.locations import styles_dir
from tui.ui.key_bar import KeyBar
from tui.views import SessionInfo


class SessionsScreen(ModalScreen[str | None]):
    """Returns the id of the session to resume, or None."""

    CSS_PATH = str(styles_dir() / "sessions.tcss")
    BINDINGS = [Binding("escape,q", "dismiss(None)", "Close")]

    def __init__(self, sessions: list[SessionInfo], current: str | None = None) -> None:
        super().__init__()
        self.sessions = sessions
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-box") as box:
            box.border_title = "Sessions of this workspace — enter resumes"
            if not self.sessions:
                yield Static("No saved sessions yet.", id="sessions-empty")
            yield DataTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "updated", "msgs", "first message")
        for info in self.sessions:
            updated = info.updated.astimezone().strftime("%Y-%m-%d %H:%M")
            marker = " (this one)" if info.id == self.current else ""
            table.add_row(info.id + marker, updated, str(info.message_count), info.preview or "-")
        table.focus()

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        self.dismiss(self.sessions[event.cursor_row].id)

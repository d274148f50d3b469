"""What is allowed always, and the key to take it back.

"Don't ask again" is only safe when a person can see every standing grant and revoke any of
them: this screen lists the session's grants (session grants first, then saved ones with the
workspace they apply to) and revokes the highlighted one with ``d``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tui.locations import styles_dir
from tui.ui.key_bar import KeyBar
from tui.views import GrantList, GrantView

Formatter = Callable[[float], str]


def format_created(created: float) -> str:
    if created <= 0:
        return "-"
    return dt.datetime.fromtimestamp(created).strftime("%Y-%m-%d %H:%M")


class GrantsScreen(ModalScreen[int]):
    """Returns how many grants were revoked."""

    CSS_PATH = str(styles_dir() / "grants.tcss")
    BINDINGS = [
        Binding("d,delete", "revoke", "Revoke"),
        Binding("escape,q", "close", "Close"),
    ]

    def __init__(self, grants: GrantList, *, format_time: Formatter = format_created) -> None:
        super().__init__()
        self.grants = grants
        self.format_time = format_time
        self.revoked: list[str] = []
        self._rows: list[GrantView] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="grants-box") as box:
            box.border_title = "Grants — allowed without asking"
            yield Static(
                "Each grant is one tool and one command segment (exact) or a prefix you "
                "edited. Session grants end with this session; saved ones live in your config "
                "file, for the workspace shown.",
                id="grants-help",
            )
            yield DataTable(id="grants-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="grants-empty")
        yield KeyBar()

    @property
    def narrow(self) -> bool:
        """Below 90 columns every column must still fit: folders by name, no dates."""
        return self.app.size.width < 90

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        columns = (
            ("rule", "scope", "workspace")
            if self.narrow
            else ("rule", "scope", "workspace", "granted")
        )
        table.add_columns(*columns)
        self.refill()
        table.focus()

    def refill(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        self._rows = list(self.grants.list())
        for grant in self._rows:
            where = "every workspace" if grant.workspace == "*" else grant.workspace
            if grant.hosts:
                where = f"hosts {grant.hosts} · {where}"
            if self.narrow:
                if grant.workspace != "*":
                    where = "…/" + where.rstrip("/").rsplit("/", 1)[-1]
                table.add_row(str(grant.rule), grant.scope, where)
            else:
                table.add_row(str(grant.rule), grant.scope, where, self.format_time(grant.created))
        empty = self.query_one("#grants-empty", Static)
        empty.display = not self._rows
        empty.update(
            "Nothing is granted. Answer an approval with “a” (allow always) to add one."
            if not self._rows
            else ""
        )

    def action_revoke(self) -> None:
        table = self.query_one(DataTable)
        if not self._rows or table.cursor_row is None:
            return
        row = min(table.cursor_row, len(self._rows) - 1)
        grant = self._rows[row]
        rule = str(grant.rule)
        if self.grants.revoke(rule):
            self.revoked.append(rule)
            self.notify(f"revoked {rule}", title="Grant revoked", markup=False)
        self.refill()
        if self._rows:
            table.move_cursor(row=min(row, len(self._rows) - 1))

    @on(DataTable.RowSelected)
    def _selected(self) -> None:
        """Enter on a row does nothing destructive: revoking takes ``d``."""

    def action_close(self) -> None:
        self.dismiss(len(self.revoked))


if __name__ == "__main__":
    import time
    from dataclasses import dataclass, field

    from textual.app import App

    @dataclass
    class _Grant:
        rule: str
        scope: str = "session"
        workspace: str = "*"
        created: float = field(default_factory=time.time)
        hosts: str | None = None

    @dataclass
    class _Grants:
        rows: list[_Grant]

        def list(self) -> list[_Grant]:
            return self.rows

        def revoke(self, rule_text: str) -> bool:
            kept = [row for row in self.rows if row.rule != rule_text]
            revoked, self.rows = len(kept) < len(self.rows), kept
            return revoked

    demo = _Grants([_Grant("run_shell(git status)"), _Grant("run_shell(npm test:*)", "saved")])

    class _Demo(App[None]):
        def on_mount(self) -> None:
            self.push_screen(GrantsScreen(demo), lambda n: self.exit())

    _Demo().run()

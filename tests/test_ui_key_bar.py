"""The key bar styles each key once a rebuild, and looks exactly as Textual's ``Footer``."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.widgets import Footer, Input
from textual.widgets._footer import FooterKey

from tui.ui.key_bar import KeyBar


class Keys(App[None]):
    BINDINGS = [Binding("ctrl+o", "one", "one"), Binding("ctrl+t", "two", "two")]

    def __init__(self, bar: type[Footer], compact: bool) -> None:
        super().__init__()
        self.bar = bar
        self.compact = compact

    def compose(self) -> ComposeResult:
        yield Input(id="a")
        yield Input(id="b")
        yield self.bar(compact=self.compact)


async def keys_after_a_focus_change(app: Keys) -> list[tuple[str, bool, bool]]:
    """Each key of the bar rebuilt for a new focus: (key, compact, has the class)."""
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        app.query_one("#b", Input).focus()
        await pilot.pause()
        return [(k.key, k.compact, k.has_class("-compact")) for k in app.query(FooterKey)]


@pytest.mark.parametrize("compact", [False, True])
async def test_bound_keys_are_made_with_the_bars_look_and_never_restyled_for_it(
    compact: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    textuals = await keys_after_a_focus_change(Keys(Footer, compact))
    toggled: list[str] = []
    for name in ("add_class", "remove_class"):
        original = getattr(DOMNode, name)

        def spy(node: DOMNode, *names: str, _original: Any = original, **kw: Any) -> Any:
            # A change with ``update`` restyles the key and all in it at once.
            bound = isinstance(node, FooterKey) and not node.has_class("-command-palette")
            if bound and "-compact" in names and kw.get("update", True):
                before = node.has_class("-compact")
                result = _original(node, *names, **kw)
                if node.has_class("-compact") != before:
                    toggled.append(f"{node.key}: {names}")  # type: ignore[attr-defined]
                return result
            return _original(node, *names, **kw)

        monkeypatch.setattr(DOMNode, name, spy)
    ours = await keys_after_a_focus_change(Keys(KeyBar, compact))
    assert {key for key, _, _ in ours} >= {"ctrl+o", "ctrl+t"}
    assert ours == textuals  # the same keys, each with the same look
    assert toggled == []


class Bound(Input):
    """A field with a key of its own: the bar offers it only while the field has focus."""

    BINDINGS = [Binding("ctrl+x", "cut_all", "cut all")]


class Fields(App[None]):
    def compose(self) -> ComposeResult:
        yield Input(id="a")
        yield Input(id="b")
        yield Bound(id="c")
        yield KeyBar()


async def test_the_bar_is_rebuilt_only_when_the_keys_on_offer_change() -> None:
    app = Fields()
    async with app.run_test(size=(80, 10)) as pilot:
        app.query_one("#a", Input).focus()
        await pilot.pause()
        before = list(app.query(FooterKey))
        assert "ctrl+x" not in {key.key for key in before}
        app.query_one("#b", Input).focus()  # the same keys on offer: the same key widgets
        await pilot.pause()
        assert list(app.query(FooterKey)) == before
        app.query_one("#c", Bound).focus()  # one more key: the bar is rebuilt with it
        await pilot.pause()
        assert "ctrl+x" in {key.key for key in app.query(FooterKey)}
        app.query_one("#a", Input).focus()
        await pilot.pause()
        assert "ctrl+x" not in {key.key for key in app.query(FooterKey)}

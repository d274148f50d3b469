"""The UI's parts that need no screen: bounds, batching, history, keys, commands, styles."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path, PurePath

import pytest
from textual import events

import tui.ui
from tui.bus import EventBus
from tui.events import AssistantTextDelta, Event, ToolCallStarted, ToolOutputChunk
from tui.locations import styles_dir
from tui.session_pane import coalesce
from tui.ui.adapter import BusAdapter
from tui.ui.autoapprove import AutoApprove, DurationError, format_remaining, parse_duration
from tui.ui.command_table import UnknownCommand, parse_slash
from tui.ui.mirror.keys import Typed, typed_for
from tui.ui.prompt.history import PromptHistory
from tui.ui.tools.output import SPILL, OutputBuffer

# -- tool output bounds ----------------------------------------------------------------------


def test_output_buffer_keeps_a_bounded_tail_and_spills_everything(tmp_path: Path) -> None:
    spill = tmp_path / "spill.log"
    buffer = OutputBuffer(spill_path=spill, max_lines=100, max_bytes=4096)
    data = "".join(f"{i}\n" for i in range(1, 100_001))
    for start in range(0, len(data), 65536):
        buffer.append("stdout", data[start : start + 65536])
    assert buffer.total_lines == 100_000 and buffer.total_bytes == len(data)
    assert buffer.line_count() <= 100 and buffer.kept_bytes <= 4096
    assert buffer.visible()[-1] == ("stdout", "100000")
    assert buffer.truncated and buffer.spilling
    buffer.close()
    assert SPILL.flush()
    assert spill.read_text() == data  # the pager's source has every byte


def test_output_buffer_small_output_is_kept_whole_without_a_file(tmp_path: Path) -> None:
    buffer = OutputBuffer(spill_path=tmp_path / "never.log")
    buffer.append("stdout", "a\nb")
    buffer.append("stderr", "oops\n")
    buffer.append("stdout", "c\n")
    assert buffer.visible() == [("stdout", "a"), ("stderr", "oops"), ("stdout", "bc")]
    assert not buffer.truncated and not (tmp_path / "never.log").exists()


def test_output_buffer_bounds_a_flood_without_newlines() -> None:
    buffer = OutputBuffer(max_lines=10, max_bytes=64 * 1024)
    for _ in range(100):
        buffer.append("stdout", "y" * 10_000)
    assert buffer.kept_bytes <= 64 * 1024 + 4096
    assert all(len(line) <= 4096 for _, line in buffer.visible())


def test_output_buffer_carriage_returns_keep_the_last_redraw() -> None:
    buffer = OutputBuffer()
    buffer.append("stdout", "10%\r50%\r100%\n")
    assert buffer.visible() == [("stdout", "100%")]


# -- the adapter -----------------------------------------------------------------------------


async def test_adapter_turns_a_flood_into_a_few_batches() -> None:
    bus = EventBus()
    subscription = bus.subscribe("ui")
    batches: list[list[Event]] = []
    adapter = BusAdapter(subscription, lambda events, dropped: batches.append(events))
    task = asyncio.ensure_future(adapter.run())
    bus.publish(ToolCallStarted(tool_call_id="c", tool_name="run_shell"))
    for i in range(5000):
        bus.publish(
            ToolOutputChunk(tool_call_id="c", tool_name="run_shell", stream="stdout", text=f"{i}\n")
        )
    await asyncio.sleep(0.1)
    assert len(batches) == 1 and len(batches[0]) == 5001  # the UI had not consumed yet
    adapter.consumed()
    for _ in range(3):
        bus.publish(AssistantTextDelta(text="x"))
    await asyncio.sleep(0.1)
    assert len(batches) == 2 and len(batches[1]) == 3
    bus.unsubscribe(subscription)
    adapter.consumed()
    await asyncio.wait_for(task, 1)


# -- prompt history, durations, commands, keys -----------------------------------------------


def test_history_walks_back_and_returns_the_draft(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    history = PromptHistory(path)
    for text in ("first", "second\nwith two lines", "third"):
        history.add(text)
    assert history.previous("draft") == "third"
    assert history.previous("third") == "second\nwith two lines"
    assert history.next() == "third"
    assert history.next() == "draft"
    assert history.next() is None
    assert PromptHistory(path).entries == ["first", "second\nwith two lines", "third"]
    assert history.search("IR") == ["third", "first"]


@pytest.mark.parametrize(
    ("text", "seconds"), [("10m", 600), ("90s", 90), ("1h", 3600), ("5", 300), ("1.5 min", 90)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "0s", "9h", "-1m"])
def test_bad_durations_say_what_to_write(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_auto_approve_window_ends_by_itself() -> None:
    now = [100.0]
    window = AutoApprove(clock=lambda: now[0])
    window.start(600)
    assert window.active and format_remaining(window.remaining()) == "10:00"
    now[0] += 599.5
    assert window.active and format_remaining(window.remaining()) == "0:01"
    now[0] += 1
    assert not window.active and window.until is None


def test_slash_commands_parse_and_unknown_ones_list_the_real_ones() -> None:
    assert parse_slash("/approve 10m").argument == "10m"
    assert parse_slash("/MODE full-auto").name == "mode"
    with pytest.raises(UnknownCommand, match="/grants"):
        parse_slash("/frobnicate")


@pytest.mark.parametrize(
    ("key", "character", "expected"),
    [
        ("a", "a", Typed("text", "a")),
        ("A", "A", Typed("text", "A")),
        ("space", " ", Typed("text", " ")),
        ("semicolon", ";", Typed("text", ";")),
        ("minus", "-", Typed("text", "-")),
        ("enter", "\r", Typed("key", "Enter")),
        ("ctrl+c", None, Typed("key", "C-c")),
        ("ctrl+space", None, Typed("key", "C-Space")),
        ("alt+f", None, Typed("key", "M-f")),
        ("alt+shift+a", "A", Typed("key", "M-A")),
        ("alt+semicolon", ";", Typed("text", "\x1b;")),
        ("ctrl+left", None, Typed("key", "C-Left")),
        ("shift+up", None, Typed("key", "S-Up")),
        ("pageup", None, Typed("key", "PPage")),
        ("f5", None, Typed("key", "F5")),
        ("shift+tab", None, Typed("key", "BTab")),
        ("backspace", "\x7f", Typed("key", "BSpace")),
        ("<ignore>", "\x1b[?1;2c", None),
    ],
)
def test_keys_become_tmux_keys(key: str, character: str | None, expected: Typed | None) -> None:
    assert typed_for(events.Key(key, character)) == expected


def test_typed_text_is_sent_in_runs() -> None:
    keys = [Typed("text", "l"), Typed("text", "s"), Typed("key", "Enter"), Typed("text", "x")]
    assert coalesce(keys) == [Typed("text", "ls"), Typed("key", "Enter"), Typed("text", "x")]


# -- styles and import weight ----------------------------------------------------------------


def _ui_modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(tui.ui.__path__, prefix="tui.ui.")
        if not info.name.endswith("__main__")
    ]


def test_every_css_path_exists_under_styles() -> None:
    from textual.app import App
    from textual.screen import Screen

    declared: list[tuple[str, str]] = []
    for name in _ui_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, (App, Screen)):
                paths = value.CSS_PATH
                listed = [paths] if isinstance(paths, (str, PurePath)) else list(paths or [])
                for path in listed:
                    declared.append((f"{name}.{value.__name__}", str(path)))
    assert len(declared) >= 10
    root = styles_dir().resolve()
    for owner, path in declared:
        resolved = Path(path).resolve()
        assert resolved.parent == root, f"{owner}: {path} is not in styles/"
        assert resolved.is_file(), f"{owner}: {path} does not exist"


def test_first_frame_needs_neither_pydantic_nor_the_agent() -> None:
    """The app module stays light, so the first frame comes before settings and the session."""
    code = (
        "import sys, tui.ui.app\n"
        "heavy = [m for m in ('pydantic', 'tui.events', 'tui.session', 'httpx', 'httpx2', "
        "'textual.widgets._markdown', 'tui.security.risk') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_alt_enter_is_told_apart_from_enter_without_the_kitty_protocol() -> None:
    """Inside tmux Alt+Enter arrives as ESC CR; it must insert a newline, not send."""
    from textual._xterm_parser import XTermParser

    import tui.ui.prompt.input  # noqa: F401 - teaches the parser

    parser = XTermParser()
    keys = [e.key for e in parser.feed("\x1b\r") if isinstance(e, events.Key)]
    keys += [e.key for e in parser.feed("\r") if isinstance(e, events.Key)]
    assert keys == ["alt+enter", "enter"]

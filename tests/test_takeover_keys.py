"""Every key a person types during a take-over arrives in the pane, byte for byte, in order.

The keys start where a real terminal's do: as the bytes a terminal sends, read by Textual's
own xterm parser into key events. From there they take the app's path (``typed_for``,
``typed_paste``, ``forward``) into a real tmux pane on a private socket, where ``cat`` or
``head -c`` writes what the pane received to a file that is compared exactly.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual import events
from textual._xterm_parser import XTermParser

from tests.test_tmux_tools import tmux_backend
from tests.tmux_helpers import (
    SHELL,
    kill_server,
    needs_tmux,
    new_socket_name,
    tmux,
    tmux_backends,
)
from tests.waiting import until
from tui.exec.tmux.backend import TmuxBackend
from tui.session_pane import forward
from tui.ui.mirror.keys import Typed, typed_for, typed_paste

pytestmark = needs_tmux

DEADLINE = 10.0


class Pane:
    """A real pane of a private tmux server, and files for what programs in it receive."""

    def __init__(self, backend: TmuxBackend, pane_id: str, socket: str, root: Path) -> None:
        self.backend = backend
        self.pane_id = pane_id
        self.socket = socket
        self.root = root
        self.runs = 0

    async def current_command(self) -> str:
        return await self.format("#{pane_current_command}")

    async def shell(self, command: str) -> None:
        """Type ``command`` and Enter at the pane's shell."""
        await self.backend.send_keys(self.pane_id, command, literal=True, enter=True, guard=False)

    async def start(self, program: str, name: str, runs: str = "") -> tuple[Path, Path]:
        """Run ``program > file`` until ``runs`` (by default its first word) holds the pane.

        Returns the file and the one made when the program has ended.
        """
        # Whatever an earlier (failed) example left running goes first: each starts clean.
        if await self.current_command() != "bash":
            await self.backend.send_keys(self.pane_id, "C-c")
            await until(self.running("bash"), "the shell's prompt", DEADLINE)
        self.runs += 1
        out, done = self.root / f"{name}-{self.runs}", self.root / f"{name}-{self.runs}.done"
        await self.shell(f"{program} > {out}; : > {done}")
        command = runs or program.split()[0]
        await until(self.running(command), f"{command} to run", DEADLINE)
        return out, done

    def running(self, command: str) -> Callable[[], Awaitable[bool]]:
        async def probe() -> bool:
            return await self.current_command() == command

        return probe

    def shows(self, text: str) -> Callable[[], Awaitable[bool]]:
        async def probe() -> bool:
            screen = await tmux(self.socket, "capture-pane", "-p", "-t", self.pane_id)
            return any(line.strip() == text for line in screen.splitlines())

        return probe

    async def format(self, text: str) -> str:
        out = await tmux(self.socket, "display", "-p", "-t", self.pane_id, text)
        return out.strip()


def exists(path: Path) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return path.exists()

    return probe


@pytest.fixture
async def pane(tmp_path: Path) -> AsyncIterator[Pane]:
    socket = new_socket_name()
    async with tmux_backends(socket, tmp_path) as make:
        backend = make(width=120, height=30)
        await backend.ensure_started([])
        assert backend.default_pane is not None
        try:
            yield Pane(backend, backend.default_pane, socket, tmp_path)
        finally:
            kill_server(socket)


def terminal_keys(data: str) -> list[events.Key]:
    """The key events Textual makes of ``data`` arriving from a terminal."""
    parser = XTermParser()
    keys = [event for event in parser.feed(data) if isinstance(event, events.Key)]
    keys += [event for event in parser.feed("") if isinstance(event, events.Key)]
    return keys


def typed(data: str) -> list[Typed]:
    """What the mirror posts for ``data`` typed at a terminal (the app's own mapping)."""
    return [item for key in terminal_keys(data) if (item := typed_for(key)) is not None]


async def type_into(pane: Pane, items: list[Typed], *, burst: int = 7) -> None:
    """Hand ``items`` to ``forward`` in bursts, as the app's key worker does."""
    for start in range(0, len(items), burst):
        await forward(pane.backend.send_typed, pane.pane_id, items[start : start + burst])


# -- literal text, found by hypothesis --------------------------------------------------------

NASTY = [";", " ;", "; ", "\\;", "-", "--", "-x", " -- ", '"', "'", "\\", "#", "~", "$", "{", "}"]
NASTY += ["|", "&", "`", "%", "!", "*", "?", "$(", "#{pane_id}", "~root", "\\\\", "\\n", " "]
UNICODE = ["中文", "日本語", "😀", "👩‍💻", "e\u0301", "\u0301", "ﬁ", "Ω", "\u00a0", "\u200b", "א"]
CHARACTERS = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs"))
PIECE = st.one_of(
    st.sampled_from(NASTY),
    st.sampled_from(UNICODE),
    st.text(CHARACTERS, min_size=1, max_size=4),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=6),
)
LEADING = st.sampled_from(["", "", "-", "--", "-- ", "-x ", "--help", ";", "-;"])
LINES = st.builds(
    lambda lead, pieces: lead + "".join(pieces), LEADING, st.lists(PIECE, max_size=10)
)


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(lines=st.lists(LINES, min_size=1, max_size=3), as_paste=st.booleans())
async def test_random_text_arrives_byte_for_byte(
    pane: Pane, lines: list[str], as_paste: bool
) -> None:
    """Typed key by key or pasted, ``cat`` receives exactly the text, lines and all."""
    out, done = await pane.start("cat", "typed")
    text = "\n".join(lines)
    if as_paste:
        paste = typed_paste(events.Paste(text + "\n"))
        items = [paste] if paste is not None else []
    else:
        items = typed(text.replace("\n", "\r") + "\r")
    await type_into(pane, items + typed("\x04"))
    await until(exists(done), "cat to end", DEADLINE)
    assert out.read_bytes() == (text + "\n").encode()


# -- the defects as reported, and the agent's own literal path ------------------------------


async def test_semicolons_and_leading_dashes_arrive(pane: Pane) -> None:
    out, done = await pane.start("cat", "reported")
    reported = "a ; b | & $ \" ' { # ~ z"
    await type_into(pane, typed(reported + "\r"), burst=1)
    await type_into(pane, typed("-- -x\r"), burst=100)
    await type_into(pane, typed("--\r-\r;\r\x04"), burst=1)
    await until(exists(done), "cat to end", DEADLINE)
    assert out.read_text() == f"{reported}\n-- -x\n--\n-\n;\n"


@pytest.mark.parametrize("text", ["--", "-x", "-- -x", "a;", ";", "x\\", '"$HOME" ~ #{pane_id}'])
async def test_literal_send_keys_sends_exactly_the_text(pane: Pane, text: str) -> None:
    """The agent's ``send_keys(literal=True)`` goes through tmux's parser: quoted and guarded."""
    out, done = await pane.start("cat", "literal")
    await pane.backend.send_keys(pane.pane_id, text, literal=True, enter=True, guard=False)
    await pane.backend.send_keys(pane.pane_id, "C-d")
    await until(exists(done), "cat to end", DEADLINE)
    assert out.read_text() == text + "\n"


# -- named keys ------------------------------------------------------------------------------

# What an xterm sends for each key, and what tmux types into a pane whose program has not
# asked for application cursor keys: the bytes a program in a terminal expects.
NAMED = [
    ("up", "\x1b[A", b"\x1b[A"),
    ("down", "\x1b[B", b"\x1b[B"),
    ("right", "\x1b[C", b"\x1b[C"),
    ("left", "\x1b[D", b"\x1b[D"),
    ("shift+up", "\x1b[1;2A", b"\x1b[1;2A"),
    ("ctrl+left", "\x1b[1;5D", b"\x1b[1;5D"),
    ("home", "\x1b[H", b"\x1b[1~"),
    ("end", "\x1b[F", b"\x1b[4~"),
    ("pageup", "\x1b[5~", b"\x1b[5~"),
    ("pagedown", "\x1b[6~", b"\x1b[6~"),
    ("insert", "\x1b[2~", b"\x1b[2~"),
    ("delete", "\x1b[3~", b"\x1b[3~"),
    ("f1", "\x1bOP", b"\x1bOP"),
    ("f5", "\x1b[15~", b"\x1b[15~"),
    ("f12", "\x1b[24~", b"\x1b[24~"),
    ("tab", "\t", b"\t"),
    ("shift+tab", "\x1b[Z", b"\x1b[Z"),
    ("enter", "\r", b"\r"),
    ("backspace", "\x7f", b"\x7f"),
    ("ctrl+a", "\x01", b"\x01"),
    ("ctrl+c", "\x03", b"\x03"),
    ("ctrl+z", "\x1a", b"\x1a"),
    ("alt+x", "\x1bx", b"\x1bx"),
    ("alt+left", "\x1b[1;3D", b"\x1b[1;3D"),
    ("escape", "\x1b", b"\x1b"),
    ("alt+shift+a", "\x1bA", b"\x1bA"),
    ("space", " ", b" "),
]


async def test_named_keys_arrive_as_the_escape_sequences_programs_expect(pane: Pane) -> None:
    """Raw mode: every byte reaches ``head -c``, so each key's sequence is seen exactly."""
    expected = b"".join(sent for _, _, sent in NAMED)
    # Raw mode set by the program's own line, so no tty change is in flight when keys arrive.
    out, done = await pane.start(f"stty raw -echo; head -c {len(expected)}", "named", "head")
    items: list[Typed] = []
    for name, sequence, _ in NAMED:
        keys = typed(sequence)
        assert len(keys) == 1, f"{name}: {keys}"
        items += keys
    await type_into(pane, items, burst=3)
    await until(exists(done), "head to end", DEADLINE)
    got = out.read_bytes()
    assert got == expected, [
        name for (name, _, sent), start in _offsets(NAMED) if got[start : start + len(sent)] != sent
    ]


def _offsets(named: list[tuple[str, str, bytes]]) -> list[tuple[tuple[str, str, bytes], int]]:
    offsets, start = [], 0
    for entry in named:
        offsets.append((entry, start))
        start += len(entry[2])
    return offsets


# -- pastes ----------------------------------------------------------------------------------


async def test_a_paste_is_bracketed_when_the_program_asks(pane: Pane) -> None:
    """A program that turned bracketed paste on gets the markers; the paste cannot forge them."""
    pasted = "one ; two\n-- three\n\x1b[201~rm -rf x\n"
    clean = "one ; two\r-- three\rrm -rf x\r"
    expected = b"\x1b[200~" + clean.encode() + b"\x1b[201~"
    # tmux reads the pane's output in order: once READY shows, the mode switch before it is in.
    ready = "printf '\\033[?2004hRE''ADY\\n' > /dev/tty"
    program = f"stty raw -echo; {ready}; head -c {len(expected)}"
    out, done = await pane.start(f"sh -c {_sh(program)}", "bracketed")
    await until(pane.shows("READY"), "bracketed paste turned on", DEADLINE)
    paste = typed_paste(events.Paste(pasted))
    assert paste is not None
    await type_into(pane, [paste])
    await until(exists(done), "the paste to arrive", DEADLINE)
    assert out.read_bytes().endswith(expected)


def _sh(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# -- through the app's take-over -------------------------------------------------------------


@pytest.mark.parametrize(
    "shell",
    [
        pytest.param(SHELL, id="bash"),
        pytest.param(
            "zsh -f", id="zsh", marks=pytest.mark.skipif(not shutil.which("zsh"), reason="no zsh")
        ),
    ],
)
async def test_the_apps_take_over_types_what_the_person_typed(workspace: Path, shell: str) -> None:
    """Ctrl+T, then keys one by one, a fast burst and a paste: the pane's ``cat`` gets them all."""
    from tests.test_ui_app import app_for, make_session, send
    from tests.test_ui_app import until as ui_until
    from tui.ui.mirror.pane import PaneMirror

    socket = new_socket_name()
    backend = tmux_backend(socket, workspace, shell=shell, width=80, height=20)
    app = app_for(make_session(workspace, None, backend=backend))
    out = workspace / "typed.txt"
    reported = "a ; b | & $ \" ' { # ~ z"
    pasted = "first ; line\n--second\n  'third' \"$HOME\" ~ #x\n"
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "!echo agent-ready")
            await ui_until(pilot, lambda: app.panes.target is not None, "the agent's pane")
            pane = Pane(backend, app.panes.target or "", socket, workspace)
            await pilot.press("ctrl+t")
            assert app.panes.holding and app.query_one(PaneMirror).has_focus
            await pilot.press(*"cat > typed.txt", "enter")
            await until(pane.running("cat"), "cat to run", DEADLINE)
            await pilot.press(*reported, "enter")
            # A burst, as a terminal delivers fast typing: every event queued before any is sent.
            assert app._driver is not None
            for key in terminal_keys("-- -x\r-\r"):
                app._driver.send_message(key)
            app._driver.send_message(events.Paste(pasted))
            app._driver.send_message(terminal_keys("\x04")[0])
            await until(pane.running(shell.split()[0]), "cat to end", DEADLINE)
            assert out.read_text() == f"{reported}\n-- -x\n-\n{pasted}"
            assert app.panes.holding
            errors = [str(box.border_title) for box in app.chat.query("ErrorBox")]
            assert errors == []
    finally:
        await backend.close()
        kill_server(socket)


async def test_one_character_key_names_are_keys_not_flags(pane: Pane) -> None:
    """The agent's key names ``-``, ``;``, ``#``, ``~`` reach the pane: quoted, never parsed."""
    out, done = await pane.start("cat", "names")
    await pane.backend.send_keys(pane.pane_id, ["-", ";", "#", "~", "Enter", "C-d"])
    await until(exists(done), "cat to end", DEADLINE)
    assert out.read_text() == "-;#~\n"

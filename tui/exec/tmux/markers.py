"""The prompt-marker protocol: how a shell in a pane tells us a command started and ended.

A pane is a terminal, not a pipe: there is no exit status and no end of stream. So each pane's
shell is taught, once (a guard variable makes the set-up idempotent), to emit a marker at
every prompt — ``__ATUI_<nonce>_<id>_<exit>_p<cwd>__`` with a monotonic ``id``, the previous
command's exit code and the shell's working directory in hex — a start marker
``__ATUI_<nonce>_<id>_go__`` just before a command runs (bash ``PS0``, zsh ``preexec``, a
``__atui_go;`` prefix for POSIX sh), and ``__ATUI_<nonce>_0_ps2__`` with every continuation
prompt (a half-typed multi-line command).

Each marker travels inside a private OSC sequence (``ESC ] 6973 ; … BEL``): tmux hands it to
us raw in ``%output`` and draws nothing for it, so the person sees exactly the shell they
would see without us — no marker lines, no blank lines.

Why this is safe:

* The marker never appears literally in what we type: the shell builds it from pieces
  (``printf`` with a variable), so the echo of a typed line can never look like a marker.
* A command's id is learnt from its start marker, which is printed after the shell read the
  whole command line, and its end is the end marker with that same id. Markers of other
  commands in the pane (a person pressing Enter, an earlier job) carry other ids.
* Output is read from the raw ``%output`` stream between the two markers, so it is complete
  even when it scrolled out of the pane's history; the echoed command line lies before the
  start marker and is never part of it.
* The directory is hex: a directory name is anyone's text (newlines, escapes, marker-looking
  words) and must not be able to forge or break a marker. Names over ``MAX_CWD_BYTES`` are
  not sent (the cwd is then unknown, never a wrong one).
"""

from __future__ import annotations

import codecs
import enum
import functools
import re
import secrets
from dataclasses import dataclass, field
from typing import Literal

MAX_CWD_BYTES = 512
"""Longest working directory a marker carries (hex doubles it)."""
OSC_OPEN = "\x1b]6973;"
"""A private OSC number: tmux passes the sequence through ``%output`` and draws nothing."""
OSC_CLOSE = "\x07"
MARKER_PATTERN = (
    rb"\x1b\]6973;__ATUI_([0-9a-f]{8})_([0-9]+)_([0-9]+|go|ps2|in)"
    rb"(?:_p([0-9a-f]{0,%d}))?__\x07" % (2 * MAX_CWD_BYTES)
)
_MARKER = re.compile(MARKER_PATTERN)
_TEXT_BODY = r"_[0-9]+_(?:[0-9]+|go|ps2|in)(?:_p[0-9a-f]*)?__"
_MARKER_TEXT = re.compile(r"(?:\x1b\]6973;)?__ATUI_[0-9a-f]{8}" + _TEXT_BODY + r"\x07?")
OVERFLOW_LIMIT = 4 * 1024 * 1024
"""Bytes past the keep cap held for the live sink between two reads (it takes them at once)."""
MAX_MARKER_BYTES = 64 + 2 * MAX_CWD_BYTES
"""Longer than any marker with its OSC wrapping: the carry kept between reads."""


class ShellKind(enum.Enum):
    BASH = "bash"
    ZSH = "zsh"
    SH = "sh"


_SH_NAMES = {"sh", "dash", "ash", "ksh", "ksh93", "mksh", "busybox", "yash", "posh"}
_NOT_SHELLS = {"tmux", "login", "su", "sudo", "ssh", "python", "python3", "vim", "nvim", "less"}


SANDBOX_WRAPPER = "bwrap"
"""A sandboxed pane's own process: tmux names it while the shell takes the terminal back from
a command that just ended (a plain pane's process is the shell itself, so tmux said "bash"; a
local sandboxed pane's is the ``sh`` around bwrap, which counts as a shell)."""


def shell_or_wrapper(current_command: str) -> bool:
    """The pane's shell is what holds the terminal: a shell, or its sandbox wrapper."""
    name = current_command.strip().rsplit("/", 1)[-1]
    return name == SANDBOX_WRAPPER or detect_shell(current_command) is not None


def detect_shell(current_command: str) -> ShellKind | None:
    """The protocol for a pane's foreground program (``#{pane_current_command}``).

    None when it is not a shell we can teach (an editor, a pager, a REPL): typing a
    set-up line into those would do damage.
    """
    name = current_command.strip().rsplit("/", 1)[-1].lstrip("-")
    if name in ("bash", "rbash"):
        return ShellKind.BASH
    if name == "zsh":
        return ShellKind.ZSH
    if name in _SH_NAMES:
        return ShellKind.SH
    return None


def shell_kind_of(command: str) -> ShellKind | None:
    """The protocol for a shell command line we start a pane with (``bash --norc``)."""
    words = command.split()
    return detect_shell(words[0]) if words else None


def new_nonce() -> str:
    return secrets.token_hex(4)


_OPEN = "\\033]6973;"
_CLOSE = "\\007"
_PRINT_GO = f'printf \'{_OPEN}__ATUI_%s_%s_go__{_CLOSE}\' "$__atui_n" "$((__atui_i+1))"'
_PRINT_END = f'printf \'{_OPEN}__ATUI_%s_%s_%s_p%s__{_CLOSE}\' "$__atui_n" "$__atui_i" "$e" "$h"'
_HEX_BASH = (
    f"local LC_ALL=C s=$PWD h= c i; if (( ${{#s}} <= {MAX_CWD_BYTES} )); then "
    'for ((i=0;i<${#s};i++)); do printf -v c %02x "\'${s:i:1}"; h+=$c; done; fi'
)
_HEX_ZSH = (
    # Its own function: ``localoptions`` restores options on return, which must not undo
    # what the prompt hook sets for the next command (interactive_comments).
    "__atui_x() { setopt localoptions nomultibyte; local s=$PWD c i; "
    f"if (( ${{#s}} <= {MAX_CWD_BYTES} )); then "
    'for ((i=1;i<=${#s};i++)); do printf -v c %02x "\'${s[i]}"; h+=$c; done; fi; }'
)
_GUARD = "__atui_g2"
"""Bumped when the protocol changes, so a pane taught an older one is taught again."""

_CLEAR = "printf '\\033[H\\033[2J'"
_BASH_HAS_PS0 = "(( BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 404 ))"


def bootstrap_line(
    kind: ShellKind, nonce: str, *, clear: bool = False, erase_from: int | None = None
) -> str:
    """One line that teaches the shell the protocol; typing it again changes only the nonce.

    It starts with a space so shells with ``HISTCONTROL=ignorespace`` keep it out of history,
    and bash deletes it from its history itself: pressing Up never brings it back.
    ``clear`` wipes the screen afterwards (a pane we just created: the person need not read
    the set-up line); ``erase_from`` (a 0-based screen row: where the prompt it is typed at
    ends up) erases only from there down, so a person's pane keeps what it showed. For bash
    its exit status, carried by the first marker, says whether ``PS0`` works (bash 4.4+):
    0 yes, 1 no.
    """
    if not re.fullmatch(r"[0-9a-f]{8}", nonce):
        raise ValueError(f"bad nonce {nonce!r}")
    go, end = _PRINT_GO, _PRINT_END
    if kind is ShellKind.BASH:
        body = (
            f"{_GUARD}=1; __atui_i=0; "
            f"__atui_p() {{ local e=$?; {_HEX_BASH}; __atui_i=$((__atui_i+1)); {end}; "
            "return $e; }; "
            f"__atui_go() {{ {go}; }}; "
            'case ";${PROMPT_COMMAND-};" in *";__atui_p;"*) ;; '
            '*) PROMPT_COMMAND="__atui_p${PROMPT_COMMAND:+;$PROMPT_COMMAND}";; esac; '
            "PS0='\\e]6973;__ATUI_${__atui_n}_$((__atui_i+1))_go__\\a'\"${PS0-}\"; "
            "PS2='\\[\\e]6973;__ATUI_${__atui_n}_0_ps2__\\a\\]'\"${PS2-}\"; "
            "PS1=\"${PS1-}\"'\\[\\e]6973;__ATUI_${__atui_n}_0_in__\\a\\]'"
        )
    elif kind is ShellKind.ZSH:
        # zsh prompts expand no variables without prompt_subst: the nonce is pasted into PS2
        # from pieces, so the typed line still holds no marker. PROMPT_SP (a reverse-video %
        # and a line of spaces) is printed before precmd, so it would land in the output.
        # interactive_comments: without it zsh runs ``echo hi # ; rm -rf x`` as two commands,
        # where bash (and the risk rater) see one and a comment. Set again before every
        # prompt, so a command that unsets it cannot make the next one mean something else.
        body = (
            f"{_GUARD}=1; __atui_i=0; "
            f"{_HEX_ZSH}; "
            "__atui_p() { local e=$? h=; setopt interactive_comments; __atui_x; "
            f"__atui_i=$((__atui_i+1)); {end}; return $e; }}; "
            f"__atui_go() {{ {go}; }}; "
            "setopt interactive_comments; unsetopt prompt_sp; "
            "precmd_functions=(__atui_p ${precmd_functions:#__atui_p}); "
            "preexec_functions=(__atui_go ${preexec_functions:#__atui_go}); "
            "PS2=$'%{\\e]6973;__ATUI_'$__atui_n$'_0_ps2__\\a%}'\"$PS2\"; "
            "PS1=\"$PS1\"$'%{\\e]6973;__ATUI_'$__atui_n$'_0_in__\\a%}'"
        )
    else:
        body = (
            f"{_GUARD}=1; __atui_i=0; __atui_e=$(printf '\\033'); __atui_b=$(printf '\\007'); "
            f"__atui_go() {{ {go}; }}; "
            # No string builtins to hex with: od (POSIX; -v keeps repeated bytes), run at
            # each prompt through a command substitution in PS1 ($? is read before it).
            f'__atui_x() {{ [ ${{#PWD}} -le {MAX_CWD_BYTES} ] && printf %s "$PWD" | '
            "od -An -v -tx1 | tr -d ' \\n'; }; "
            "PS1='${__atui_e}]6973;__ATUI_${__atui_n}_$((__atui_i+=1))_$?_p$(__atui_x)__"
            "${__atui_b}'"
            '"$PS1"; '
            "PS2='${__atui_e}]6973;__ATUI_${__atui_n}_0_ps2__${__atui_b}'\"$PS2\"; "
            "PS1=\"$PS1\"'${__atui_e}]6973;__ATUI_${__atui_n}_0_in__${__atui_b}'"
        )
    setup = "setopt interactive_comments; " if kind is ShellKind.ZSH else ""
    line = f' __atui_n={nonce}; {setup}if [ -z "${{{_GUARD}-}}" ]; then {body}; fi'
    if kind is ShellKind.BASH:
        line += "; history -d $HISTCMD 2>/dev/null || history -d -1 2>/dev/null"
    if clear:
        line += f"; {_CLEAR}"
    elif erase_from is not None:
        line += f"; printf '\\033[{int(erase_from) + 1};1H\\033[J'"
    if kind is ShellKind.BASH:
        line += f"; {_BASH_HAS_PS0}"
    return line


def prompt_row(line: str, cursor_x: int, cursor_y: int, width: int, height: int) -> int:
    """The screen row of the prompt ``line`` is typed at, once typing and Enter scrolled it.

    The line starts at the cursor and wraps at ``width``; Enter moves below its last row,
    and whatever passes the bottom scrolls the screen up.
    """
    last = cursor_y + (cursor_x + len(line)) // max(1, width)
    scrolled = max(0, last + 1 - (height - 1))
    return max(0, cursor_y - scrolled)


def command_text(kind: ShellKind, command: str) -> str:
    """What we type for ``command``: itself, braced when it spans lines.

    Braces make a multi-line command one compound command, so the shell reads all of it
    before running any (one start marker, one end marker) on shells that would otherwise
    run it line by line. POSIX sh has no pre-exec hook, so a ``__atui_go;`` prefix prints
    the start marker once the whole line has been read.
    """
    text = command.strip("\n")
    if "\n" in text:
        text = "{ " + text + "\n}"
    if kind is ShellKind.SH:
        text = "__atui_go; " + text
    return text


MarkerKind = Literal["end", "go", "ps2", "in"]


@dataclass(frozen=True)
class Marker:
    nonce: str
    id: int
    exit_code: int | None
    """None for a start or continuation marker."""
    start: int
    """Byte offset in the scanned stream where the marker (with its OSC wrapping) begins."""
    end: int
    kind: MarkerKind = "end"
    cwd: str | None = None
    """An end marker's working directory (None: not sent, too long, or not valid UTF-8)."""

    @property
    def is_start(self) -> bool:
        return self.kind == "go"


def parse_marker(match: re.Match[bytes], offset: int = 0) -> Marker:
    tail = match.group(3)
    kind: MarkerKind = (
        "go" if tail == b"go" else "ps2" if tail == b"ps2" else "in" if tail == b"in" else "end"
    )
    return Marker(
        nonce=match.group(1).decode(),
        id=int(match.group(2)),
        exit_code=int(tail) if kind == "end" else None,
        start=offset + match.start(),
        end=offset + match.end(),
        kind=kind,
        cwd=decode_cwd(match.group(4)) if kind == "end" else None,
    )


def decode_cwd(hex_text: bytes | None) -> str | None:
    """The directory an end marker carries; None when absent or not a sane absolute path."""
    if not hex_text or len(hex_text) % 2:
        return None
    try:
        path = bytes.fromhex(hex_text.decode()).decode("utf-8", "surrogateescape")
    except ValueError:
        return None
    return path if path.startswith("/") and "\x00" not in path else None


def find_markers(data: bytes, nonce: str, start: int = 0) -> list[Marker]:
    """Every marker of ``nonce`` in ``data`` from byte ``start``."""
    return [
        marker
        for match in _MARKER.finditer(data, start)
        if (marker := parse_marker(match)).nonce == nonce
    ]


def strip_markers(text: str, nonce: str | None = None) -> str:
    """Remove marker text (and its OSC wrapping), keeping the lines.

    With ``nonce``, only that pane's markers go: a command that prints marker-like text
    of its own keeps it.
    """
    if "__ATUI_" not in text:
        return text
    if nonce is None:
        return _MARKER_TEXT.sub("", text)
    return _marker_text(nonce).sub("", text)


@functools.lru_cache(maxsize=64)
def _marker_text(nonce: str) -> re.Pattern[str]:
    return re.compile(r"(?:\x1b\]6973;)?__ATUI_" + re.escape(nonce) + _TEXT_BODY + r"\x07?")


# -- raw terminal output to text ---------------------------------------------------------------

_ESCAPE = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC … BEL/ST
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)"  # DCS, PM, APC, SOS … ST
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[ -/]*[0-~]"  # two/three-byte escapes (charset, keypad, save cursor)
)
_ERASE_LINE = re.compile(r"\x1b\[[012]?K")
_CONTROL = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]")


def terminal_text(raw: str) -> str:
    """What a program printed, as plain text: escapes dropped, ``\\r`` overwrites applied.

    Not a terminal emulator: carriage returns (progress bars), backspaces and erase-line are
    applied within a line, cursor motion and colours are dropped. That covers what
    non-interactive commands print; full-screen programs belong in ``tmux_capture_pane``.
    """
    raw = raw.replace("\r\n", "\n")
    raw = _ERASE_LINE.sub("\x00K", raw)  # keep erase-line as a token, drop other escapes
    raw = _ESCAPE.sub("", raw)
    if "\r" not in raw and "\b" not in raw and "\x00" not in raw:
        return _CONTROL.sub("", raw)
    return "\n".join(_render_line(line) for line in raw.split("\n"))


def _render_line(line: str) -> str:
    if "\r" not in line and "\b" not in line and "\x00" not in line:
        return _CONTROL.sub("", line)
    cells: list[str] = []
    column = 0
    index = 0
    while index < len(line):
        char = line[index]
        index += 1
        if char == "\r":
            column = 0
        elif char == "\b":
            column = max(0, column - 1)
        elif char == "\x00" and line.startswith("K", index):
            index += 1
            del cells[column:]
        elif char == "\t" or not _CONTROL.match(char):
            if column < len(cells):
                cells[column] = char
            else:
                cells.extend(" " * (column - len(cells)))
                cells.append(char)
            column += 1
    return "".join(cells)


# -- one command's stream ----------------------------------------------------------------------


@dataclass
class CommandStream:
    """The raw output of a pane from the moment a command was typed until its end marker.

    ``feed`` is called with every ``%output`` chunk of the pane; it finds the command's
    start marker (which fixes the command's id) and then the end marker with that id.
    Bytes are kept up to ``keep_limit``; beyond that the end marker is still looked for in
    a sliding window, and ``capped`` says the kept output is incomplete.
    """

    nonce: str
    keep_limit: int = 16 * 1024 * 1024
    data: bytearray = field(default_factory=bytearray)
    received: int = 0
    start: Marker | None = None
    end: Marker | None = None
    orphan_ends: int = 0
    """End markers seen before any start marker: prompts that did not run our command (an
    empty Enter, or our typed line discarded by a Ctrl-C that flushed the input)."""
    _scanned: int = 0
    _processed: int = 0
    """Markers starting before this offset were already looked at."""
    _streamed: int = 0
    _tail: bytes = b""
    _overflow: bytearray = field(default_factory=bytearray)
    """Bytes past ``keep_limit`` not yet taken by ``take_live``."""
    _decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )

    @property
    def done(self) -> bool:
        return self.end is not None

    @property
    def capped(self) -> bool:
        return self.received > len(self.data)

    def feed(self, chunk: bytes) -> None:
        if self.end is not None:
            return
        self.received += len(chunk)
        room = self.keep_limit - len(self.data)
        if room >= len(chunk):
            self.data += chunk
            self._scan()
            return
        if room > 0:
            self.data += chunk[:room]
            self._scan()
            if self.end is not None:
                return
            self._tail = bytes(self.data[-MAX_MARKER_BYTES:])
            chunk = chunk[room:]
        # Past the cap: look for the end marker in a sliding window only; what comes before
        # it still streams live (``_overflow``), so the person and the saved output see it.
        carried = len(self._tail)
        window = self._tail + chunk
        self._tail = window[-MAX_MARKER_BYTES:]
        for marker in find_markers(window, self.nonce):
            if self._accept(marker, placed=False):
                before = marker.start - carried
                if before >= 0:
                    self._overflow += chunk[:before]
                else:  # the marker began in the last read: its first bytes are not output
                    del self._overflow[max(0, len(self._overflow) + before) :]
                return
        self._overflow += chunk
        if len(self._overflow) > OVERFLOW_LIMIT:  # nobody reads it live: keep it bounded
            del self._overflow[: len(self._overflow) - OVERFLOW_LIMIT]

    def _scan(self) -> None:
        begin = max(0, self._scanned - MAX_MARKER_BYTES)
        self._scanned = len(self.data)
        for found in find_markers(bytes(self.data[begin:]), self.nonce):
            marker = Marker(
                found.nonce,
                found.id,
                found.exit_code,
                found.start + begin,
                found.end + begin,
                found.kind,
                found.cwd,
            )
            if marker.start < self._processed:
                continue
            self._processed = marker.end
            if self._accept(marker, placed=True):
                return

    def _accept(self, marker: Marker, *, placed: bool) -> bool:
        """Take a marker in stream order; True once the end marker is found."""
        if marker.kind == "ps2":
            return False  # our own multi-line command being read
        if self.start is None:
            if marker.is_start and placed:
                self.start = marker
                self._streamed = marker.end
            elif not marker.is_start:
                self.orphan_ends += 1
            return False
        if not marker.is_start and marker.id == self.start.id:
            unplaced = Marker(
                marker.nonce, marker.id, marker.exit_code, -1, -1, marker.kind, marker.cwd
            )
            self.end = marker if placed else unplaced
            return True
        return False

    def _output_end(self) -> int:
        if self.end is not None and self.end.start >= 0:
            return self.end.start
        return len(self.data)

    def take_live(self) -> str:
        """New complete output lines since the last call, as plain text (for live display)."""
        if self.start is None:
            return ""
        limit = self._output_end()
        if self.end is not None or self.received > len(self.data):
            cut = limit  # ended, or the rest follows past the cap (in ``_overflow``)
        else:
            newline = self.data.rfind(b"\n", self._streamed, limit)
            if newline < 0:
                return ""
            cut = newline + 1
        if cut <= self._streamed:
            return self._take_overflow()
        piece = bytes(self.data[self._streamed : cut])
        self._streamed = cut
        final = self.end is not None and not self._overflow
        text = self._decoder.decode(piece, final)
        return terminal_text(strip_markers(text, self.nonce)) + self._take_overflow()

    def _take_overflow(self) -> str:
        """Live text past the cap: whole lines, or everything once the end marker came."""
        if not self._overflow:
            return ""
        cut = len(self._overflow) if self.end is not None else self._overflow.rfind(b"\n") + 1
        if cut <= 0:
            return ""
        piece = bytes(self._overflow[:cut])
        del self._overflow[:cut]
        text = self._decoder.decode(piece, self.end is not None and not self._overflow)
        return terminal_text(strip_markers(text, self.nonce))

    def output(self) -> str:
        """The command's output so far (all of it once ``done``), as plain text."""
        if self.start is None:
            return ""
        raw = bytes(self.data[self.start.end : self._output_end()])
        return strip_markers(terminal_text(raw.decode("utf-8", "replace")), self.nonce)

    @property
    def exit_code(self) -> int | None:
        return self.end.exit_code if self.end is not None else None

    @property
    def cwd(self) -> str | None:
        """The shell's working directory once the command ended (None: unknown)."""
        return self.end.cwd if self.end is not None else None

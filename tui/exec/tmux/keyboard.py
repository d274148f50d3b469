"""tmux command lines that put a person's keyboard into a pane exactly as typed.

Control mode parses every line we write like a tmux config line: ``;`` ends a command,
``#`` starts a comment, ``{`` opens a block, ``$`` and ``~`` expand, and an argument that
starts with ``-`` is a flag (``--`` alone is eaten as the end of flags). So:

- typed text goes as bytes (``send-keys -H``): the parser only ever sees hex digits, so
  nothing typed can be taken for a separator, a flag or a variable, whatever tmux version
  reads the line;
- text the agent types (``send-keys -l``) and buffer contents (``set-buffer``) are quoted
  with ``quote`` and put behind ``--``, so a leading ``-`` is text, not a flag;
- a command the agent runs is pasted the same way, with ``-r`` (its newlines stay newlines)
  and Enter pressed after it (``command_lines``);
- a paste goes through a buffer and ``paste-buffer -p``: bracketed when the pane's program
  asked for bracketed paste, otherwise typed with each newline as Enter. Nothing in it is
  ever parsed by a shell on the way.
"""

from __future__ import annotations

from tui.exec.tmux.control import ControlClient, quote
from tui.exec.tmux.prompt import clear_input

HEX_CHUNK = 256
"""Bytes per ``send-keys -H`` line (three characters each on the command line)."""
TEXT_CHUNK = 1000
"""Characters per ``send-keys -l``/``set-buffer`` line: modest lines for tmux's parser."""

_BRACKETS = ("\x1b[200~", "\x1b[201~")


def chunks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters (never inside a code point)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def hex_lines(pane_id: str, data: bytes) -> list[str]:
    """``send-keys -H`` lines that deliver ``data`` to the pane byte for byte."""
    return [
        f"send-keys -t {pane_id} -H " + " ".join(f"{byte:02x}" for byte in data[i : i + HEX_CHUNK])
        for i in range(0, len(data), HEX_CHUNK)
    ]


def literal_lines(pane_id: str, text: str) -> list[str]:
    """``send-keys -l`` lines for ``text``, each argument behind ``--``."""
    return [f"send-keys -t {pane_id} -l -- {quote(chunk)}" for chunk in chunks(text, TEXT_CHUNK)]


def buffer_lines(buffer: str, text: str) -> list[str]:
    """``set-buffer`` lines that leave exactly ``text`` in ``buffer``."""
    return [
        f"set-buffer {'-a ' if index else ''}-b {buffer} -- {quote(chunk)}"
        for index, chunk in enumerate(chunks(text, TEXT_CHUNK))
    ]


def clean_paste(text: str) -> str:
    """A pasted text without bracket markers, so it cannot end the bracket and type the rest.

    Windows line ends become one newline, so a pasted line is one Enter, not two.
    """
    text = text.replace("\r\n", "\n")
    while any(marker in text for marker in _BRACKETS):
        for marker in _BRACKETS:
            text = text.replace(marker, "")
    return text


def paste_lines(pane_id: str, text: str, buffer: str) -> list[str]:
    """Lines that paste ``text`` into the pane as a person's terminal would.

    ``paste-buffer -p`` brackets the paste only when the pane's program asked for it
    (``#{pane_bracketed_paste}``); without ``-r`` each newline becomes a carriage return,
    which is what the Enter key sends. ``-d`` deletes the buffer once pasted.
    """
    text = clean_paste(text)
    if not text:
        return []
    return [*buffer_lines(buffer, text), f"paste-buffer -p -d -b {buffer} -t {pane_id}"]


def command_lines(pane_id: str, text: str, *, clear: bool = False) -> list[str]:
    """Lines that paste a command (bracketed if the program asked for it) and press Enter.

    ``clear`` first wipes what a person left unsent on the prompt line, so exactly ``text``
    runs, never their leftover glued in front of it.
    """
    buffer = f"atui-{pane_id.lstrip('%')}"
    lines = [clear_input(pane_id)] if clear else []
    lines += buffer_lines(buffer, text)
    if text:
        lines.append(f"paste-buffer -p -r -d -b {buffer} -t {pane_id}")
    lines.append(f"send-keys -t {pane_id} Enter")
    return lines


async def send_lines(client: ControlClient, lines: list[str]) -> None:
    """Send ``lines`` in one round trip; raises ``TmuxCommandError`` for the first refused."""
    for reply in await client.commands(lines):
        reply.check()


async def type_command(
    client: ControlClient, pane_id: str, text: str, *, clear: bool = False
) -> None:
    """Paste ``text`` into the pane and press Enter (``command_lines``)."""
    await send_lines(client, command_lines(pane_id, text, clear=clear))

"""The tmux backend's screens and keys, for the tools, the mirror and a person's take-over.

The capture tool reads a pane's text without our markers (``capture``); the mirror reads the
coloured screen with cursor and size in one round trip (``snapshot``). Keys come two ways:
the model's (``send_keys``: tmux key names, or literal text that passes the shared-shell guard
when it ends with Enter into a shell) and the person's own keyboard and pastes through the
mirror (``send_typed``: text as bytes, key names, pastes), which go to tmux as typed, without
guard or policy, because the person is at the keyboard.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tui.exec.backend import BackendError
from tui.exec.tmux.control import (
    Reply,
    hex_lines,
    literal_lines,
    paste_lines,
    quote,
    send_lines,
)
from tui.exec.tmux.guard import check_shared_shell
from tui.exec.tmux.markers import shell_or_wrapper, strip_markers
from tui.exec.tmux.panes import pane_status
from tui.exec.tmux.sessions import NONCE_OPTION, capture_flags
from tui.exec.tmux.shared import SharedShell
from tui.exec.tmux.shells import PaneShells
from tui.exec.tmux_pane import CaptureResult, NotOurs, PaneScreen, TypedKind
from tui.security.confinement import Confinement

_KEY_NAMES = {
    "enter", "escape", "tab", "btab", "space", "bspace", "up", "down", "left", "right",
    "home", "end", "pageup", "pgup", "ppage", "pagedown", "pgdn", "npage", "insert", "ic",
    "delete", "dc", "any",
}  # fmt: skip
_KEY = re.compile(r"^(?:[CMS]-)*(?:F(?:[1-9]|1[0-2])|KP[A-Za-z0-9]+|[A-Za-z]+|[!-~])$")
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def valid_key(name: str) -> bool:
    """True for tmux key names (``C-c``, ``Enter``, ``M-x``, ``F5``, ``Up``, ``q``)."""
    if not _KEY.match(name):
        return False
    base = re.sub(r"^(?:[CMS]-)*", "", name)
    return (
        len(base) == 1
        or base.lower() in _KEY_NAMES
        or bool(re.fullmatch(r"F(?:[1-9]|1[0-2])|KP[A-Za-z0-9]+", base))
    )


class PaneIO(SharedShell):
    """The tmux backend's screens and keys; see the module docstring."""

    async def capture(
        self,
        target: str | None = None,
        *,
        start: int | str | None = None,
        end: int | str | None = None,
        join_wrapped: bool = True,
        escape_sequences: bool = False,
        alternate: bool = False,
        preserve_trailing_spaces: bool = False,
        escape_non_printable: bool = False,
    ) -> CaptureResult:
        """The pane's text (visible screen by default; ``start=-200`` or ``"-"`` for history)."""
        notices = self._take_notices()
        await self.ensure_started(notices)
        pane_id = await self._capture_target(target, notices)
        client = await self._primary()
        args = ["capture-pane", "-p", "-t", pane_id]
        args += capture_flags(
            join_wrapped=join_wrapped,
            escape_sequences=escape_sequences,
            preserve_trailing_spaces=preserve_trailing_spaces,
            escape_non_printable=escape_non_printable,
            start=start,
            end=end,
        )
        nonce_query = f"display-message -p -t {pane_id} '#{{{NONCE_OPTION}}}'"
        first = " ".join([*args, "-a"]) if alternate else " ".join(args)
        screen, nonce = await client.commands([first, nonce_query])
        if screen.error and alternate:
            # Buddy's words, so a model or prompt written for Buddy recognises them.
            notices.append(
                f"alternate screen was not active; captured main pane instead (pane {pane_id})"
            )
            screen = (await client.commands([" ".join(args)]))[0]
        self._mark_used(pane_id)
        text = clean_capture(screen.check(), _first(nonce), keep_trailing=preserve_trailing_spaces)
        return CaptureResult(pane_id, text, notices)

    async def _capture_target(self, target: str | None, notices: list[str]) -> str:
        if target is not None:
            try:
                return await self.resolve_target(target)
            except NotOurs as error:
                pane = await self._shared_pane(notices)
                notices.append(f"{error.msg}; showing the shared pane {pane.pane_id} instead")
                return pane.pane_id
        return (await self._shared_pane(notices)).pane_id

    async def snapshot(self, pane_id: str) -> PaneScreen:
        """The visible screen with colours, cursor x/y and pane width/height (one round trip)."""
        client = await self._client_for(pane_id)
        screen, geometry = await client.commands(
            [
                f"capture-pane -p -e -N -t {pane_id}",
                f"display-message -p -t {pane_id} "
                "'#{cursor_x} #{cursor_y} #{pane_width} #{pane_height} "
                f"#{{{NONCE_OPTION}}}'",
            ]
        )
        fields = (geometry.check() or [""])[0].split()
        if len(fields) < 4 or not all(n.isdigit() for n in fields[:4]):
            raise NotOurs(f"pane {pane_id} is gone")
        numbers = [int(n) for n in fields[:4]]
        nonce = fields[4] if len(fields) > 4 else None
        lines = [strip_markers(line, nonce) for line in screen.check()]
        return PaneScreen(lines, *numbers)

    async def send_keys(
        self,
        target: str,
        keys: str | Sequence[str] = (),
        *,
        literal: bool = False,
        enter: bool = False,
        guard: bool = True,
        confinement: Confinement | None = None,
    ) -> str:
        """Send ``keys`` to ``target`` (never retargeted: a missing pane is an error).

        With ``literal`` the keys are text typed as is (``send-keys -l``, in modest
        chunks); otherwise each is a tmux key name (``C-c``, ``Enter``, ``Up``). ``enter``
        presses Enter last. With ``guard`` (the agent's keys, not the person's) typed text
        plus Enter into a shell passes the shared-shell guard, and the pane's walls must be no
        wider than ``confinement`` (None: what the mode lets run unasked): keys are commands
        too. Returns the pane id.
        """
        items = [keys] if isinstance(keys, str) else list(keys)
        if not literal:
            for key in items:
                if not valid_key(key):
                    raise BackendError(
                        f"{key!r} is not a tmux key name (examples: C-c, C-d, Enter, Escape, "
                        "Up, M-x, F5, q); send text as literal text instead"
                    )
        await self.ensure_started(self._notices)
        pane_id = await self.resolve_target(target)
        client = await self._client_for(pane_id)
        if guard and self._shells.active:
            pane = self._panes.get(pane_id)
            if pane is not None:
                walls = pane.confinement
            else:  # a pane running a program, not set up for commands: its tag says
                walls = await PaneShells.read_tag(await self._primary(), pane_id)
            self._shells.check(walls, confinement, pane_id)
        text = "".join(items) if literal else ""
        if text and enter and guard:
            status = await pane_status(client, pane_id)
            if status is not None and shell_or_wrapper(status.command):
                check_shared_shell(text)
        if literal:
            lines = literal_lines(pane_id, text)
        else:
            lines = [f"send-keys -t {pane_id} -- {quote(key)}" for key in items]
        if enter:
            lines.append(f"send-keys -t {pane_id} Enter")
        if lines:
            await send_lines(client, lines)
        self._mark_used(pane_id)
        return pane_id

    async def send_typed(self, pane_id: str, kind: TypedKind, data: str) -> None:
        """What the person typed in a take-over: text as its bytes (``send_input``), a key by
        its tmux name, a paste as their terminal would paste it. No guard, no policy."""
        if kind == "text":
            await self.send_input(pane_id, data.encode())
        elif kind == "paste":
            await self.paste(pane_id, data)
        else:
            await self.send_keys(pane_id, data, guard=False)

    async def send_input(self, pane_id: str, data: bytes) -> None:
        """Raw bytes from a person's keyboard to a pane (``send-keys -H``): no guard, no policy."""
        client = await self._client_for(pane_id)
        await send_lines(client, hex_lines(pane_id, data))

    async def paste(self, pane_id: str, text: str) -> None:
        """A person's paste into a pane, as their terminal would paste it: no guard, no policy.

        Bracketed when the pane's program asked for bracketed paste, otherwise typed with
        each newline as Enter (``control.paste_lines``).
        """
        client = await self._client_for(pane_id)
        await send_lines(client, paste_lines(pane_id, text, f"atui-keys-{pane_id.lstrip('%')}"))

    async def resize_pane(self, pane_id: str, columns: int, rows: int) -> None:
        """Give ``pane_id`` (and its window) ``columns`` x ``rows``: the size of the mirror box.

        ``resize-window`` makes the window's size manual, so no client's size overrides it;
        ``resize-pane`` matters only when the window holds other panes too.
        """
        if not re.fullmatch(r"%\d+", pane_id) or columns < 1 or rows < 1:
            raise BackendError(f"cannot resize {pane_id!r} to {columns}x{rows}")
        client = await self._client_for(pane_id)
        size = f"-x {int(columns)} -y {int(rows)}"
        window, _ = await client.commands(
            [f"resize-window -t {pane_id} {size}", f"resize-pane -t {pane_id} {size}"]
        )
        window.check()


def _first(reply: Reply) -> str | None:
    if reply.error or not reply.lines:
        return None
    return reply.lines[0].strip() or None


def clean_capture(lines: list[str], nonce: str | None, *, keep_trailing: bool = False) -> str:
    """Capture lines without our markers (marker-only lines dropped) or trailing blank lines.

    ``keep_trailing``: leave each line's trailing spaces (``capture-pane -N`` asked for them).
    """
    end = (lambda line: line) if keep_trailing else str.rstrip
    kept: list[str] = []
    for line in lines:
        if "__ATUI_" in line:
            stripped = strip_markers(line, nonce)
            if stripped == line:
                kept.append(end(line))
                continue
            if not _SGR.sub("", stripped).strip():
                continue  # a marker-only line (with -e, only its attributes are left)
            line = stripped
        kept.append(end(line))
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)

"""One tool call as a block: tool, full command or arguments, actor, risk, live output, verdict.

The block's border carries the header (what ran, where, how risky) and the footer (exit code,
duration); inside are the whole command — wrapped, never clipped — and a line-API tail of the
output. Collapsed shows the last few lines, expanded shows every line kept (at most the
``OutputBuffer`` cap, which the block states), and ``o`` opens the whole stream in a pager.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.reactive import var
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

from tui.diffs import plain
from tui.safe_text import dumps_or, loads_or
from tui.ui.cwd import printable
from tui.ui.diff_view import diff_text
from tui.ui.messages import ToolBlockAction
from tui.ui.selectable import highlight, selected_text
from tui.ui.tools.output import MAX_BYTES, MAX_LINES, OutputBuffer, human_bytes

Status = Literal["requested", "waiting", "running", "ok", "error", "denied", "cancelled"]
COLLAPSED_LINES = 5
DIFF_LINES_COLLAPSED = 12
"""Diff lines a collapsed block shows before folding the rest behind a count."""
DIFF_LINES_EXPANDED = 400
CROPPED_MARK = "\u203a"
"""Drawn at the right edge of an output line too wide for the block."""
COLLAPSED_COMMAND_LINES = 6
ERROR_PREVIEW_CHARS = 600
"""Of a failed call's message shown while the block is folded (enter shows it all)."""
ARGUMENT_PREVIEW_CHARS = 400

ICONS: dict[str, str] = {
    "requested": "◌",
    "waiting": "?",
    "running": "▶",
    "ok": "✓",
    "error": "✗",
    "denied": "⊘",
    "cancelled": "■",
}
RISK_STYLE = {
    "low": "$success",
    "medium": "$warning",
    "unknown": "bold $warning",
    "high": "bold $error",
}


@dataclass
class ToolCallState:
    """Everything the UI knows about one call; tests assert on this, not on pixels."""

    call_id: str
    tool_name: str
    loop_id: str = "main"
    arguments: dict[str, Any] | str = field(default_factory=dict)
    command: str | None = None
    actor: str | None = None
    sandbox: str | None = None
    """Where its command runs: ``sandbox: …``, ``OUTSIDE the sandbox`` or ``no sandbox: …``."""
    cwd: str | None = None
    """Where it runs (a shared shell's directory); None: the workspace."""
    cwd_elsewhere: bool = False
    cwd_after: str | None = None
    """Where the shared shell stands once it ended."""
    risk: str | None = None
    claimed_risk: str | None = None
    status: Status = "requested"
    started_ms: int | None = None
    duration_ms: float | None = None
    """The call's own time; the wait for approval is ``approval_wait_ms``, shown apart."""
    approval_wait_ms: float = 0.0
    exit_code: int | None = None
    error_type: str | None = None
    summary: str = ""
    error: str = ""
    """A failed call's whole message (a hook's reason for skipping it, too)."""
    truncated_chars: int = 0
    full_output_path: str | None = None
    cut_notes: list[str] = field(default_factory=list)
    """What the disk cap kept out of the tool's saved output (see ``ToolCallCompleted``)."""
    child_loop_id: str | None = None
    decision: str | None = None
    decision_message: str | None = None
    progress: float | None = None
    """The tool's latest progress report, 0..1 (None: it gave no fraction)."""
    progress_message: str = ""
    diff: str | None = None
    """The unified diff a file tool made: the block shows it in place of the output."""
    output: OutputBuffer = field(default_factory=OutputBuffer)

    @property
    def finished(self) -> bool:
        return self.status in ("ok", "error", "denied", "cancelled")

    @property
    def by_user(self) -> bool:
        return self.call_id.startswith("user-")

    def output_text(self) -> str:
        return self.output.text()

    @property
    def saved_cut(self) -> bool:
        """Some output is on no disk at all: a disk cap stopped a saved file."""
        spill = self.output.spill
        return bool(self.cut_notes) or (spill is not None and spill.capped)


def format_duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def progress_text(fraction: float | None, message: str, *, width: int = 10) -> str:
    """``▰▰▰▰▱▱▱▱▱▱ 42% · message``: a bar when the tool knows how far it is, its words when
    it says something; empty when it said nothing."""
    parts = []
    if fraction is not None:
        filled = round(max(0.0, min(1.0, fraction)) * width)
        parts.append(f"{'▰' * filled}{'▱' * (width - filled)} {fraction * 100:.0f}%")
    if message:
        parts.append(message)
    return " · ".join(parts)


def describe_arguments(arguments: dict[str, Any] | str, *, full: bool) -> str:
    """Arguments for a non-shell tool: ``key: value`` lines, long values cut unless ``full``."""
    if isinstance(arguments, str):
        parsed = loads_or(arguments) if arguments.strip() else {}
        if parsed is None:
            return arguments if full else arguments[:ARGUMENT_PREVIEW_CHARS]
        if not isinstance(parsed, dict):
            return arguments
        arguments = parsed
    lines = []
    for key, value in arguments.items():
        text = value if isinstance(value, str) else dumps_or(value, ensure_ascii=False)
        if not full and len(text) > ARGUMENT_PREVIEW_CHARS:
            text = text[:ARGUMENT_PREVIEW_CHARS] + f" … (+{len(text) - ARGUMENT_PREVIEW_CHARS})"
        lines.append(f"{key}: {text}")
    return "\n".join(lines) or "(no arguments)"


class ToolBlock(Widget, can_focus=True):
    """One call, drawn with the line API: ``enter``/``space`` expands, ``o`` opens the output,
    ``c``/``y`` copy the command/the output.

    One widget per call, not one per part: a session with hundreds of calls relayouts hundreds
    of widgets, not thousands. The content — the command (wrapped), the output tail, a stats
    line and notes — is built into strips once per change and cached; output lines keep their
    own strip cache, so a flood re-renders only the lines that are new. A change that keeps
    the block's height repaints it without relayouting the screen.
    """

    BINDINGS = [
        Binding("enter,space", "toggle_expanded", "Expand", show=False),
        Binding("o", "pager", "Full output", show=False),
        Binding("c", "copy('copy_command')", "Copy command", show=False),
        Binding("y", "copy('copy_output')", "Copy output", show=False),
    ]
    COMPONENT_CLASSES = {
        "tool-block--command",
        "tool-block--stderr",
        "tool-block--info",
        "tool-block--muted",
        "tool-block--note",
        "tool-block--warn",
    }

    expanded: var[bool] = var(False, toggle_class="-expanded")

    def __init__(
        self, state: ToolCallState, *, clock_ms: Callable[[], float] | None = None
    ) -> None:
        classes = "-child" if state.loop_id != "main" else ""
        if state.by_user:
            classes += " -user"
        super().__init__(classes=classes.strip())
        self.state = state
        self.clock_ms = clock_ms
        self._shown_status: str | None = None
        self._version = 0
        self._built: tuple[tuple[int, int], list[Strip]] | None = None
        self._height = -1
        self._command_cache: tuple[tuple[str, int, bool], list[Strip]] | None = None
        self._output_strips: LRUCache[tuple[str, str, int], Strip] = LRUCache(512)
        self._components: dict[str, Style] = {}
        self._base = Style()

    @property
    def limit(self) -> int:
        """How many output lines show: a few collapsed, everything kept when expanded."""
        return MAX_LINES if self.expanded else COLLAPSED_LINES

    def on_mount(self) -> None:
        self.sync(self.clock_ms() if self.clock_ms else None)

    # -- state to pixels -------------------------------------------------------------------

    def sync(self, now_ms: float | None = None) -> None:
        """Bring every part of the block up to date with ``state``."""
        state = self.state
        if self._shown_status != state.status:
            if self._shown_status is not None:
                self.remove_class(f"-{self._shown_status}")
            self.add_class(f"-{state.status}")
            self._shown_status = state.status
        self.border_title = self._title()
        self.border_subtitle = self._subtitle(now_ms)
        self._changed()

    def sync_output(self) -> None:
        """A frame that only brought output."""
        self._changed()

    def _changed(self) -> None:
        self._version += 1
        if not self.is_mounted:
            return
        width = self.size.width
        height = len(self._build(width)) if width > 0 else -1
        if height != self._height:
            self._height = height
            self.refresh(layout=True)
        else:
            self.refresh()

    def tick(self, now_ms: float) -> None:
        """Once a second while running: the elapsed time in the footer."""
        self.border_subtitle = self._subtitle(now_ms)

    # -- the line API ----------------------------------------------------------------------

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        height = len(self._build(width))
        self._height = height
        return height

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._build(width)
        if 0 <= y < len(lines):
            selected = highlight(lines[y], self.text_selection, y, self._selection_style())
            return selected.apply_offsets(0, y)  # where a mouse selection starts and ends
        return Strip.blank(width, self.rich_style)

    def _selection_style(self) -> Style:
        return self.screen.get_component_rich_style("screen--selection")

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected part of the block as drawn (command, output, stats)."""
        lines = self._build(self.size.width)
        return selected_text(selection, lambda y: lines[y].text.rstrip(), len(lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def _build(self, width: int) -> list[Strip]:
        key = (width, self._version)
        if self._built is not None and self._built[0] == key:
            return self._built[1]
        # Styles are looked up once per build: each lookup walks the DOM.
        self._base = self.rich_style
        lines: list[Strip] = []
        if width > 0:
            lines += self._command_strips(width)
            if self.state.diff is not None:
                lines += self._diff_strips(width)
            else:
                lines += self._output_lines(width)
            lines += self._wrapped(self._stats_text(), width, no_wrap=True)
            note = self._note_text()
            if note.plain:
                lines += self._wrapped(note, width)
        self._built = (key, lines)
        return lines

    def _wrapped(self, text: Text, width: int, *, no_wrap: bool = False) -> list[Strip]:
        base = self._base
        text.stylize_before(base)
        console = self.app.console
        if no_wrap:
            text.truncate(width, overflow="ellipsis")
            pieces = [text]
        else:
            pieces = list(text.wrap(console, width))
        strips = []
        for piece in pieces:
            strip = Strip(list(piece.render(console)), piece.cell_len)
            strips.append(strip.crop_extend(0, width, base))
        return strips

    def _component(self, name: str) -> Style:
        style = self._components.get(name)
        if style is None:
            style = self._components[name] = self.get_component_rich_style(name)
        return style

    def notify_style_update(self) -> None:
        # A state class changed (running → ok): colours may differ, rebuild everything.
        super().notify_style_update()
        self._components = {}
        self._output_strips.clear()
        self._command_cache = None
        self._built = None

    def _command_strips(self, width: int) -> list[Strip]:
        text = self._command_text()
        key = (text.plain, width, self.expanded)
        if self._command_cache is not None and self._command_cache[0] == key:
            return self._command_cache[1]
        text.stylize_before(self._component("tool-block--command"))
        strips = self._wrapped(text, width)
        self._command_cache = (key, strips)
        return strips

    def _diff_strips(self, width: int) -> list[Strip]:
        assert self.state.diff is not None
        limit = DIFF_LINES_EXPANDED if self.expanded else DIFF_LINES_COLLAPSED
        text = Text(self.state.summary)
        text.stylize(self._component("tool-block--muted"))
        text.append("\n")
        path = self.state.arguments.get("path") if isinstance(self.state.arguments, dict) else None
        text.append_text(diff_text(self.state.diff, path=str(path or ""), limit=limit))
        return self._wrapped(text, width)

    def _output_lines(self, width: int) -> list[Strip]:
        strips = []
        for stream, line in self.state.output.tail(self.limit):
            key = (stream, line, width)
            strip = self._output_strips.get(key)
            if strip is None:
                strip = self._output_strip(stream, line, width)
                self._output_strips[key] = strip
            strips.append(strip)
        return strips

    def _output_strip(self, stream: str, line: str, width: int) -> Strip:
        base = self._base
        muted = self._component("tool-block--muted")
        if "\x1b" in line:
            text = Text.from_ansi(line, no_wrap=True)
        else:
            text = Text(line.expandtabs(8), no_wrap=True)
        if stream != "stdout":
            text.stylize(self._component(f"tool-block--{stream}"))
        text.stylize_before(base + muted)
        segments = list(text.render(self.app.console))
        length = cell_len(text.plain)
        if length > width:
            strip = Strip(segments, length).crop(0, max(0, width - 1))
            return Strip([*strip, Segment(CROPPED_MARK, base + Style(dim=True))], width)
        return Strip(segments, length).extend_cell_length(width, base)

    def _title(self) -> str:
        state = self.state
        parts = [f"{ICONS[state.status]} [b]{_escape(state.tool_name)}[/b]"]
        if state.loop_id != "main":
            parts.insert(0, f"↳ {_escape(state.loop_id.rsplit('.', 1)[-1])}")
        if state.by_user:
            parts.insert(0, "you")
        if state.risk:
            style = RISK_STYLE.get(state.risk, "")
            badge = f"[{style}]risk {state.risk}[/]" if style else f"risk {state.risk}"
            parts.append(badge)
        if state.cwd:
            shown = _escape(printable(state.cwd))
            parts.append(f"[b $warning]in {shown}[/]" if state.cwd_elsewhere else f"in {shown}")
        if state.sandbox:
            parts.append(_sandbox_badge(state.sandbox))
        if state.actor:
            parts.append(_escape(state.actor))  # last: a narrow panel crops the actor first
        return " · ".join(parts)

    def _subtitle(self, now_ms: float | None) -> str:
        state = self.state
        if state.status == "waiting":
            return "[b $warning]waiting for your approval[/]"
        if state.status == "requested":
            return "queued"
        if state.status == "running":
            running = "running"
            if now_ms is not None and state.started_ms is not None:
                running = f"running {format_duration(max(0.0, now_ms - state.started_ms))}"
            progress = progress_text(state.progress, state.progress_message)
            return f"{running} · {_escape(progress)}" if progress else running
        bits = []
        if state.status == "denied":
            bits.append("[$error]denied[/]")
        elif state.status == "cancelled":
            bits.append("[$warning]cancelled[/]")
        elif state.exit_code is not None:
            style = "$success" if state.exit_code == 0 else "$error"
            bits.append(f"[{style}]exit {state.exit_code}[/]")
        elif state.status == "error":
            bits.append(f"[$error]{_escape(state.error_type or 'error')}[/]")
        if state.saved_cut:
            bits.append("[b $warning]output cut at the disk cap[/]")
        if state.duration_ms is not None:
            bits.append(format_duration(state.duration_ms))
        if state.approval_wait_ms >= 1:
            bits.append(f"waited {format_duration(state.approval_wait_ms)} for approval")
        if state.cwd_after and state.cwd_after != state.cwd:
            bits.append(f"[$warning]now in {_escape(printable(state.cwd_after))}[/]")
        return " · ".join(bits)

    def _command_text(self) -> Text:
        state = self.state
        if state.command is not None:
            body = state.command
            prefix = "$ "
        else:
            body = describe_arguments(state.arguments, full=self.expanded)
            prefix = ""
        lines = body.split("\n")
        text = Text(prefix, style="bold")
        if not self.expanded and len(lines) > COLLAPSED_COMMAND_LINES:
            shown = "\n".join(lines[:COLLAPSED_COMMAND_LINES])
            text.append(shown)
            text.append(
                f"\n… {len(lines) - COLLAPSED_COMMAND_LINES} more lines of the command "
                "(enter expands)",
                style="italic dim",
            )
        else:
            text.append(body)
        return text

    def _hidden_lines(self) -> int:
        return max(0, self.state.output.line_count() - self.limit)

    def _stats_text(self) -> Text:
        state = self.state
        out = state.output
        text = Text(no_wrap=True, overflow="ellipsis")
        if state.status in ("requested", "waiting"):
            text.append("not started", "dim")
            return text
        if not out.total_bytes:
            text.append("no output yet" if state.status == "running" else "no output", "dim")
            return text
        so_far = " so far" if state.status == "running" else ""
        lines = out.total_lines + (1 if out.partial else 0)
        text.append(f"{lines:,} line{'s' if lines != 1 else ''} · {human_bytes(out.total_bytes)}")
        text.append(so_far)
        if out.truncated:
            text.append(
                f" · kept the last {out.line_count():,} (cap {MAX_LINES:,} lines / "
                f"{human_bytes(MAX_BYTES)} per block)",
                "bold",
            )
        hidden = self._hidden_lines()
        if hidden and not self.expanded:
            text.append(" · enter more")
        if hidden or out.truncated:
            text.append(" · o all")
        text.stylize("dim")
        return text

    def _note_text(self) -> Text:
        state = self.state
        note = Text()

        def line(content: str, style: str = "") -> None:
            if note.plain:
                note.append("\n")
            note.append(content, style=style)

        if state.claimed_risk and state.risk and state.claimed_risk != state.risk:
            line(f"the model said risk {state.claimed_risk}; computed: {state.risk}", "dim")
        if state.decision in ("deny", "deny_with_message"):
            said = f": {state.decision_message}" if state.decision_message else ""
            line(f"denied by you{said}", "bold")
        hooked = state.status == "denied" and state.error_type == "hook"
        failed = state.status in ("error", "cancelled") and state.exit_code is None
        if (hooked or failed) and (state.error or state.summary):
            # The whole message, wrapped: the part a one-line summary cut is usually the fix.
            line(self._error_shown(state.error or state.summary), "italic")
        if state.truncated_chars:
            where = f"; in full: {state.full_output_path}" if state.full_output_path else ""
            line(f"the model saw a cut ({state.truncated_chars:,} chars left out){where}", "dim")
        for cut in state.cut_notes:
            line(cut, "bold")
        out = state.output
        if out.spilling and out.spill_path is not None:
            where = f"the block keeps the newest lines; all of them: {out.spill_path} (o)"
            if out.spill is not None and out.spill.capped:
                line(f"{where}, {out.spill.cut_note('which')}", "bold")
            else:
                line(where, "dim")
        if state.child_loop_id:
            line(f"sub-agent {state.child_loop_id.rsplit('.', 1)[-1]} ran this call's work", "dim")
        return note

    def _error_shown(self, error: str) -> str:
        """The error whole when expanded or short; else its start, cut at a space."""
        if self.expanded or len(error) <= ERROR_PREVIEW_CHARS:
            return error
        cut = error.rfind(" ", 0, ERROR_PREVIEW_CHARS)
        cut = cut if cut > ERROR_PREVIEW_CHARS // 2 else ERROR_PREVIEW_CHARS
        more = len(error) - cut
        return (
            f"{error[:cut]} … ({more:,} more characters: enter shows the whole error, o opens it)"
        )

    # -- keys ------------------------------------------------------------------------------

    def watch_expanded(self, expanded: bool) -> None:
        if self.is_mounted:
            self.sync(self.clock_ms() if self.clock_ms else None)

    def action_toggle_expanded(self) -> None:
        self.expanded = not self.expanded

    def action_pager(self) -> None:
        self.post_message(ToolBlockAction(self.state.call_id, "pager"))

    def action_copy(self, what: str) -> None:
        """``c``/``y``: the command or the output to the clipboard (the app sends it)."""
        self.post_message(ToolBlockAction(self.state.call_id, what))

    # -- the full output -------------------------------------------------------------------

    def output_source(self) -> tuple[str, Path | None, str]:
        """Where the whole output is: ``(text, path, description)``; text when kept whole."""
        if self.state.diff is not None:
            return plain(self.state.diff, limit=None), None, "the whole diff of the change"
        out = self.state.output
        if self.state.error and not out.total_bytes:
            return self.state.error, None, "the whole error message"
        if not out.truncated:
            return out.text(), None, "the whole output (kept in memory)"
        if out.spilling and out.spill_path is not None:
            what = f"the whole stream as the UI received it ({out.spill_path})"
            if out.spill is not None and out.spill.capped:
                what = (
                    f"the stream as the UI received it, up to the disk cap "
                    f"({out.spill_path}; the last {out.spill.dropped:,} bytes were not saved)"
                )
            return "", out.spill_path, what
        if self.state.full_output_path:
            path = Path(self.state.full_output_path)
            return "", path, f"the full output saved by the tool ({path})"
        return out.text(), None, "only the kept tail (the rest was not saved)"


def _sandbox_badge(label: str) -> str:
    """The walls of a command, loud when there are none."""
    if label.startswith("OUTSIDE"):
        return f"[b reverse $error]{_escape(label)}[/]"
    if label.startswith("no sandbox"):
        return f"[b $warning]{_escape(label.split(':', 1)[0])}[/]"
    return f"[dim]{_escape(label)}[/]"


def _escape(text: str) -> str:
    return text.replace("[", r"\[")

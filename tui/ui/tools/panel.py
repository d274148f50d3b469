"""The tool-event stream: one block per call, newest at the bottom, bounded.

A frame's chunks for the same call and stream are joined before they reach the block, so a
flood costs one append and one repaint per block per frame. Old finished blocks are pruned
with hysteresis (above ``PRUNE_ABOVE`` blocks, down to ``PRUNE_TO``); a block's own output is
bounded by its ``OutputBuffer``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.widgets import Static

from tui.safe_text import loads_or
from tui.spill import DEFAULT_DISK_CAP
from tui.ui.tail_follow import TailFollowing
from tui.ui.tools.block import ToolBlock, ToolCallState
from tui.ui.tools.host_rows import HostRows
from tui.ui.tools.output import OutputBuffer

if TYPE_CHECKING:
    from tui.events import (
        ApprovalRequested,
        ApprovalResolved,
        Event,
        FanoutHostUpdate,
        ToolCallCompleted,
        ToolCallRequested,
        ToolCallSkipped,
        ToolCallStarted,
        ToolOutputChunk,
        ToolProgress,
    )

PRUNE_ABOVE = 150
PRUNE_TO = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class EmptyHint(Static):
    """Shown until the first call."""


class ToolPanel(TailFollowing):
    """All tool blocks. ``apply`` takes one frame's events."""

    def __init__(
        self,
        *,
        spill_dir: Path | None = None,
        clock_ms: Callable[[], float] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.spill_dir = spill_dir
        self.spill_cap = DEFAULT_DISK_CAP
        """Bytes each block's spill file may hold (``[agent] output_disk_cap``)."""
        self.clock_ms = clock_ms
        self.blocks: dict[str, ToolBlock] = {}
        self.host_rows: dict[str, HostRows] = {}
        """A fan-out's per-host rows, mounted under its block."""
        self.pruned = 0
        self._hint: EmptyHint | None = None
        self._table: dict[type[Event], Callable[[Any], ToolBlock | None]] | None = None
        self._chunk_type: type[ToolOutputChunk] | None = None

    def on_mount(self) -> None:
        self._hint = EmptyHint("Tool calls appear here as they run: command, live output, exit.")
        self.mount(self._hint)

    # -- state -----------------------------------------------------------------------------

    def state(self, call_id: str) -> ToolCallState | None:
        block = self.blocks.get(call_id)
        return block.state if block else None

    @property
    def running(self) -> int:
        return sum(1 for block in self.blocks.values() if block.state.status == "running")

    def latest(self) -> ToolBlock | None:
        return next(reversed(self.blocks.values()), None) if self.blocks else None

    def _block(self, call_id: str, tool_name: str, loop_id: str) -> ToolBlock:
        block = self.blocks.get(call_id)
        if block is not None:
            return block
        spill = None
        if self.spill_dir is not None:
            spill = self.spill_dir / f"{_UNSAFE.sub('_', call_id)[:80]}.log"
        state = ToolCallState(
            call_id=call_id,
            tool_name=tool_name,
            loop_id=loop_id,
            output=OutputBuffer(spill_path=spill, spill_cap=self.spill_cap),
        )
        block = ToolBlock(state, clock_ms=self.clock_ms)
        self.blocks[call_id] = block
        if self._hint is not None:
            self._hint.remove()
            self._hint = None
        self.mount(block)
        return block

    # -- feeding ---------------------------------------------------------------------------

    def apply(self, events: list[Event], *, now_ms: float | None = None) -> None:
        touched: dict[str, ToolBlock] = {}
        output_only: set[str] = set()
        pending: list[ToolOutputChunk] = []

        def flush() -> None:
            # Join runs of chunks for one call and stream into one append.
            if not pending:
                return
            groups: dict[tuple[str, str], list[str]] = {}
            order: list[tuple[str, str, str, str]] = []
            for chunk in pending:
                key = (chunk.tool_call_id, chunk.stream)
                if key not in groups:
                    groups[key] = []
                    order.append((chunk.tool_call_id, chunk.stream, chunk.tool_name, chunk.loop_id))
                groups[key].append(chunk.text)
            for call_id, stream, tool_name, loop_id in order:
                block = self._block(call_id, tool_name, loop_id)
                block.state.output.append(stream, "".join(groups[(call_id, stream)]))
                if call_id not in touched:
                    output_only.add(call_id)
                touched.setdefault(call_id, block)
            pending.clear()

        chunk_type, handlers = self._handlers()
        for event in events:
            if isinstance(event, chunk_type):
                pending.append(event)
                continue
            flush()
            handler = handlers.get(type(event))
            block = handler(event) if handler is not None else None
            if block is not None:
                touched[block.state.call_id] = block
                output_only.discard(block.state.call_id)
        flush()
        for call_id, block in touched.items():
            if not block.is_mounted:
                continue
            if call_id in output_only:
                block.sync_output()
            else:
                block.sync(now_ms)
        if touched:
            self.content_changed()
        if len(self.blocks) > PRUNE_ABOVE:
            self.prune()

    def _handlers(
        self,
    ) -> tuple[type[ToolOutputChunk], dict[type[Event], Callable[[Any], ToolBlock | None]]]:
        """Output chunks' class (joined per frame, not handled one by one) and one handler per
        other event class a block shows. Made on the first events: the UI's first frame never
        waits for the event classes (or pydantic) to be imported."""
        if self._table is None or self._chunk_type is None:
            from tui.events import (
                ApprovalRequested,
                ApprovalResolved,
                FanoutHostUpdate,
                ToolCallCompleted,
                ToolCallRequested,
                ToolCallSkipped,
                ToolCallStarted,
                ToolOutputChunk,
                ToolProgress,
            )

            self._chunk_type = ToolOutputChunk
            self._table = {
                ToolCallRequested: self._requested,
                ApprovalRequested: self._approval_requested,
                ApprovalResolved: self._approval_resolved,
                ToolCallStarted: self._started,
                ToolProgress: self._progress,
                ToolCallSkipped: self._skipped,
                ToolCallCompleted: self._completed,
                FanoutHostUpdate: self._host_update,
            }
        return self._chunk_type, self._table

    def _requested(self, event: ToolCallRequested) -> ToolBlock | None:
        block = self._block(event.tool_call_id, event.tool_name, event.loop_id)
        state = block.state
        state.arguments = _parse_arguments(event.arguments)
        if isinstance(state.arguments, dict) and event.tool_name == "run_shell":
            command = state.arguments.get("command")
            state.command = command if isinstance(command, str) else state.command
        return block

    def _approval_requested(self, event: ApprovalRequested) -> ToolBlock | None:
        block = self._block(event.tool_call_id, event.tool_name, event.loop_id)
        state = block.state
        state.status = "waiting"
        state.arguments = dict(event.arguments)
        state.command = event.command if event.command is not None else state.command
        state.risk = event.risk or state.risk
        state.claimed_risk = event.claimed_risk
        state.actor = event.actor
        state.cwd, state.cwd_elsewhere = event.cwd, event.cwd_elsewhere
        state.sandbox = event.sandbox or state.sandbox
        return block

    def _approval_resolved(self, event: ApprovalResolved) -> ToolBlock | None:
        block = self.blocks.get(event.tool_call_id)
        if block is None:
            return None
        state = block.state
        state.decision = event.decision
        state.decision_message = event.message
        if event.decision in ("deny", "deny_with_message"):
            state.status = "denied"
        elif state.status == "waiting":
            state.status = "requested"
        return block

    def _started(self, event: ToolCallStarted) -> ToolBlock | None:
        block = self._block(event.tool_call_id, event.tool_name, event.loop_id)
        state = block.state
        state.status = "running"
        state.arguments = dict(event.arguments)
        state.command = event.command
        state.actor = event.actor
        state.cwd, state.cwd_elsewhere = event.cwd, event.cwd_elsewhere
        state.sandbox = event.sandbox
        state.risk = event.risk or state.risk
        state.started_ms = event.ts
        if isinstance(event.arguments.get("risk"), str):
            state.claimed_risk = event.arguments["risk"]
        return block

    def _progress(self, event: ToolProgress) -> ToolBlock | None:
        block = self.blocks.get(event.tool_call_id)
        if block is None or block.state.finished:
            return None
        block.state.progress = event.fraction
        block.state.progress_message = event.message
        return block

    def _skipped(self, event: ToolCallSkipped) -> ToolBlock | None:
        # A before-tool hook skipped it: it never ran, and this is its only end.
        block = self._block(event.tool_call_id, event.tool_name, event.loop_id)
        state = block.state
        state.status = "denied"
        state.error_type = "hook"
        state.summary = event.result.split("\n", 1)[0][:200]
        state.error = event.result
        state.output.close()
        return block

    def _completed(self, event: ToolCallCompleted) -> ToolBlock | None:
        block = self._block(event.tool_call_id, event.tool_name, event.loop_id)
        state = block.state
        if state.status != "denied":
            if event.error_type == "Cancelled":
                state.status = "cancelled"
            elif event.is_error:
                state.status = "error"
            else:
                state.status = "ok"
        state.duration_ms = event.duration_ms
        state.approval_wait_ms = event.approval_wait_ms
        state.exit_code = event.exit_code
        state.error_type = event.error_type
        state.summary = event.summary
        state.error = event.error
        state.truncated_chars = event.truncated_chars
        state.full_output_path = event.full_output_path
        state.cut_notes = list(event.cut_notes)
        state.child_loop_id = event.child_loop_id
        state.cwd_after = event.cwd
        state.diff = event.diff
        state.output.close()
        return block

    def _host_update(self, event: FanoutHostUpdate) -> ToolBlock | None:
        block = self.blocks.get(event.tool_call_id)
        if block is None:
            return None
        rows = self.host_rows.get(event.tool_call_id)
        if rows is None:
            rows = self.host_rows[event.tool_call_id] = HostRows(event.tool_call_id)
            self.mount(rows, after=block)
        rows.apply(event)
        return None

    def tick(self, now_ms: float) -> None:
        for block in self.blocks.values():
            if block.state.status == "running":
                block.tick(now_ms)

    def prune(self) -> int:
        """Remove the oldest finished blocks, down to ``PRUNE_TO``."""
        excess = len(self.blocks) - PRUNE_TO
        doomed = []
        for call_id, block in list(self.blocks.items()):
            if excess <= 0:
                break
            if block.state.finished:
                doomed.append(block)
                del self.blocks[call_id]
                excess -= 1
        if doomed:
            rows = [self.host_rows.pop(b.state.call_id, None) for b in doomed]
            self.remove_children([*doomed, *(r for r in rows if r is not None)])
            self.pruned += len(doomed)
        return len(doomed)

    def clear_blocks(self) -> None:
        self.blocks.clear()
        self.host_rows.clear()
        self.remove_children()
        self._hint = None
        self.reset_follow()


def _parse_arguments(raw: str) -> dict[str, object] | str:
    value = loads_or(raw) if raw.strip() else {}
    return value if isinstance(value, dict) else raw


if __name__ == "__main__":
    from textual.app import App, ComposeResult

    from tui.events import ToolCallCompleted, ToolCallRequested, ToolCallStarted, ToolOutputChunk
    from tui.locations import styles_dir

    class _Demo(App[None]):
        CSS_PATH = [str(styles_dir() / "app.tcss"), str(styles_dir() / "tools.tcss")]

        def compose(self) -> ComposeResult:
            yield ToolPanel()

        def on_mount(self) -> None:
            command = "ls -la && echo done >&2"
            self.query_one(ToolPanel).apply(
                [
                    ToolCallRequested(
                        tool_call_id="c1",
                        tool_name="run_shell",
                        arguments=json.dumps({"command": command}),
                    ),
                    ToolCallStarted(
                        tool_call_id="c1", tool_name="run_shell", command=command, risk="low"
                    ),
                    ToolOutputChunk(
                        tool_call_id="c1", tool_name="run_shell", stream="stdout", text="a\nb\nc\n"
                    ),
                    ToolOutputChunk(
                        tool_call_id="c1", tool_name="run_shell", stream="stderr", text="done\n"
                    ),
                    ToolCallCompleted(
                        tool_call_id="c1",
                        tool_name="run_shell",
                        is_error=False,
                        duration_ms=12,
                        exit_code=0,
                    ),
                ]
            )

    _Demo().run()

"""What of the bus goes into the session file: bounded by what the model saw.

The transcript keeps the conversation whole (every message is what the model read, already
bounded by each tool's truncation) and the events a resumed session replays. A command's live
output is another matter: a 2 GB output streamed as events would make a 2 GB session file
that takes minutes and gigabytes to resume, while the model only ever read its head and tail
and the whole of it is saved elsewhere (the full-output file, the block's spill file). So each
call's output events are kept up to ``OUTPUT_RECORD_LIMIT`` characters, and once the call
ends one line says how much more there was and where all of it is. Text deltas are left out:
the message they build is recorded whole; pane frames and fleet host states are a live
view (each host's part of a fan-out is already in its call's result).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.agent.transcript import Transcript
from tui.events import (
    AssistantTextDelta,
    Event,
    FleetHostState,
    PaneSnapshot,
    ToolCallCompleted,
    ToolCallStarted,
    ToolOutputChunk,
)

OUTPUT_RECORD_LIMIT = 64 * 1024
"""Characters of one call's live output kept in the session file (the model's view of it
is in the tool result message, and everything is in the saved full output)."""


@dataclass
class _Output:
    kept: int = 0
    left_out: int = 0
    tool_name: str = ""


@dataclass
class EventRecorder:
    """A bus listener writing what is worth keeping to ``transcript``; never raises for a
    full disk (the transcript keeps what waits, and says so)."""

    transcript: Transcript
    limit: int = OUTPUT_RECORD_LIMIT
    _outputs: dict[str, _Output] = field(default_factory=dict)

    def __call__(self, event: Event) -> None:
        if isinstance(event, PaneSnapshot | AssistantTextDelta | FleetHostState):
            return
        if isinstance(event, ToolCallStarted):
            self._outputs.pop(event.tool_call_id, None)  # ids repeat: a new call starts afresh
        elif isinstance(event, ToolOutputChunk):
            if not self._keep(event):
                return
        elif isinstance(event, ToolCallCompleted):
            self._close(event)
        if not self.transcript.closed:
            self.transcript.append_event(event)

    def _keep(self, event: ToolOutputChunk) -> bool:
        output = self._outputs.setdefault(event.tool_call_id, _Output(tool_name=event.tool_name))
        size = len(event.text)
        if output.left_out or output.kept + size > self.limit:
            output.left_out += size
            return False
        output.kept += size
        return True

    def _close(self, event: ToolCallCompleted) -> None:
        output = self._outputs.pop(event.tool_call_id, None)
        if output is None or not output.left_out or self.transcript.closed:
            return
        where = (
            f"; all of it is in {event.full_output_path}"
            if event.full_output_path
            else " (the tool's result holds what the model read)"
        )
        self.transcript.append_event(
            ToolOutputChunk(
                tool_call_id=event.tool_call_id,
                tool_name=output.tool_name,
                stream="info",
                text=(
                    f"\n[the session file keeps the first {output.kept:,} characters of this "
                    f"output; {output.left_out:,} more were shown live{where}]\n"
                ),
                loop_id=event.loop_id,
            )
        )


__all__ = ["OUTPUT_RECORD_LIMIT", "EventRecorder"]

"""What a running tool can reach: its identity, the cancel signal, the stream sink, the target."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tui.events import Event, Notice, ToolOutputChunk
from tui.safe_text import clean

if TYPE_CHECKING:
    from tui.exec.backend import ExecutionBackend, StreamName
    from tui.security.confinement import Confinement
    from tui.security.fleet_policy import FanoutPlan
    from tui.security.policy import SecurityPolicy

EventSink = Callable[[Event], None]
ProgressSink = Callable[[float | None, str], None]


def _ignore_event(event: Event) -> None:
    return None


def _ignore_progress(fraction: float | None, message: str) -> None:
    return None


@dataclass
class ToolContext:
    """Per-call context handed to ``Tool.execute``.

    ``on_update`` receives every event of the call (started, output chunks, completed): it is
    how the UI sees the whole output while the model gets the bounded one.
    """

    tool_call_id: str
    tool_name: str
    backend: ExecutionBackend
    policy: SecurityPolicy
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    on_update: EventSink = _ignore_event
    on_progress: ProgressSink = _ignore_progress
    loop_id: str = "main"
    secret_allowance: tuple[Path, ...] = ()
    """Secret paths the person approved for this one call; set by the registry on a copy
    of the context, so no other call ever sees it."""
    approved_diff: str | None = None
    """The diff a person approved for this one call (set like ``secret_allowance``): a file
    tool whose change came out different, because the file changed meanwhile, writes nothing."""
    hook_permission: Literal["allow", "ask"] | None = None
    """A PreToolUse hook's ``permissionDecision`` for this one call (never copied to a
    sibling): the policy weighs it after every hard refusal."""
    hook_permission_reason: str = ""
    cwd: str | None = None
    """Where the call was judged and approved to run: a shared shell's directory at that
    moment (None: the workspace). Relative paths resolve there even if the shell moves."""
    confinement: Confinement | None = None
    """The sandbox walls this call's command was approved for (set by the registry like
    ``secret_allowance``); None: the backend's default for the session's mode."""
    fanout: FanoutPlan | None = None
    """A fan-out's hosts as the policy approved them, each with its walls (set by the
    registry like ``confinement``)."""

    @property
    def workspace(self) -> Path:
        return self.policy.workspace

    def emit(self, stream: StreamName, text: str) -> None:
        if text:
            self.on_update(
                ToolOutputChunk(
                    tool_call_id=self.tool_call_id,
                    tool_name=self.tool_name,
                    stream=stream,
                    text=clean(text),  # a tool's bytes may not be valid Unicode
                    loop_id=self.loop_id,
                )
            )

    def notice(self, message: str, *, level: str = "warning") -> None:
        """Tell the person something about this call (a recreated pane, a cut drain)."""
        self.on_update(
            Notice(
                message=message,
                level="warning" if level != "info" else "info",
                loop_id=self.loop_id,
            )
        )

    def resolve_path(self, raw: str, *, write: bool = False) -> Path:
        """A checked absolute path (raises PermissionDenied when the policy forbids it)."""
        return self.policy.resolve_path(
            raw, write=write, allowance=self.secret_allowance, base=self.cwd
        )

    def for_call(self, tool_call_id: str, tool_name: str) -> ToolContext:
        """A sibling context for another call sharing backend, policy and sinks."""
        return ToolContext(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            backend=self.backend,
            policy=self.policy,
            cancel=self.cancel,
            on_update=self.on_update,
            on_progress=self.on_progress,
            loop_id=self.loop_id,
        )

"""The one error family: a base every agent-tui failure shares (callers show `title` and `msg`),
and the tool failures a model can read and act on, none of which ends the agent loop."""

from __future__ import annotations


class AgentTuiError(Exception):
    """Base of every error agent-tui raises on purpose.

    Args:
        msg: What went wrong and, where possible, what to do about it.
        title: A short heading for notifications.
    """

    title: str = "agent-tui error"

    def __init__(self, msg: str, *, title: str | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        if title is not None:
            self.title = title

    def __str__(self) -> str:
        return self.msg


class ToolError(AgentTuiError):
    """A tool call failed in a way the model should hear about, as an ``is_error`` result."""

    title = "Tool error"

    @property
    def kind(self) -> str:
        return type(self).__name__


class InvalidArguments(ToolError):
    """The arguments were not JSON, not an object, or did not fit the tool's schema."""

    title = "Invalid arguments"


class ExecutionFailed(ToolError):
    """The tool ran and failed (a non-zero exit is *not* this: it is a normal result)."""

    title = "Execution failed"


class NotFound(ToolError):
    """No such tool, file, pane or resource."""

    title = "Not found"


class PermissionDenied(ToolError):
    """The policy, a rule or the person refused the call."""

    title = "Permission denied"


class LimitReached(PermissionDenied):
    """A limit that bounds the agent (actions per hour, tmux sessions or panes) refused the
    call. Work the person may want done stopped here, so it is an error they see, and a
    headless run that met one does not exit 0."""

    title = "Limit reached"


class Cancelled(ToolError):
    """The user cancelled, steering skipped the call, or a timeout stopped it."""

    title = "Cancelled"


class Timeout(ToolError):
    """The call ran past its tool's time limit (``[agent] tool_timeout(s)``) and was cancelled."""

    title = "Timeout"

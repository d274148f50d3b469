"""What the app may ask of a session: ``SessionAPI``, methods only.

The full-screen app talks to one object, and this protocol is all it knows of it: no part
of the session (its loop, backend, provider, policy, settings, store, extensions) is named
here, only questions with plain answers (strings, flags, the records of ``tui.views``) and
requests. ``AgentSession`` is the one implementation; the import contracts keep ``tui.ui``
from importing it, so a widget that wants something new of the agent adds a method here and
there, never a reach into a part.

The pane the agent's commands run in is asked for the same way: whether there is one, its
frames, its size, the person's keys, the tmux session behind it, and the person's own pane.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from tui.views import TrustView

if TYPE_CHECKING:
    from tui.bus import Subscription
    from tui.events import ApprovalAnswer, Event
    from tui.views import GrantList, ImageAttachment, SessionInfo, UserCommand

DesktopKind = Literal["osc9", "osc777", "both", "off"]


@dataclass(frozen=True)
class NotifyChoice:
    """``[notify]``: how the app tells a person in another window that it needs them."""

    enabled: bool = True
    bell: bool = True
    desktop: DesktopKind = "osc9"
    min_turn_seconds: float = 10.0


@dataclass(frozen=True)
class Typed:
    """One thing the person typed into the pane, in the form the pane gets it."""

    kind: Literal["text", "key", "paste"]
    """``text`` (sent as bytes), ``key`` (one tmux key name) or ``paste``."""
    data: str
    """The text, the pasted text, or the key name (``Enter``, ``C-c``, ``M-f``, ``F5``)."""


class KeysNotSent(Exception):
    """A send failed; ``unsent`` is what did not reach the pane, the failed item first."""

    def __init__(self, error: Exception, unsent: list[Typed]) -> None:
        super().__init__(str(error))
        self.error = error
        self.unsent = unsent


@dataclass(frozen=True)
class PaneSession:
    """The tmux session holding the agent's shell, as ``/pane`` tells it."""

    name: str
    attach: str
    """The exact command that attaches another terminal to it."""
    kept: bool
    """It outlives the app (``/pane keep``)."""


class WorkspaceTrustView(TrustView, Protocol):
    """A workspace's trust as the app shows it: its files, what waits, and the verdict."""

    @property
    def trusted(self) -> bool:
        """The person trusts these very files: their settings apply."""

    @property
    def pending(self) -> bool:
        """Some settings of its files wait for trust."""


class SessionAPI(Protocol):
    """One session as the app sees it.

    Values the status bar and the banner show are read-only properties; everything else is a
    method. None hands out a part of the session.
    """

    # -- what it is ----------------------------------------------------------------------------

    @property
    def session_id(self) -> str: ...

    @property
    def workspace(self) -> Path:
        """The workspace, on the target (a remote path for a remote target)."""

    @property
    def actor(self) -> str:
        """Where commands run (``local``, ``ssh:host/tmux:%3``...), as the events name it."""

    @property
    def provider_name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def has_model(self) -> bool:
        """A model answers (False: no provider is configured, ``model_problem`` says why)."""

    @property
    def model_problem(self) -> str | None:
        """Why no model answers, in the words the banner shows."""

    @property
    def sandbox_status(self) -> str: ...

    @property
    def context_window(self) -> int | None: ...

    @property
    def has_history(self) -> bool: ...

    def startup_warnings(self) -> list[str]:
        """What building the session found, said before the app listened to its bus."""

    def config_path(self) -> Path:
        """The person's own config file (named in the banner and by ``/trust``)."""

    def output_disk_cap(self) -> int:
        """Bytes of one call's output the tool panel keeps on disk."""

    def notify_choice(self) -> NotifyChoice: ...

    # -- the bus -------------------------------------------------------------------------------

    def subscribe(self, name: str) -> Subscription: ...

    def unsubscribe(self, subscription: Subscription) -> None: ...

    # -- turns -----------------------------------------------------------------------------------

    @property
    def turn_busy(self) -> bool: ...

    @property
    def working(self) -> bool: ...

    @property
    def loop_running(self) -> bool: ...

    async def submit(self, prompt: str, images: Sequence[ImageAttachment] | None = None) -> object:
        """One turn; raises ``ProviderError`` when no model answers."""

    def steer(self, text: str) -> None: ...

    def cancel(self) -> bool: ...

    async def compact(self, focus: str = "") -> bool: ...

    async def undo(self, argument: str) -> str: ...

    async def session_diff(self) -> str: ...

    async def run_user_command(self, command: str) -> None: ...

    async def read_mentioned(self, raw: str) -> bytes: ...

    async def list_workspace_files(self) -> list[str]: ...

    # -- approvals ---------------------------------------------------------------------------------

    @property
    def answers_approvals(self) -> bool: ...

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> bool: ...

    def approve_once(self, request_id: str) -> bool: ...

    def cancel_approvals(self, reason: str) -> None: ...

    @property
    def grants(self) -> GrantList: ...

    # -- model and mode ------------------------------------------------------------------------

    def set_model(self, name: str) -> None: ...

    def model_choices(self) -> list[str]:
        """The current model first, then a few of its provider's family (``/model``)."""

    @property
    def approval_mode(self) -> str: ...

    @property
    def start_mode(self) -> str:
        """The approval mode the session was started in."""

    def approval_modes(self) -> list[str]: ...

    def set_approval_mode(self, name: str) -> None: ...

    # -- the workspace's trust -----------------------------------------------------------------

    def trust(self) -> WorkspaceTrustView: ...

    def untrusted_notice(self) -> str: ...

    async def trust_workspace(self) -> None: ...

    # -- commands, tools, extensions ------------------------------------------------------------

    def tool_table(self) -> list[tuple[str, str, bool]]: ...

    async def cron_report(self) -> str | None: ...

    async def skills_report(self) -> str: ...

    async def slash_commands(self) -> list[UserCommand]: ...

    async def expand_command(self, name: str, arguments: str) -> str | None: ...

    def init_prompt(self) -> str: ...

    def describe_extensions(self) -> str | None: ...

    def mcp_servers(self) -> list[str]: ...

    async def restart_extension(self, name: str) -> None: ...

    async def start_extensions(self) -> None: ...

    def start_scheduler(self) -> None: ...

    # -- saved sessions ----------------------------------------------------------------------------

    async def saved_sessions(self) -> list[SessionInfo]: ...

    async def saved_story(self) -> list[Event]: ...

    # -- the pane ----------------------------------------------------------------------------------

    def has_pane(self, host: str | None = None) -> bool:
        """The target (or the fleet's ``host``) runs commands in a tmux pane."""

    async def start_pane_mirror(self) -> None: ...

    def refresh_pane_mirror(self) -> None: ...

    async def stop_pane_mirror(self) -> None: ...

    async def resize_pane(self, pane_id: str, columns: int, rows: int) -> None: ...

    async def send_to_pane(self, host: str | None, pane_id: str, items: Sequence[Typed]) -> None:
        """What the person typed during a take-over, in order, to ``pane_id`` of the target (or
        of the fleet's ``host``): no shared-shell guard, no policy.

        Raises:
            KeysNotSent: a send failed; nothing after it was sent.
        """

    async def pane_session(self) -> PaneSession | None:
        """The tmux session of the agent's shell; None without one."""

    async def keep_pane(self, keep: bool) -> PaneSession | None:
        """Keep the tmux session past quitting (or not); None without one."""

    async def user_pane(self) -> str | None: ...

    # -- a fleet -------------------------------------------------------------------------------

    @property
    def fleet_hosts(self) -> list[str]: ...

    @property
    def default_host(self) -> str | None: ...

    def announce_fleet(self) -> None: ...

    async def start_fleet_mirrors(self) -> None: ...

    # -- the end -----------------------------------------------------------------------------------

    async def close_keeping_backend(self) -> None: ...

    async def aclose(self) -> None: ...


SessionFactory = Callable[[str | None], SessionAPI]
"""Builds a fresh (``None``) or resumed session on the same target: ``/clear``, ``/resume``."""
SessionOpener = Callable[[], Awaitable[tuple[SessionAPI, SessionFactory | None]]]
"""Builds the first session (after the app's first frame) and the factory for later ones.

Raises ``AgentTuiError`` (a bad config file, an unreachable host, an unknown session id) to end
the app with that message; its ``exit_code`` attribute, if any, is the exit status (else 2)."""
SettingsReload = Callable[[], Awaitable[None]]
"""Re-reads the settings, so that the factory's next session sees them (after ``/trust``)."""

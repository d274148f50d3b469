"""A backend with a tmux pane: what the tmux tools, the session and the mirror may ask of it.

``ExecutionBackend`` runs commands on any target. A backend that types them into a tmux pane a
person can watch and take over (``exec/tmux/``) answers this ``TmuxPane`` protocol too: its
panes, their screens and keys, the sessions and panes the tools manage, and the life of the
agent's own tmux session. ``tmux_pane`` is the one place that asks whether a backend has the
ability; everyone else receives a ``TmuxPane`` or None.

Beside the protocol stands what its calls speak: the names sessions and panes take, what a
listing or a capture returns, and the errors a caller maps (a pane that is not ours, a limit
reached, a command refused in the shared shell).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol, TypedDict, runtime_checkable

from tui.exec.backend import BackendError, ChunkSink, ExecResult, ExecutionBackend
from tui.security.confinement import Confinement

PREFIX = "atui-"
"""Every session agent-tui names starts with it, so ours stand out in ``tmux ls``."""

Direction = Literal["right", "below", "window"]
"""Where a new pane opens: a split to the right or below, or a window of its own."""
TypedKind = Literal["text", "key", "paste"]
"""What a person typed during a take-over: text, one tmux key name, or a paste."""

_PANE_ID = re.compile(r"%[0-9]+")


class NotOurs(BackendError):
    """A session or pane that does not exist or is not tagged with our owner."""

    title = "Not found"


class LimitReached(BackendError):
    """``[tmux] max_sessions`` or ``max_panes`` would be passed."""

    title = "tmux limit reached"


class ShellGuardError(BackendError):
    """The command would kill or hijack the shared shell; the message says what to do."""

    title = "Refused in the shared shell"


def canonical_session_name(name: str) -> str:
    """``build`` → ``atui-build``: tmux-safe characters, our prefix, at most 64 characters.

    Raises:
        ValueError: nothing usable is left of ``name``.
    """
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", name.strip()).strip("-")
    if not cleaned:
        raise ValueError(f"not a usable session name: {name!r}")
    if not cleaned.startswith(PREFIX):
        cleaned = PREFIX + cleaned
    return cleaned[:64]


def canonical_pane_name(name: str) -> str:
    """``"Web Server"`` → ``web-server``: the session rule without the prefix, 32 characters.

    Lower case, so ``pane="Worker"`` and ``pane="worker"`` find the same pane; never all digits
    or a ``%`` id, which ``pane=`` reads as an index or a pane id.

    Raises:
        ValueError: nothing usable is left of ``name``, or only digits.
    """
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", name.strip().lower()).strip("-")[:32]
    if not cleaned or cleaned.isdigit():
        raise ValueError(f"not a usable pane name: {name!r} (letters, digits, - and _)")
    return cleaned


def is_pane_id(target: str) -> bool:
    """``%3``: a pane id, as tmux writes them."""
    return bool(_PANE_ID.fullmatch(target))


@dataclass(frozen=True)
class SessionInfo:
    """One of our sessions, as ``list_sessions`` sees it."""

    id: str
    name: str
    windows: int
    attached: int
    is_default: bool = False
    """It is the shared session (where commands go when no pane is named)."""


@dataclass(frozen=True)
class PaneInfo:
    """One pane of our sessions, as ``list_panes`` sees it."""

    pane_id: str
    session: str
    window_index: int
    pane_index: int
    command: str
    width: int
    height: int
    dead: bool
    path: str
    is_default: bool = False
    """It is the shared pane."""
    name: str = ""
    """Its name from ``tmux_create_pane name=…`` (canonical), empty when it has none."""

    @property
    def address(self) -> str:
        return f"{self.session}:{self.window_index}.{self.pane_index}"


@dataclass
class CaptureResult:
    """A pane's captured text, and what the person and the model should know about it."""

    pane_id: str
    text: str
    notices: list[str] = field(default_factory=list)


class CaptureOptions(TypedDict, total=False):
    """How a pane is captured (``capture-pane``'s flags): ``start``/``end`` are ``"-"`` (the
    history's start, the screen's end) or line numbers (0 the screen's top, negative ones
    reach into the history)."""

    join_wrapped: bool
    escape_sequences: bool
    preserve_trailing_spaces: bool
    escape_non_printable: bool
    start: int | str | None
    end: int | str | None


class PaneScreen(NamedTuple):
    """The visible screen with its colours (SGR sequences kept), the cursor and the size."""

    lines: list[str]
    cursor_x: int
    cursor_y: int
    width: int
    height: int


@runtime_checkable
class TmuxPane(Protocol):
    """A backend whose commands run in tmux panes a person can watch and take over.

    Targets are a pane id (``%3``), one of our session names (its active pane) or
    ``session:window.pane``; only panes of sessions tagged with our owner are ever reached,
    and a target that names none of them raises ``NotOurs``.
    """

    @property
    def actor(self) -> str:
        """Who runs the commands, with the shared pane: ``ssh:host/tmux:%3``."""
        ...

    @property
    def host(self) -> ExecutionBackend:
        """The backend of the machine the panes live on (this one, a container, an SSH host):
        what runs a command or starts a process without typing into a pane."""
        ...

    @property
    def default_session(self) -> str:
        """The shared session's name (canonical)."""
        ...

    @property
    def default_pane(self) -> str | None:
        """The shared pane; None before the first start."""
        ...

    @property
    def last_pane(self) -> str | None:
        """The pane the agent acted on last (what the mirror follows)."""
        ...

    @property
    def allow_user_pane_capture(self) -> bool:
        """``[tmux] allow_user_pane_capture``: the person lets the agent read their own pane."""
        ...

    def pane_actor(self, pane_id: str) -> str:
        """Who runs what is typed into ``pane_id``: ``local/tmux:%5``."""
        ...

    def sandbox_label(self, pane_id: str | None = None) -> str | None:
        """The walls the shell of ``pane_id`` (default: the shared pane) runs in; None: no
        sandbox is in play."""
        ...

    # -- commands -------------------------------------------------------------------------

    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        on_chunk: ChunkSink | None = None,
        cancel: asyncio.Event | None = None,
        confinement: Confinement | None = None,
        target: str | None = None,
        expect_cwd: str | None = None,
    ) -> ExecResult:
        """``ExecutionBackend.run`` in the shared pane or ``target``; see ``TmuxBackend.run``.

        ``expect_cwd``: where the command was approved; a shell that moved since (a person's
        ``cd``) gets nothing typed (BackendError). On timeout the command is left running.

        Raises:
            ShellGuardError: the command would end or hijack the shared shell.
            NotOurs: ``target`` names no pane of ours.
            BackendError: the pane is busy, gone or running another program.
        """
        ...

    async def dispatch(
        self,
        command: str,
        *,
        target: str | None = None,
        cwd: str | None = None,
        expect_cwd: str | None = None,
        confinement: Confinement | None = None,
    ) -> tuple[str, list[str]]:
        """Type ``command`` and return at once: ``(pane id, notices)``. Raises as ``run``."""
        ...

    async def start(self) -> list[str]:
        """Connect, starting tmux and the shared pane if need be; the notices it produced."""
        ...

    async def refresh_sandbox(self) -> list[str]:
        """Restart the shared pane's shell if the approval mode's walls changed; what was said."""
        ...

    # -- panes: their screens and keys ------------------------------------------------------

    async def resolve_target(self, target: str) -> str:
        """The pane id of ours ``target`` names. Raises NotOurs."""
        ...

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
        """The pane's text without our markers (visible screen by default; ``start=-200`` or
        ``"-"`` reach into the history). A ``target`` that is not ours falls back to the shared
        pane, with a notice: looking is harmless."""
        ...

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
        """The model's keys to ``target`` (never elsewhere: a missing pane is NotOurs): tmux
        key names, or text with ``literal``; Enter last with ``enter``. Returns the pane id.

        Raises:
            ShellGuardError: typed text with Enter would end or hijack a shell.
            BackendError: not a key name, or the pane's walls are wider than ``confinement``.
        """
        ...

    async def send_typed(self, pane_id: str, kind: TypedKind, data: str) -> None:
        """What the person typed in a take-over, to the pane as they typed it: text as its
        bytes, a key by its tmux name, a paste bracketed if the program asked for it. No
        guard and no policy: the person is at the keyboard."""
        ...

    async def snapshot(self, pane_id: str) -> PaneScreen:
        """The visible screen with colours, the cursor and the size (one round trip)."""
        ...

    async def resize_pane(self, pane_id: str, columns: int, rows: int) -> None:
        """Give ``pane_id`` (and its window) ``columns`` x ``rows``: the mirror box's size."""
        ...

    def add_output_listener(
        self, pane_id: str, listener: Callable[[bytes], None]
    ) -> Callable[[], None]:
        """Call ``listener`` with every raw output chunk of ``pane_id``; returns the remover."""
        ...

    def add_use_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(pane_id)`` whenever the agent acts on another pane; the remover."""
        ...

    def add_gone_listener(self, listener: Callable[[str, str], None]) -> Callable[[], None]:
        """Call ``listener(pane_id, why)`` when a pane goes with its session or tmux server;
        the remover."""
        ...

    # -- the sessions and panes the tools manage --------------------------------------------

    async def list_sessions(self) -> list[SessionInfo]:
        """Our sessions, the shared one included."""
        ...

    async def list_panes(self, session: str | None = None) -> list[PaneInfo]:
        """The panes of our sessions (or of ``session``), in tmux's order."""
        ...

    async def create_session(
        self, name: str, *, cwd: str | None = None, pane_name: str | None = None
    ) -> tuple[str, str]:
        """A new session with one shell pane ready for commands: ``(session, pane id)``.
        Raises LimitReached, or BackendError when the name is taken."""
        ...

    async def kill_session(self, name: str) -> str:
        """Kill one of the sessions the tools made (never the shared one); its name."""
        ...

    async def create_pane(
        self,
        *,
        session: str | None = None,
        target: str | None = None,
        direction: Direction = "below",
        cwd: str | None = None,
        name: str | None = None,
    ) -> str:
        """A new shell pane: ``target`` (or ``session``'s active pane) split, or a window.
        ``name`` (canonical) must be new in that session. Raises LimitReached."""
        ...

    async def kill_pane(self, target: str) -> str:
        """Kill one of our panes (never the shared one); its id."""
        ...

    # -- the agent's own session --------------------------------------------------------------

    def attach_command(self) -> str:
        """What a person types in another terminal to watch or join the agent's session."""
        ...

    async def is_kept(self) -> bool:
        """The session stays after quit (``/pane keep``, ``[tmux] keep_session``)."""
        ...

    async def set_kept(self, kept: bool) -> None:
        """Keep the session after quit (the next start in this workspace takes it back)."""
        ...


def tmux_pane(backend: ExecutionBackend) -> TmuxPane | None:
    """``backend`` as a ``TmuxPane`` when it has the ability, else None."""
    return backend if isinstance(backend, TmuxPane) else None

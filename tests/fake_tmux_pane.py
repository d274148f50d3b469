"""A fake ``TmuxPane`` for the app's tests and pictures: a target the app takes for one with a
tmux pane (an SSH host's, say) where no tmux server runs, recording what the person types.

Only where a real pane cannot serve: the pictures show a remote host's pane that does not
exist, and the take-over tests assert exactly which keys left the app. Commands run on this
machine as ``LocalBackend`` runs them; everything else the protocol offers answers "nothing
here" (no pane yet, no sessions) or refuses, never pretends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tui.exec.backend import BackendError, ChunkSink, ExecResult
from tui.exec.local import LocalBackend
from tui.exec.tmux_pane import (
    CaptureResult,
    Direction,
    PaneInfo,
    PaneScreen,
    SessionInfo,
    TypedKind,
)
from tui.security.confinement import Confinement

if TYPE_CHECKING:
    from tui.exec.tmux_pane import TmuxPane

NO_TMUX = "a fake pane: there is no tmux server behind it"


class FakeTmuxPane(LocalBackend):
    """Looks like a backend with a tmux pane; ``typed`` holds ``(pane id, kind, data)``."""

    def __init__(self, workspace: Path, actor: str = "local/tmux:%7") -> None:
        super().__init__(default_cwd=str(workspace))
        self._actor = actor
        self.typed: list[tuple[str, TypedKind, str]] = []
        self.default_session = "atui-fake"
        self.allow_user_pane_capture = False

    @property
    def actor(self) -> str:
        return self._actor

    @property
    def host(self) -> LocalBackend:
        """Commands run here, on this machine, as ``LocalBackend`` runs them."""
        return self

    @property
    def default_pane(self) -> str | None:
        return None

    @property
    def last_pane(self) -> str | None:
        return None

    def pane_actor(self, pane_id: str) -> str:
        return self._actor

    def sandbox_label(self, pane_id: str | None = None) -> str | None:
        return None

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
        if target is not None:
            raise BackendError(NO_TMUX)
        return await super().run(
            command,
            cwd=cwd,
            env=env,
            timeout=timeout,
            on_chunk=on_chunk,
            cancel=cancel,
            confinement=confinement,
        )

    async def dispatch(
        self,
        command: str,
        *,
        target: str | None = None,
        cwd: str | None = None,
        expect_cwd: str | None = None,
        confinement: Confinement | None = None,
    ) -> tuple[str, list[str]]:
        raise BackendError(NO_TMUX)

    async def start(self) -> list[str]:
        return []

    async def refresh_sandbox(self) -> list[str]:
        return []

    async def resolve_target(self, target: str) -> str:
        raise BackendError(NO_TMUX)

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
        raise BackendError(NO_TMUX)

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
        raise BackendError(NO_TMUX)

    async def send_typed(self, pane_id: str, kind: TypedKind, data: str) -> None:
        self.typed.append((pane_id, kind, data))

    async def snapshot(self, pane_id: str) -> PaneScreen:
        raise BackendError(NO_TMUX)

    async def resize_pane(self, pane_id: str, columns: int, rows: int) -> None:
        return None

    def add_output_listener(
        self, pane_id: str, listener: Callable[[bytes], None]
    ) -> Callable[[], None]:
        return lambda: None

    def add_use_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        return lambda: None

    def add_gone_listener(self, listener: Callable[[str, str], None]) -> Callable[[], None]:
        return lambda: None

    async def list_sessions(self) -> list[SessionInfo]:
        return []

    async def list_panes(self, session: str | None = None) -> list[PaneInfo]:
        return []

    async def create_session(
        self, name: str, *, cwd: str | None = None, pane_name: str | None = None
    ) -> tuple[str, str]:
        raise BackendError(NO_TMUX)

    async def kill_session(self, name: str) -> str:
        raise BackendError(NO_TMUX)

    async def create_pane(
        self,
        *,
        session: str | None = None,
        target: str | None = None,
        direction: Direction = "below",
        cwd: str | None = None,
        name: str | None = None,
    ) -> str:
        raise BackendError(NO_TMUX)

    async def kill_pane(self, target: str) -> str:
        raise BackendError(NO_TMUX)

    def attach_command(self) -> str:
        return "tmux attach -t =atui-fake"

    async def is_kept(self) -> bool:
        return False

    async def set_kept(self, kept: bool) -> None:
        return None


if TYPE_CHECKING:
    _IS_A_TMUX_PANE: type[TmuxPane] = FakeTmuxPane
    """mypy holds the fake to ``TmuxPane``, member by member."""

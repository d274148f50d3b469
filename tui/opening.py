"""One way in: the session of a run, opened from the command line's flags.

The app, a headless ``-p`` run and ``agent-tui tools``/``tool`` all open their session here,
the same steps in the same order: the settings (from the workspace, or this machine's cwd
when the target is elsewhere), the workspace's trust (the app asks), the target the flags
chose (``tui.targets.target_choice``), then the session on it (``tui.wiring``). What differs
between them is said once, in ``Run``. A failure at any step is a ``StartupError`` carrying
its one-line reason and exit code; nothing opened before it is left running.

Import-light, as ``tui.cli`` is: the app is built (and paints) before any of the session's
rooms are imported; they load when ``Opening.open`` runs, in a thread where they can.
"""

from __future__ import annotations

import argparse
import asyncio
import enum
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tui.cli_args import EXIT_FAILED, EXIT_USAGE, PICK, load

if TYPE_CHECKING:
    from tui.agent.transcript import SessionStore
    from tui.bus import EventBus
    from tui.config import LoadedSettings
    from tui.security.approval import Approver
    from tui.security.trust import WorkspaceTrust
    from tui.session import AgentSession
    from tui.targets import Target, TargetChoice


class Run(enum.Enum):
    """What a session is opened for, and so how."""

    APP = "app"
    """A person watches: tmux by default where the target has it, approvals asked in the
    app, checkpoints for ``/undo``."""
    HEADLESS = "headless"
    """``-p``: approvals asked on the terminal if there is one (else refused), tmux only
    with ``--tmux``."""
    TOOL = "tool"
    """``agent-tui tools``/``tool``: one call by hand, no model, nothing saved."""


class Opening:
    """The sessions of one run on one target: the first, then one per ``/clear``,
    ``/resume`` or ``/trust`` on the same target.

    Args:
        workspace: The workspace (a folder on the target when it is remote).
        args: The parsed flags.
        choice: The target they chose.
        run: What the session is for.
        approval_mode: The mode of a ``tool`` run (its own ``--approval-mode``).
    """

    def __init__(
        self,
        workspace: Path,
        args: argparse.Namespace,
        choice: TargetChoice,
        run: Run,
        *,
        approval_mode: str | None = None,
    ) -> None:
        self.workspace = workspace
        self.args = args
        self.choice = choice
        self.run = run
        self.approval_mode = approval_mode
        self.ask_trust: Callable[[WorkspaceTrust], Awaitable[bool]] | None = None
        """Asks the person whether to trust the workspace's files (the app's trust screen)."""
        self.loaded: LoadedSettings | None = None
        """The settings the next session is built with."""
        self.target: Target | None = None
        self._scratch: str | None = None

    def _load(self) -> LoadedSettings:
        # In a thread: these imports (pydantic models, the command parser, providers) are
        # most of the start-up time and must not hold the app's first frame back.
        from tui.config import ConfigError
        from tui.session import StartupError

        try:
            return load(self.choice.settings_folder(self.workspace), self.args, self.approval_mode)
        except ConfigError as error:
            raise StartupError(error.msg, EXIT_USAGE) from None

    async def reload_settings(self) -> None:
        """After ``/trust``: the next session reads the settings as they now apply."""
        self.loaded = await asyncio.to_thread(self._load)

    @staticmethod
    def _warm_start(wanted: bool) -> None:
        """Keep ``tui.warm``'s on/off mark in step with the person's config. The variable
        ``AGENT_TUI_AGENT__WARM_START`` is this run's alone: it changes nothing for others."""
        from tui.warm.place import switched_off, turn_off, turn_on

        if not switched_off(os.environ):
            (turn_on if wanted else turn_off)(os.environ)

    async def open(self) -> AgentSession:
        """Settings, trust, target, session: the first session of the run.

        Raises:
            StartupError: bad settings (exit 2), an unreachable target (1), an unknown
                ``--resume`` id or a bad ``--json-schema`` (2), a session file in use (1).
        """
        if self.choice.remote:
            from tui.agent.providers.ahead import hold_back

            hold_back("commands run elsewhere")
        loaded = await asyncio.to_thread(self._load)
        from tui.exec.backend import BackendError
        from tui.fleet_target import open_chosen
        from tui.session import StartupError, trust_workspace, untrusted_notice

        if (
            loaded.trust.pending
            and self.ask_trust is not None
            and await self.ask_trust(loaded.trust)
        ):
            await asyncio.to_thread(trust_workspace, loaded)
            loaded = await asyncio.to_thread(self._load)
        self.loaded = loaded
        if not loaded.settings.agent.send_ahead:
            from tui.agent.providers.ahead import turn_off

            turn_off()
        self._warm_start(loaded.settings.agent.warm_start)
        interactive = self.run is Run.APP
        try:
            target = await open_chosen(
                self.choice, loaded.settings, self.workspace, interactive=interactive
            )
        except BackendError as error:
            raise StartupError(error.msg, EXIT_FAILED) from None
        self.target = target
        args = self.args
        resume = getattr(args, "resume", None)
        session = await self._build(
            None if resume in (None, PICK) else resume,
            continue_latest=bool(getattr(args, "continue_latest", False)),
        )
        # Said before anyone listened to the session's bus: shown (or printed) from there.
        session.add_warnings(target.notices)
        if loaded.trust.pending and self.run is Run.APP:
            session.add_warnings([untrusted_notice(loaded.trust)], first=True)
        return session

    def next(self, resume: str | None) -> AgentSession:
        """A new (``None``) or resumed session on the same target (a ``SessionFactory``)."""
        return self._session(resume)

    async def _build(self, resume: str | None, *, continue_latest: bool) -> AgentSession:
        from tui.agent.record_file import SessionBusy
        from tui.agent.transcript import SessionNotFound, TranscriptError
        from tui.session import StartupError
        from tui.tools.structured_output import JsonSchemaError

        assert self.loaded is not None
        try:
            return self._session(resume, continue_latest=continue_latest)
        except (SessionNotFound, JsonSchemaError) as error:
            await self._close_target()
            raise StartupError(schema_error(self.loaded, self.args, error), EXIT_USAGE) from None
        except (SessionBusy, TranscriptError) as error:
            await self._close_target()
            raise StartupError(error.msg, EXIT_FAILED) from None

    def _session(self, resume: str | None, *, continue_latest: bool = False) -> AgentSession:
        """A session of this run on the target: the only place one is built."""
        from tui.wiring import build_session

        run, target, loaded = self.run, self.target, self.loaded
        assert target is not None and loaded is not None  # opened first
        mode = self.approval_mode or loaded.settings.approval.mode.value
        return build_session(
            target.workspace,
            loaded,
            approver_factory=None if run is Run.APP else _terminal(target.workspace, mode),
            resume=resume,
            continue_latest=continue_latest,
            target=target,
            checkpoints=run is Run.APP,  # /undo
            with_model=run is not Run.TOOL,
            store=self._scratch_store() if run is Run.TOOL else None,
        )

    def _scratch_store(self) -> SessionStore:
        """A ``tool`` run saves nothing: its record goes to a folder removed at the end."""
        from tui.agent.transcript import SessionStore
        from tui.scratch import private_folder

        if self._scratch is None:
            self._scratch = private_folder("tool")
        return SessionStore(Path(self._scratch))

    async def _close_target(self) -> None:
        if self.target is not None:
            await self.target.backend.close()
            if self.target.sandbox is not None:
                await self.target.sandbox.close()

    def forget_scratch(self) -> None:
        """Remove a ``tool`` run's scratch record (after its session is closed)."""
        from tui.scratch import remove_private_folder

        if self._scratch is not None:
            remove_private_folder(self._scratch)
            self._scratch = None


def _terminal(workspace: Path, mode: str) -> Callable[[EventBus], Approver]:
    """Who answers approvals with no app: the person's terminal, or no one (``approver_for``)."""
    from tui.headless import approver_for

    return lambda bus: approver_for(workspace, mode)


def schema_error(loaded: LoadedSettings, args: argparse.Namespace, error: Exception) -> str:
    """A schema file named in a config file is a config error at that file's line."""
    from tui.tools.structured_output import JsonSchemaError

    if isinstance(error, JsonSchemaError) and not getattr(args, "json_schema", None):
        return loaded.error_at("agent.json_schema", str(error)).msg
    return str(error)

"""The ``agent-tui`` command. Kept import-light: ``--version`` must not load Textual.

Headless contract (scripts rely on it):
``agent-tui -p PROMPT [--provider openai|openai-responses|anthropic] [--model M] [--base-url URL]
[--approval-mode read-only|ask|auto-edit|full-auto] [--workspace DIR]
[--output-format text|json|stream-json] [--max-turns N] [--json-schema FILE]`` prints the final
answer, one JSON object, or every bus event as a JSON line, and exits 0 — or non-zero with a
one-line reason. With ``--json-schema`` the answer is JSON matching the schema (the ``json``
object carries it as ``structured_output``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.cli_args import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_MAX_TURNS,
    EXIT_OK,
    EXIT_USAGE,
    PICK,
    app_prompt,
    build_parser,
    fail,
    headless_prompt,
    is_remote,
    load,
    parse_args,
)
from tui.startup_gc import hold as hold_collector

if TYPE_CHECKING:
    from tui.claude_stream import RunFacts
    from tui.config import LoadedSettings
    from tui.exec.backend import ExecutionBackend
    from tui.security.trust import WorkspaceTrust
    from tui.session import AgentSession, SessionFactory
    from tui.targets import Target
    from tui.ui.app import AgentApp


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "completion":
        from tui.cli_config import completion_command

        return completion_command(args.shell)
    from tui.security.own_environ import hold_provider_keys, warn

    warn(hold_provider_keys())  # before any child exists: none may read the model's key
    start_log()
    if getattr(args, "ssh", None):
        from tui.exec.ssh.target import SSHTarget

        try:
            for host in args.ssh:
                SSHTarget.parse(host)
        except ValueError as error:
            return fail(f"--ssh: {error}", EXIT_USAGE)
    remote = is_remote(args)
    workspace = args.workspace if remote and args.workspace else (args.workspace or Path.cwd())
    workspace = workspace if remote else workspace.resolve()
    if not remote and not workspace.is_dir():
        return fail(f"workspace {workspace} is not a folder", EXIT_USAGE)
    if args.command == "tools":
        from tui.cli_tool import list_tools

        return list_tools(workspace, args)
    if args.command == "tool":
        from tui.cli_tool import run_tool

        return asyncio.run(run_tool(workspace, args))
    if args.command == "sessions":
        return list_sessions(workspace)
    if args.command == "trust":
        return trust_command((args.dir or workspace).resolve(), revoke=args.revoke)
    if args.command == "config":
        return show_config(workspace, args)
    prompt = headless_prompt(args)
    if prompt is not None:
        if args.max_turns is not None and args.max_turns < 1:
            return fail("--max-turns must be at least 1", EXIT_USAGE)
        if args.resume == PICK:
            return fail("--resume needs a session id with -p (agent-tui sessions lists them)", 2)
        if not prompt.strip():
            return fail("-p needs a prompt: as its value, or piped in on stdin", EXIT_USAGE)
        return asyncio.run(run_headless(workspace, prompt, args))
    return run_app(workspace, args)


def start_log() -> None:
    """The app's own errors to ``logs/agent-tui.log`` in the data folder (``tui.app_log``)."""
    from tui.app_log import start_log as start
    from tui.locations import data_dir
    from tui.security.own_environ import provider_key_values

    start(data_dir() / "logs", provider_key_values)


def show_config(workspace: Path, args: argparse.Namespace) -> int:
    """``agent-tui config``: the settings in effect here, and where each came from."""
    from tui.cli_config import config_command
    from tui.config import ConfigError
    from tui.security.own_environ import process_environ

    try:
        loaded = load(workspace, args)
    except ConfigError as error:
        return fail(error.msg, EXIT_USAGE)
    return config_command(loaded, process_environ(), everything=args.all)


def trust_command(workspace: Path, *, revoke: bool) -> int:
    """``agent-tui trust [DIR]``: list what the workspace's files change, then record trust."""
    from tui.config import ConfigError, load_settings
    from tui.security.trust import revoke_trust
    from tui.session import trust_workspace

    if not workspace.is_dir():
        return fail(f"workspace {workspace} is not a folder", EXIT_USAGE)
    try:
        loaded = load_settings(workspace, trust=False)
    except ConfigError as error:
        return fail(error.msg, EXIT_USAGE)
    trust = loaded.trust
    if revoke:
        gone = revoke_trust(loaded.user_config_path, trust.key)
        print(f"{'no longer trusted' if gone else 'was not trusted'}: {trust.key}")
        return EXIT_OK
    if not trust.files:
        print(f"nothing to trust: {trust.key} has no .agent-tui.toml or .mcp.json")
        return EXIT_OK
    print(trust.report())
    trust_workspace(loaded)
    print(f"trusted {trust.key} in {loaded.user_config_path} (a changed file asks again)")
    return EXIT_OK


async def run_headless(workspace: Path, prompt: str, args: argparse.Namespace) -> int:
    from tui.agent.record_file import SessionBusy
    from tui.agent.transcript import SessionNotFound, TranscriptError
    from tui.config import ConfigError
    from tui.events import Notice
    from tui.exec.backend import BackendError
    from tui.fleet_target import open_chosen, target_choice
    from tui.headless import HeadlessPrinter, approver_for, describe_outcome
    from tui.tools.structured_output import JsonSchemaError
    from tui.wiring import build_session

    try:
        # A remote workspace names a folder there: settings come from this machine's cwd.
        loaded = load(Path.cwd() if is_remote(args) else workspace, args)
    except ConfigError as error:
        return fail(error.msg, EXIT_USAGE)
    try:
        choice = target_choice(args, args.tmux)
        target = await open_chosen(choice, loaded.settings, workspace, interactive=False)
    except BackendError as error:
        return fail(error.msg, EXIT_FAILED)
    workspace = target.workspace
    try:
        session = build_session(
            workspace,
            loaded,
            approver_factory=lambda bus: approver_for(
                workspace, loaded.settings.approval.mode.value
            ),
            resume=args.resume,
            continue_latest=args.continue_latest,  # -c
            backend=target.backend,
            local_paths=target.local_paths,
            target_home=target.home,
            sandbox=target.sandbox,
            commands=target.commands,
            unsandboxed=target.unsandboxed,
            fleet=target.fleet,
        )
    except (SessionNotFound, JsonSchemaError) as error:
        await target.backend.close()
        return fail(schema_error(loaded, args, error), EXIT_USAGE)
    except (SessionBusy, TranscriptError) as error:
        await target.backend.close()
        return fail(error.msg, EXIT_FAILED)
    if loaded.trust.pending:
        print(f"agent-tui: {loaded.trust.summary()}", file=sys.stderr)
    printer = HeadlessPrinter(args.output_format)
    session.bus.add_listener(printer)
    for warning in session.warnings:
        # Published while the session was built, before the printer listened: a workspace
        # file loosening approvals or adding hooks must be seen in headless runs too.
        printer(Notice(message=warning, level="warning"))
    for notice in target.notices:
        printer(Notice(message=notice, level="warning"))
    try:
        if session.loop is None:
            reason = session.provider_error or "no model provider configured"
            where = f"the [provider] section of {loaded.user_config_path}"
            return fail(f"{reason} Or configure {where}.", EXIT_USAGE)
        loop = asyncio.get_running_loop()
        interrupts = 0

        def on_signal() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1:
                os._exit(EXIT_CANCELLED)
            assert session.loop is not None
            session.loop.cancel()

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signum, on_signal)
        await session.start_extensions()
        printer.begin(run_facts(session))
        session.watch_messages(printer.message)
        outcome = await session.submit(prompt)
        printer.finish(describe_outcome(outcome, session))
    finally:
        await session.aclose()
    if session.transcript.unsaved:
        transcript = session.transcript
        return fail(
            f"the session file {transcript.path} is missing {transcript.unsaved} record(s): "
            f"they could not be written ({transcript.problem}); resuming it continues from "
            "the last one saved"
        )
    if outcome.reason == "completed" and outcome.limits:
        from tui.headless import limits_message

        return fail(limits_message(outcome.limits))
    if outcome.reason == "completed":
        return EXIT_OK
    if outcome.reason == "max_turns":
        return fail(f"stopped after {outcome.turns} turns (--max-turns)", EXIT_MAX_TURNS)
    if outcome.reason == "cancelled":
        return fail("cancelled", EXIT_CANCELLED)
    return fail(outcome.error or (printer.errors[-1] if printer.errors else "the run failed"))


def schema_error(loaded: LoadedSettings, args: argparse.Namespace, error: Exception) -> str:
    """A schema file named in a config file is a config error at that file's line."""
    from tui.tools.structured_output import JsonSchemaError

    if isinstance(error, JsonSchemaError) and not getattr(args, "json_schema", None):
        return loaded.error_at("agent.json_schema", str(error)).msg
    return str(error)


def run_facts(session: AgentSession) -> RunFacts:
    from tui.claude_stream import RunFacts

    return RunFacts(
        session_id=session.session_id,
        cwd=str(session.workspace),
        model=session.model,
        provider=session.provider_name,
        tools=list(session.registry.names()),
        approval_mode=session.approval_mode,
    )


def run_app(workspace: Path, args: argparse.Namespace) -> int:
    """``agent-tui`` with no prompt: paint first, then settings, target and session."""
    try:
        app = make_app(workspace, args)
    except ImportError:
        build_parser().print_help()
        return EXIT_USAGE
    app.run()
    return int(app.return_code or 0)


def make_app(workspace: Path, args: argparse.Namespace, **options: Any) -> AgentApp:
    """The app for ``agent-tui`` with no prompt, its session opened after the first frame.

    The target follows ``--ssh``/``--container``/``--tmux`` as in headless mode, except that
    tmux is used by default when the target has it (a person is watching: the pane mirror and
    take-over need it). A bad config file or an unknown ``--resume`` id ends the app with exit
    code 2, an unreachable target with 1, each with the same one-line reason as headless mode.
    """
    from tui.locations import data_dir
    from tui.ui.app import AgentApp

    opening = AppSessions(workspace, args)
    options.setdefault("history_path", data_dir() / "prompt-history.jsonl")
    options.setdefault("state_path", data_dir() / "ui-state.json")  # the theme chosen
    options.setdefault("prompt", app_prompt(args))  # agent-tui "fix the tests"
    options.setdefault("pick_session", getattr(args, "resume", None) == PICK)  # -r alone
    app = AgentApp(builder=opening.open, **options)
    opening.ask_trust = app.ask_trust
    app.reload_settings = opening.reload_settings
    return app


class AppSessions:
    """The app's sessions, built from the flags: the first after the first frame, then one per
    ``/clear``, ``/resume`` or ``/trust`` on the same target.

    Args:
        workspace: The workspace (a folder on the target when remote).
        args: The parsed flags.
    """

    def __init__(self, workspace: Path, args: argparse.Namespace) -> None:
        self.workspace = workspace
        self.args = args
        self.loaded: LoadedSettings | None = None
        """The settings the next session is built with."""
        self.ask_trust: Callable[[WorkspaceTrust], Awaitable[bool]] | None = None
        """Asks the person whether to trust the workspace's files (the app's trust screen)."""
        self._target: Target | None = None

    def _load(self) -> LoadedSettings:
        # In a thread: these imports (pydantic models, the command parser, providers) are
        # most of the start-up time and must not hold the first frame back.
        from tui.config import ConfigError
        from tui.session import StartupError

        args = self.args
        try:
            return load(Path.cwd() if is_remote(args) else self.workspace, args)
        except ConfigError as error:
            raise StartupError(error.msg) from None

    async def reload_settings(self) -> None:
        """After ``/trust``: the next session reads the settings as they now apply."""
        self.loaded = await asyncio.to_thread(self._load)

    async def open(self) -> tuple[AgentSession, SessionFactory]:
        """The first session and the factory of the later ones (a ``SessionOpener``)."""
        loaded = await asyncio.to_thread(self._load)
        from tui.session import StartupError, trust_workspace, untrusted_notice

        if (
            loaded.trust.pending
            and self.ask_trust is not None
            and await self.ask_trust(loaded.trust)
        ):
            await asyncio.to_thread(trust_workspace, loaded)
            loaded = await asyncio.to_thread(self._load)
        self.loaded = loaded
        from tui.agent.record_file import SessionBusy
        from tui.agent.transcript import SessionNotFound, TranscriptError
        from tui.exec.backend import BackendError
        from tui.fleet_target import open_chosen, target_choice
        from tui.tools.structured_output import JsonSchemaError
        from tui.wiring import build_session

        args = self.args
        choice = target_choice(args, getattr(args, "tmux", None))
        try:
            target = await open_chosen(choice, loaded.settings, self.workspace, interactive=True)
        except BackendError as error:
            raise StartupError(error.msg, exit_code=1) from None
        self._target = target
        try:
            session = build_session(
                target.workspace,
                loaded,
                resume=None if getattr(args, "resume", None) in (None, PICK) else args.resume,
                continue_latest=bool(getattr(args, "continue_latest", False)),
                backend=target.backend,
                local_paths=target.local_paths,
                target_home=target.home,
                sandbox=target.sandbox,
                commands=target.commands,
                unsandboxed=target.unsandboxed,
                fleet=target.fleet,
                checkpoints=True,  # /undo
            )
        except (SessionNotFound, JsonSchemaError) as error:
            await target.backend.close()
            raise StartupError(schema_error(loaded, args, error)) from None
        except (SessionBusy, TranscriptError) as error:
            await target.backend.close()
            raise StartupError(error.msg, exit_code=1) from None
        # Published before the app listened: shown when the session is attached.
        session.warnings.extend(target.notices)
        if loaded.trust.pending:
            session.warnings.insert(0, untrusted_notice(loaded.trust))
        return session, self.session_on

    def session_on(self, resume: str | None, backend: ExecutionBackend) -> AgentSession:
        """A new (``None``) or resumed session on ``backend`` (a ``SessionFactory``)."""
        from tui.wiring import build_session

        target, loaded = self._target, self.loaded
        assert target is not None and loaded is not None  # opened first
        return build_session(
            target.workspace,
            loaded,
            resume=resume,
            backend=backend,
            local_paths=target.local_paths,
            target_home=target.home,
            sandbox=target.sandbox,
            commands=target.commands,
            unsandboxed=target.unsandboxed,
            fleet=target.fleet,
            checkpoints=True,
        )


def list_sessions(workspace: Path) -> int:
    from tui.agent.transcript import SessionStore, format_session_table

    infos = SessionStore().list(workspace)
    if not infos:
        print(f"no saved sessions for {workspace}")
        return EXIT_OK
    print(format_session_table(infos))
    return EXIT_OK


def console() -> None:
    """The ``agent-tui`` command: ``main``, then out at once.

    By the time ``main`` returns the session is closed, the transcript written and the
    terminal restored; what is left is the interpreter tearing down hundreds of modules,
    0.2-0.4 s nobody waits for. Files still queued for disk and the standard streams are
    flushed first, then the process ends without that teardown. The garbage collector is held
    back until the first session is built (``tui.startup_gc``).
    """
    hold_collector()
    code = main()
    from tui.spill import SPILL

    SPILL.flush(2.0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing left to say there
            pass
    os._exit(code)


if __name__ == "__main__":
    console()

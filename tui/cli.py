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

from tui.cli_args import PICK, app_prompt, build_parser, headless_prompt, parse_args

if TYPE_CHECKING:
    from tui.claude_stream import RunFacts
    from tui.config import LoadedSettings
    from tui.exec.backend import ExecutionBackend
    from tui.security.approval import Approver
    from tui.security.trust import WorkspaceTrust
    from tui.session import AgentSession, SessionFactory
    from tui.targets import Target
    from tui.tools.base import Tool
    from tui.ui.app import AgentApp

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_MAX_TURNS = 3
EXIT_CANCELLED = 130


def fail(reason: str, code: int = EXIT_FAILED) -> int:
    """One line on stderr, then the exit code: the contract for every failure."""
    print(f"agent-tui: {' '.join(reason.split())}", file=sys.stderr)
    return code


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
            SSHTarget.parse(args.ssh)
        except ValueError as error:
            return fail(f"--ssh: {error}", EXIT_USAGE)
    remote = bool(getattr(args, "ssh", None) or getattr(args, "container", None))
    workspace = args.workspace if remote and args.workspace else (args.workspace or Path.cwd())
    workspace = workspace if remote else workspace.resolve()
    if not remote and not workspace.is_dir():
        return fail(f"workspace {workspace} is not a folder", EXIT_USAGE)
    if args.command == "tools":
        return list_tools(workspace, args)
    if args.command == "tool":
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


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "provider": {"name": args.provider, "model": args.model, "base_url": args.base_url},
        "approval": {"mode": args.approval_mode},
        "agent": {
            "max_turns": args.max_turns,
            "json_schema": str(args.json_schema.resolve()) if args.json_schema else None,
        },
    }


def load(workspace: Path, args: argparse.Namespace) -> LoadedSettings:
    """Settings for this run; the workspace's own loosening settings only when trusted."""
    from tui.config import load_settings

    overrides = overrides_from(args)
    if args.provider and not args.model:
        # A provider chosen on the command line brings its own default model, rather than
        # inheriting a model name of another provider from a config file.
        from tui.config import default_model

        overrides["provider"]["model"] = default_model(args.provider)
    trust = True if getattr(args, "trust_workspace", False) else None
    from tui.config.provider_choice import choose_provider
    from tui.security.own_environ import process_environ

    return choose_provider(
        load_settings(workspace, overrides=overrides, trust=trust), process_environ()
    )


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
    from tui.headless import HeadlessPrinter
    from tui.session import describe_outcome
    from tui.targets import TargetChoice, open_target
    from tui.tools.structured_output import JsonSchemaError
    from tui.wiring import build_session

    try:
        # A remote workspace names a folder there: settings come from this machine's cwd.
        remote = bool(args.ssh or args.container)
        loaded = load(Path.cwd() if remote else workspace, args)
    except ConfigError as error:
        return fail(error.msg, EXIT_USAGE)
    choice = TargetChoice(ssh=args.ssh, container=args.container, tmux=args.tmux)
    try:
        target = await open_target(choice, loaded.settings, workspace, interactive=False)
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
        from tui.session import limits_message

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


def approver_for(workspace: Path, mode: str) -> Approver:
    """Who answers approvals with no app: the person on the controlling terminal when there
    is one (``/dev/tty``, never stdin), else no one — every request then fails closed with a
    message naming ``--approval-mode``."""
    from tui.headless import TerminalApprover, has_terminal
    from tui.security.approval import NoApprover

    if has_terminal():
        return TerminalApprover(workspace, mode)
    return NoApprover("no UI and no TTY to ask (headless mode with no terminal)")


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
        remote = bool(getattr(args, "ssh", None) or getattr(args, "container", None))
        try:
            return load(Path.cwd() if remote else self.workspace, args)
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
        from tui.targets import TargetChoice, open_target
        from tui.tools.structured_output import JsonSchemaError
        from tui.wiring import build_session

        args = self.args
        choice = TargetChoice(
            ssh=getattr(args, "ssh", None),
            container=getattr(args, "container", None),
            tmux=getattr(args, "tmux", None),
        )
        try:
            target = await open_target(choice, loaded.settings, self.workspace, interactive=True)
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


async def cli_target(workspace: Path, args: argparse.Namespace) -> tuple[LoadedSettings, Target]:
    """The settings and the target of ``agent-tui tools`` and ``agent-tui tool``: the one the
    flags name (``--ssh``, ``--container``, ``--tmux``), as a session would open it.

    Raises:
        ConfigError: bad settings.
        BackendError: the target cannot be reached (the command then refuses, saying why).
    """
    from tui.targets import TargetChoice, open_target

    remote = bool(args.ssh or args.container)
    loaded = load(Path.cwd() if remote else workspace, args)
    choice = TargetChoice(ssh=args.ssh, container=args.container, tmux=bool(args.tmux))
    return loaded, await open_target(choice, loaded.settings, workspace, interactive=False)


def cli_tools(loaded: LoadedSettings, target: Target) -> list[Tool[Any]]:
    """The tool set of ``agent-tui tools`` and ``agent-tui tool``: the agent's own
    (``session.agent_tools``) for a session on ``target`` — its tmux tools on a tmux target."""
    from tui.tools.builtin.cron import cron_tools
    from tui.tools.builtin.cron_store import CronStore
    from tui.tools.builtin.memory import MemoryScope
    from tui.wiring import agent_tools

    workspace = target.workspace
    local = target.local_paths
    memory = MemoryScope(
        str(workspace) if local else f"{target.backend.actor}:{workspace}",
        loaded.trust.trusted,
    )
    return agent_tools(
        loaded.settings,
        target.backend,
        workspace if local and loaded.trust.trusted else None,  # its skills wait for trust
        cron_tools(CronStore()),
        memory=memory,
    )


def list_tools(workspace: Path, args: argparse.Namespace) -> int:
    return asyncio.run(_list_tools(workspace, args))


async def _list_tools(workspace: Path, args: argparse.Namespace) -> int:
    from tui.config import ConfigError
    from tui.exec.backend import BackendError

    try:
        loaded, target = await cli_target(workspace, args)
    except ConfigError as error:
        return fail(error.msg, EXIT_USAGE)
    except BackendError as error:
        return fail(error.msg, EXIT_FAILED)
    try:
        tools = cli_tools(loaded, target)
    finally:
        await target.backend.close()
    print(f"tools on {target.backend.actor}:", file=sys.stderr)
    for tool in tools:
        summary = tool.description.strip().split("\n", 1)[0]
        print(f"{tool.name:<18} {tool.permission.value:<19} {summary}")
    return EXIT_OK


async def run_tool(workspace: Path, args: argparse.Namespace) -> int:
    """One call with the same tools, policy and dispatch path the agent uses, on the target
    the flags name; output streams as it comes (a terminal gets control characters spelled
    out). Asks on the terminal when the mode asks and there is one."""
    from tui.config import ConfigError
    from tui.events import ToolOutputChunk
    from tui.exec.backend import BackendError
    from tui.safe_text import terminal_safe
    from tui.security.confinement import SandboxFacts
    from tui.security.permissions import ApprovalMode
    from tui.security.policy import SecurityPolicy
    from tui.tools.context import ToolContext
    from tui.tools.registry import ToolRegistry

    try:
        loaded, target = await cli_target(workspace, args)
    except ConfigError as error:
        return fail(error.msg, EXIT_USAGE)
    except BackendError as error:
        return fail(f"cannot run {args.name} there: {error.msg}", EXIT_FAILED)
    tools = cli_tools(loaded, target)
    backend = target.backend
    mode = args.tool_approval_mode
    for notice in target.notices:  # "no sandbox …" and the like: said, never silent
        print(f"agent-tui: {notice}", file=sys.stderr)
    commands = target.commands if target.unsandboxed is None else None
    facts = (
        commands.facts()
        if commands is not None
        else SandboxFacts(absent=target.unsandboxed or "no sandbox: the rater decides")
    )
    policy = SecurityPolicy(
        target.workspace,
        loaded.settings.security,
        approval_mode=ApprovalMode(mode),
        approver=approver_for(target.workspace, mode),
        local_paths=target.local_paths,
        target_home=target.home,
        sandbox=facts,
    )
    policy.follow_shell(backend.shell_cwd)
    for box in (target.sandbox, target.commands):
        if box is not None:
            box.approval_mode = lambda: policy.approval_mode
    registry = ToolRegistry(tools)

    def show(event: object) -> None:
        if isinstance(event, ToolOutputChunk) and event.stream != "info":
            stream = sys.stdout if event.stream == "stdout" else sys.stderr
            stream.write(terminal_safe(event.text) if stream.isatty() else event.text)
            stream.flush()

    ctx = ToolContext("cli", args.name, backend, policy, on_update=show)
    try:
        result = await registry.execute(args.name, args.arguments, ctx)
    finally:
        for tool in tools:
            closer = getattr(tool, "aclose", None)
            if closer is not None:
                await closer()
        await backend.close()
        if target.sandbox is not None:
            await target.sandbox.close()
    if result.is_error:
        print(terminal_safe(result.text), file=sys.stderr)
        return EXIT_FAILED
    if not result.text.endswith("\n"):
        print()
    return EXIT_OK


def console() -> None:
    """The ``agent-tui`` command: ``main``, then out at once.

    By the time ``main`` returns the session is closed, the transcript written and the
    terminal restored; what is left is the interpreter tearing down hundreds of modules,
    0.2-0.4 s nobody waits for. Files still queued for disk and the standard streams are
    flushed first, then the process ends without that teardown.
    """
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

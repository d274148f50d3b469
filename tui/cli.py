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

from tui import __version__

if TYPE_CHECKING:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-tui",
        description="A terminal agent whose every tool call you can watch, approve and take over.",
        epilog="The agent's commands run in a tmux session of its own (atui-WORKSPACE-ID), "
        "closed when it quits unless kept: /pane in the app prints the tmux attach command "
        "for the agent's shell, /pane keep keeps it for the next start here.",
    )
    parser.add_argument("--version", action="version", version=f"agent-tui {__version__}")
    parser.add_argument("-p", "--prompt", help="run headless with this prompt (- reads stdin)")
    parser.add_argument("--provider", choices=["openai", "openai-responses", "anthropic"])
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument("--approval-mode", choices=["read-only", "ask", "auto-edit", "full-auto"])
    parser.add_argument("--workspace", type=Path, default=None, help="workspace root (default: .)")
    parser.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text")
    parser.add_argument("--max-turns", type=int)
    parser.add_argument(
        "--json-schema",
        metavar="FILE",
        type=Path,
        help="the final answer must be JSON matching this JSON Schema file",
    )
    parser.add_argument(
        "--ssh",
        metavar="USER@HOST[:PORT]",
        action="append",
        help="run commands on this host (or ssh config alias); several times: on a fleet",
    )
    inventory = "a fleet of an Ansible inventory's hosts (no FILE: [fleet] inventory)"
    parser.add_argument("--inventory", metavar="FILE", nargs="?", const="", help=inventory)
    parser.add_argument("--limit", metavar="PATTERN", help="only the fleet's hosts it selects")
    parser.add_argument("--container", metavar="NAME", help="run commands in this container")
    parser.add_argument(
        "--tmux",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run commands in a tmux pane (default: in the app when the target has tmux)",
    )
    parser.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="resume the latest session of this workspace",
    )
    parser.add_argument("--resume", metavar="ID", help="resume the session with this id")
    parser.add_argument(
        "--trust-workspace",
        action="store_true",
        help="apply this workspace's own settings (.agent-tui.toml, .mcp.json) for this run, "
        "including those that loosen approvals, run programs or send data elsewhere",
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("sessions", help="list the saved sessions of this workspace")
    sub.add_parser("tools", help="list the built-in tools and the permission each needs")
    trust = sub.add_parser(
        "trust", help="trust a workspace's own settings (what they change is listed first)"
    )
    trust.add_argument("dir", nargs="?", type=Path, help="the workspace (default: .)")
    trust.add_argument("--revoke", action="store_true", help="forget the trust instead")
    run = sub.add_parser("tool", help="run one tool through the registry and policy")
    run.add_argument("name")
    run.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    run.add_argument(
        "--approval-mode",
        dest="tool_approval_mode",
        choices=["read-only", "ask", "auto-edit", "full-auto"],
        default="read-only",
    )
    return parser


def fail(reason: str, code: int = EXIT_FAILED) -> int:
    """One line on stderr, then the exit code: the contract for every failure."""
    print(f"agent-tui: {' '.join(reason.split())}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tui.security.own_environ import hold_provider_keys, warn

    warn(hold_provider_keys())  # before any child exists: none may read the model's key
    remote = is_remote(args)
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
    if args.prompt is not None:
        if args.max_turns is not None and args.max_turns < 1:
            return fail("--max-turns must be at least 1", EXIT_USAGE)
        prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
        return asyncio.run(run_headless(workspace, prompt, args))
    return run_app(workspace, args)


def is_remote(args: argparse.Namespace) -> bool:
    """Commands run elsewhere: ``--workspace`` then names a folder there."""
    given = getattr(args, "inventory", None) is not None
    return given or any(getattr(args, n, None) for n in ("ssh", "container"))


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
    return load_settings(workspace, overrides=overrides, trust=trust)


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
    from tui.agent.transcript import SessionNotFound
    from tui.config import ConfigError
    from tui.events import Notice
    from tui.exec.backend import BackendError
    from tui.fleet_target import open_chosen, target_choice
    from tui.headless import HeadlessPrinter
    from tui.session import describe_outcome
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
            continue_latest=args.continue_latest,
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
        return fail(error.msg, EXIT_USAGE)
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
            return fail(session.provider_error or "no model provider configured", EXIT_USAGE)
        loop = asyncio.get_running_loop()
        interrupts = 0

        def on_signal() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1:
                os._exit(EXIT_CANCELLED)
            assert session.loop is not None
            session.loop.cancel()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal)
        await session.start_extensions()
        outcome = await session.submit(prompt)
        printer.finish(describe_outcome(outcome, session))
    finally:
        await session.aclose()
    if outcome.reason == "completed":
        return EXIT_OK
    if outcome.reason == "max_turns":
        return fail(f"stopped after {outcome.turns} turns (--max-turns)", EXIT_MAX_TURNS)
    if outcome.reason == "cancelled":
        return fail("cancelled", EXIT_CANCELLED)
    return fail(outcome.error or (printer.errors[-1] if printer.errors else "the run failed"))


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
        from tui.agent.transcript import SessionNotFound
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
                resume=getattr(args, "resume", None),
                continue_latest=bool(getattr(args, "continue_latest", False)),
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
            raise StartupError(error.msg) from None
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
    from tui.fleet_target import open_chosen, target_choice

    loaded = load(Path.cwd() if is_remote(args) else workspace, args)
    choice = target_choice(args, bool(args.tmux))
    return loaded, await open_chosen(choice, loaded.settings, workspace, interactive=False)


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
        workspace if local else None,
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
    # httpx imports its own command-line client (click, rich, pygments: ~35 ms) whenever
    # they are installed; agent-tui never uses it, and without it httpx defines a stub.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
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

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
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.cli_args import (
    EXIT_CANCELLED,
    EXIT_MAX_TURNS,
    EXIT_OK,
    EXIT_USAGE,
    PICK,
    app_prompt,
    build_parser,
    fail,
    headless_prompt,
    load,
    parse_args,
)
from tui.startup_gc import hold as hold_collector

if TYPE_CHECKING:
    from tui.claude_stream import RunFacts
    from tui.opening import Opening
    from tui.session import AgentSession
    from tui.session_api import SessionAPI, SessionFactory
    from tui.targets import TargetChoice
    from tui.ui.app import AgentApp


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "completion":
        from tui.cli_config import completion_command

        return completion_command(args.shell)
    from tui.security.own_environ import hold_provider_keys, warn

    warn(hold_provider_keys())  # before any child exists: none may read the model's key
    start_log()
    from tui.targets import target_choice

    try:
        choice = target_choice(args)
    except ValueError as error:
        return fail(str(error), EXIT_USAGE)
    workspace = choice.workspace(args.workspace)
    if not choice.remote and not workspace.is_dir():
        return fail(f"workspace {workspace} is not a folder", EXIT_USAGE)
    if args.command in ("tools", "tool"):
        from tui.cli_tool import list_tools, run_tool

        command = list_tools if args.command == "tools" else run_tool
        return asyncio.run(command(workspace, args, choice))
    if args.command == "sessions":
        return list_sessions(workspace)
    if args.command == "trust":
        return trust_command((args.dir or workspace).resolve(), revoke=args.revoke)
    if args.command == "config":
        return show_config(choice.settings_folder(workspace), args)
    prompt = headless_prompt(args)
    if prompt is not None:
        if args.max_turns is not None and args.max_turns < 1:
            return fail("--max-turns must be at least 1", EXIT_USAGE)
        if args.resume == PICK:
            return fail("--resume needs a session id with -p (agent-tui sessions lists them)", 2)
        if not prompt.strip():
            return fail("-p needs a prompt: as its value, or piped in on stdin", EXIT_USAGE)
        return asyncio.run(run_headless(workspace, prompt, args, choice))
    return run_app(workspace, args, choice)


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


async def run_headless(
    workspace: Path, prompt: str, args: argparse.Namespace, choice: TargetChoice
) -> int:
    from tui.events import Notice
    from tui.headless import HeadlessPrinter, describe_outcome
    from tui.opening import Opening, Run
    from tui.session import StartupError

    opening = Opening(workspace, args, choice, Run.HEADLESS)
    try:
        session = await opening.open()
    except StartupError as error:
        return fail(error.msg, error.exit_code)
    assert opening.loaded is not None
    if opening.loaded.trust.pending:
        print(f"agent-tui: {opening.loaded.trust.summary()}", file=sys.stderr)
    printer = HeadlessPrinter(args.output_format)
    session.listen(printer)
    for warning in session.startup_warnings():
        # Said while the session was built and its target opened, before the printer
        # listened: a workspace file loosening approvals or adding hooks must be seen in
        # headless runs too.
        printer(Notice(message=warning, level="warning"))
    try:
        problem = session.model_problem
        if problem is not None:
            where = f"the [provider] section of {session.config_path()}"
            return fail(f"{problem} Or configure {where}.", EXIT_USAGE)
        loop = asyncio.get_running_loop()
        interrupts = 0

        def on_signal() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1:
                os._exit(EXIT_CANCELLED)
            session.cancel()

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signum, on_signal)
        await session.start_extensions()
        printer.begin(run_facts(session))
        session.watch_messages(printer.message)
        outcome = await session.submit(prompt)
        printer.finish(describe_outcome(outcome, session))
    finally:
        await session.aclose()
    trouble = session.record_trouble()
    if trouble is not None:
        return fail(trouble)
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


def run_facts(session: AgentSession) -> RunFacts:
    from tui.claude_stream import RunFacts

    return RunFacts(
        session_id=session.session_id,
        cwd=str(session.workspace),
        model=session.model,
        provider=session.provider_name,
        tools=session.tool_names(),
        approval_mode=session.approval_mode,
    )


def run_app(workspace: Path, args: argparse.Namespace, choice: TargetChoice) -> int:
    """``agent-tui`` with no prompt: paint first, then settings, target and session."""
    try:
        app = make_app(workspace, args, choice)
    except ImportError:
        build_parser().print_help()
        return EXIT_USAGE
    app.run()
    return int(app.return_code or 0)


def make_app(
    workspace: Path, args: argparse.Namespace, choice: TargetChoice | None = None, **options: Any
) -> AgentApp:
    """The app for ``agent-tui`` with no prompt, its session opened after the first frame.

    The target follows ``--ssh``/``--container``/``--tmux`` as in headless mode, except that
    tmux is used by default when the target has it (a person is watching: the pane mirror and
    take-over need it). A bad config file or an unknown ``--resume`` id ends the app with exit
    code 2, an unreachable target with 1, each with the same one-line reason as headless mode.
    """
    from tui.locations import data_dir
    from tui.opening import Opening, Run
    from tui.targets import target_choice
    from tui.ui.app import AgentApp

    opening = Opening(workspace, args, choice or target_choice(args), Run.APP)
    options.setdefault("history_path", data_dir() / "prompt-history.jsonl")
    options.setdefault("state_path", data_dir() / "ui-state.json")  # the theme chosen
    options.setdefault("prompt", app_prompt(args))  # agent-tui "fix the tests"
    options.setdefault("pick_session", getattr(args, "resume", None) == PICK)  # -r alone
    app = AgentApp(builder=partial(app_session, opening), **options)
    opening.ask_trust = app.ask_trust
    app.reload_settings = opening.reload_settings
    return app


async def app_session(opening: Opening) -> tuple[SessionAPI, SessionFactory]:
    """The app's first session and the factory of its later ones (a ``SessionOpener``)."""
    return await opening.open(), opening.next


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

"""``agent-tui tools`` and ``agent-tui tool NAME ARGS``: the agent's own tools, listed or
called once, on the target the flags name and through the session a run opens
(``tui.opening``, ``Run.TOOL``): its registry, policy and dispatch path, so what a script runs
by hand is held to what the agent is held to."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tui.cli_args import EXIT_FAILED, EXIT_OK, fail

if TYPE_CHECKING:
    from tui.events import Event
    from tui.opening import Opening
    from tui.session import AgentSession
    from tui.targets import TargetChoice


def _opening(workspace: Path, args: argparse.Namespace, choice: TargetChoice) -> Opening:
    from tui.opening import Opening, Run

    mode = getattr(args, "tool_approval_mode", None)
    return Opening(workspace, args, choice, Run.TOOL, approval_mode=mode)


async def _close(opening: Opening, session: AgentSession) -> None:
    try:
        await session.aclose()
    finally:
        opening.forget_scratch()


async def list_tools(workspace: Path, args: argparse.Namespace, choice: TargetChoice) -> int:
    from tui.session import StartupError

    opening = _opening(workspace, args, choice)
    try:
        session = await opening.open()
    except StartupError as error:
        return fail(error.msg, error.exit_code)
    try:
        rows = session.tool_summaries()
    finally:
        await _close(opening, session)
    print(f"tools on {session.actor}:", file=sys.stderr)
    for name, permission, summary in rows:
        print(f"{name:<18} {permission:<19} {summary}")
    return EXIT_OK


async def run_tool(workspace: Path, args: argparse.Namespace, choice: TargetChoice) -> int:
    """One call with the same tools, policy and dispatch path the agent uses, on the target
    the flags name; output streams as it comes (a terminal gets control characters spelled
    out). Asks on the terminal when the mode asks and there is one."""
    from tui.events import ToolOutputChunk
    from tui.safe_text import terminal_safe
    from tui.session import StartupError

    opening = _opening(workspace, args, choice)
    try:
        session = await opening.open()
    except StartupError as error:
        reason = f"cannot run {args.name} there: {error.msg}" if error.exit_code == 1 else error.msg
        return fail(reason, error.exit_code)
    for notice in session.startup_warnings():  # "no sandbox …" and the like: never silent
        print(f"agent-tui: {notice}", file=sys.stderr)

    def show(event: Event) -> None:
        if isinstance(event, ToolOutputChunk) and event.stream != "info":
            stream = sys.stdout if event.stream == "stdout" else sys.stderr
            stream.write(terminal_safe(event.text) if stream.isatty() else event.text)
            stream.flush()

    try:
        result = await session.call_tool(args.name, args.arguments, "cli", on_update=show)
    finally:
        await _close(opening, session)
    if result.is_error:
        print(terminal_safe(result.text), file=sys.stderr)
        return EXIT_FAILED
    if not result.text.endswith("\n"):
        print()
    return EXIT_OK

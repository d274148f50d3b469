"""``agent-tui tools`` and ``agent-tui tool NAME ARGS``: the agent's own tools, listed or
called once, on the target the flags name and through the same registry, policy and dispatch
path a session uses, so what a script runs by hand is held to what the agent is held to."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.cli_args import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail, is_remote, load
from tui.headless import approver_for

if TYPE_CHECKING:
    from tui.config import LoadedSettings
    from tui.targets import Target
    from tui.tools.base import Tool


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
    from tui.tools.builtin.cron.store import CronStore
    from tui.tools.builtin.cron.tools import cron_tools
    from tui.tools.builtin.memory.tools import MemoryScope
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

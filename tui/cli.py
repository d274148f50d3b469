"""The ``agent-tui`` command. Kept import-light: ``--version`` must not load Textual."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from tui import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-tui",
        description="A terminal agent whose every tool call you can watch, approve and take over.",
    )
    parser.add_argument("--version", action="version", version=f"agent-tui {__version__}")
    parser.add_argument("--workspace", type=Path, default=None, help="workspace root (default: .)")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("tools", help="list the built-in tools and the permission each needs")
    run = sub.add_parser("tool", help="run one tool through the registry and policy")
    run.add_argument("name")
    run.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    run.add_argument(
        "--approval-mode",
        choices=["read-only", "ask", "auto-edit", "full-auto"],
        default="read-only",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    workspace = (args.workspace or Path.cwd()).resolve()
    if args.command == "tools":
        return list_tools()
    if args.command == "tool":
        return asyncio.run(run_tool(workspace, args.name, args.arguments, args.approval_mode))
    build_parser().print_help()
    return 2


def list_tools() -> int:
    from tui.tools.builtin import builtin_tools

    for tool in builtin_tools():
        summary = tool.description.strip().split("\n", 1)[0]
        print(f"{tool.name:<14} {tool.permission.value:<19} {summary}")
    return 0


async def run_tool(workspace: Path, name: str, arguments: str, mode: str) -> int:
    """One call with the same dispatch path the agent uses; output streams as it comes."""
    from tui.events import ToolOutputChunk
    from tui.exec.local import LocalBackend
    from tui.security.permissions import ApprovalMode
    from tui.security.policy import SecurityPolicy
    from tui.tools.builtin import builtin_tools
    from tui.tools.context import ToolContext
    from tui.tools.registry import ToolRegistry

    policy = SecurityPolicy(workspace, approval_mode=ApprovalMode(mode))
    registry = ToolRegistry(builtin_tools())

    def show(event: object) -> None:
        if isinstance(event, ToolOutputChunk) and event.stream != "info":
            stream = sys.stdout if event.stream == "stdout" else sys.stderr
            stream.write(event.text)
            stream.flush()

    ctx = ToolContext("cli", name, LocalBackend(default_cwd=str(workspace)), policy, on_update=show)
    result = await registry.execute(name, arguments, ctx)
    if result.is_error:
        print(result.text, file=sys.stderr)
        return 1
    if not result.text.endswith("\n"):
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The command line: flags and sub-commands, and the habits other agents' CLIs taught.

``agent-tui "fix the tests"`` opens the app with that prompt sent; ``agent-tui -p "why?"`` runs
headless, and piped input (``git diff | agent-tui -p "review this"``) joins the prompt;
``-c`` continues the latest session, ``-r ID`` resumes one and ``-r`` alone opens the picker.
A first word that names a sub-command (``sessions``, ``tools``, ``tool``, ``trust``,
``config``, ``completion``) runs it; any other words are the prompt.

Kept import-light, like ``tui.cli``: ``--version`` and ``--help`` load nothing else.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, get_args

from tui import __version__
from tui.choices import OutputFormat, ProviderName
from tui.security.permissions import ApprovalMode

if TYPE_CHECKING:
    from tui.config import LoadedSettings

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_MAX_TURNS = 3
EXIT_CANCELLED = 130

PICK = "\0pick"
"""``--resume`` with no id: the app opens the session picker."""
MODES = [mode.value for mode in ApprovalMode]
SUBCOMMANDS = ("sessions", "tools", "tool", "trust", "config", "completion")
SHELLS = ("bash", "zsh", "fish")


def _options(parser: argparse.ArgumentParser) -> None:
    """The flags every form of the command takes, each with its help line."""
    parser.add_argument(
        "--version", action="version", version=f"agent-tui {__version__}", help="print the version"
    )
    parser.add_argument(
        "-p",
        "--prompt",
        nargs="?",
        const="",
        metavar="PROMPT",
        help="run headless with this prompt and exit; piped input is added to it "
        "(-p alone or -p - reads the prompt from stdin)",
    )
    parser.add_argument(
        "--provider",
        choices=get_args(ProviderName),
        help="the model API (default: from your config, else whichever API key is set)",
    )
    parser.add_argument("--model", help="the model id (default: the provider's everyday model)")
    parser.add_argument(
        "--base-url", metavar="URL", help="an OpenAI- or Anthropic-compatible endpoint"
    )
    parser.add_argument("--approval-mode", choices=MODES, help="what runs without asking")
    parser.add_argument("--workspace", type=Path, default=None, help="workspace root (default: .)")
    parser.add_argument(
        "--output-format",
        "--output",
        choices=get_args(OutputFormat),
        default="text",
        help="with -p: text (the answer), json (one result object), stream-json (Claude "
        "Code's lines), agent-tui-json (every event as a JSON line)",
    )
    parser.add_argument(
        "--max-turns", type=int, metavar="N", help="stop after N model requests (exit code 3)"
    )
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
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="resume the latest session of this workspace",
    )
    parser.add_argument(
        "-r",
        "--resume",
        nargs="?",
        const=PICK,
        metavar="ID",
        help="resume the session with this id; without one, pick it from a list",
    )
    parser.add_argument(
        "--trust-workspace",
        action="store_true",
        help="apply this workspace's own settings (.agent-tui.toml, .mcp.json, its commands "
        "and skills) for this run, including those that loosen approvals, run programs or "
        "send data elsewhere",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of the flags and the sub-commands (``agent-tui --help`` prints it)."""
    parser = argparse.ArgumentParser(
        prog="agent-tui",
        description="A terminal agent whose every tool call you can watch, approve and take over.",
        usage="agent-tui [options] [PROMPT ...]\n       agent-tui [options] COMMAND ...",
        epilog="The agent's commands run in a tmux session of its own (atui-WORKSPACE-ID), "
        "closed when it quits unless kept: /pane in the app prints the tmux attach command "
        "for the agent's shell, /pane keep keeps it for the next start here.",
    )
    _options(parser)
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    sub.add_parser("sessions", help="list the saved sessions of this workspace")
    sub.add_parser("tools", help="list the built-in tools and the permission each needs")
    trust = sub.add_parser(
        "trust", help="trust a workspace's own settings (what they change is listed first)"
    )
    trust.add_argument("dir", nargs="?", type=Path, help="the workspace (default: .)")
    trust.add_argument("--revoke", action="store_true", help="forget the trust instead")
    run = sub.add_parser("tool", help="run one tool through the registry and policy")
    run.add_argument("name", help="the tool's name (agent-tui tools lists them)")
    run.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    run.add_argument(
        "--approval-mode",
        dest="tool_approval_mode",
        choices=MODES,
        default="read-only",
        help="what the call may do without asking (default: read-only)",
    )
    config = sub.add_parser(
        "config", help="print the settings in effect here and where each one came from"
    )
    config.add_argument(
        "--all", action="store_true", help="every key, the built-in defaults included"
    )
    completion = sub.add_parser("completion", help="print a shell completion script")
    completion.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    return parser


def prompt_parser() -> argparse.ArgumentParser:
    """The flags plus free words: the prompt the app (or ``-p``) starts with."""
    parser = argparse.ArgumentParser(prog="agent-tui", add_help=False)
    _options(parser)
    parser.add_argument("words", nargs="*")
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Flags, a sub-command, or the words of a prompt (``agent-tui "fix the tests"``).

    ``--help`` and a first word naming a sub-command go to ``build_parser`` as they always
    have; anything else is the prompt form.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    full = build_parser()
    if any(arg in ("-h", "--help") for arg in argv):
        return full.parse_args(argv)
    known, _ = prompt_parser().parse_known_args(argv)
    words = list(getattr(known, "words", []) or [])
    if words and words[0] in SUBCOMMANDS:
        args = full.parse_args(argv)
        args.words = []
        return args
    args = prompt_parser().parse_args(argv)
    args.command = None
    return args


def piped_input(stream: IO[str] | None = None) -> str | None:
    """What was piped or redirected into stdin (``cmd | agent-tui -p``), else None: a
    terminal or ``/dev/null`` gives nothing, and is never waited on."""
    stream = stream if stream is not None else sys.stdin
    try:
        if stream is None or stream.isatty():
            return None
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)):
        return None
    text = stream.read()
    return text if text.strip() else None


def headless_prompt(args: argparse.Namespace, stdin: IO[str] | None = None) -> str | None:
    """The prompt of a ``-p`` run: its words, then whatever was piped in (None: no ``-p``).

    ``-p -`` (and ``-p`` alone) take the prompt from stdin.
    """
    if args.prompt is None:
        return None
    words = " ".join([args.prompt, *getattr(args, "words", [])]).strip()
    if words == "-":
        words = ""
    piped = piped_input(stdin)
    if piped is None:
        return words
    return f"{words}\n\n{piped}" if words else piped


def app_prompt(args: argparse.Namespace) -> str | None:
    """The prompt the app opens with (``agent-tui "fix the tests"``), or None."""
    words = " ".join(getattr(args, "words", None) or []).strip()
    return words or None


def fail(reason: str, code: int = EXIT_FAILED) -> int:
    """One line on stderr, then the exit code: the contract for every failure."""
    print(f"agent-tui: {' '.join(reason.split())}", file=sys.stderr)
    return code


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "provider": {"name": args.provider, "model": args.model, "base_url": args.base_url},
        "approval": {"mode": args.approval_mode},
        "agent": {
            "max_turns": args.max_turns,
            "json_schema": str(args.json_schema.resolve()) if args.json_schema else None,
        },
    }


def load(
    workspace: Path, args: argparse.Namespace, approval_mode: str | None = None
) -> LoadedSettings:
    """Settings for this run; the workspace's own loosening settings only when trusted.
    ``approval_mode`` is a run's own (``agent-tui tool --approval-mode``), over the flag's."""
    from tui.config import load_settings

    overrides = overrides_from(args)
    if approval_mode is not None:
        overrides["approval"]["mode"] = approval_mode
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

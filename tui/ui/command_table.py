"""The slash commands' table: names, usage and help, the parser, and the ``/help`` text.

One table that the prompt's completion, the command palette and the handlers
(``tui/ui/commands.py``) share, so that what is offered is what runs. It needs nothing of the
app, so the prompt reads it without reaching the handlers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    name: str
    usage: str
    help: str


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "/help", "list the commands and keys"),
    SlashCommand(
        "approve",
        "/approve 10m | off",
        "auto-approve every request for a while (90s, 10m, 1h); off ends it",
    ),
    SlashCommand("mode", "/mode [read-only|ask|auto-edit|full-auto]", "show or set approvals"),
    SlashCommand("model", "/model [NAME]", "show or switch the model for the next request"),
    SlashCommand(
        "compact",
        "/compact [FOCUS]",
        "shrink what is sent to the model now (summary of older turns); FOCUS guides it",
    ),
    SlashCommand("clear", "/clear", "start a new session (the old one stays saved)"),
    SlashCommand("sessions", "/sessions", "pick a saved session of this workspace to resume"),
    SlashCommand("resume", "/resume ID", "resume a saved session by id"),
    SlashCommand("grants", "/grants", "list what is allowed always, and revoke it"),
    SlashCommand(
        "pane",
        "/pane [PANE_ID | keep | close]",
        "the agent's tmux session and its attach command; mirror another pane; keep the "
        "session after quitting, or not",
    ),
    SlashCommand(
        "mcp", "/mcp [restart NAME | trust]", "MCP servers and OpenAPI specs: state, restart, trust"
    ),
    SlashCommand(
        "trust", "/trust", "review and trust this workspace's own settings (.agent-tui.toml)"
    ),
    SlashCommand("tools", "/tools", "every tool: permission, and whether it is loaded or deferred"),
    SlashCommand("cron", "/cron", "the scheduled jobs and their last results"),
    SlashCommand("skills", "/skills", "the skills the agent can load (SKILL.md folders)"),
    SlashCommand(
        "undo",
        "/undo [N | list]",
        "put back the files the last turn changed (N: rewind to before turn N; list: the turns)",
    ),
    SlashCommand("diff", "/diff", "what this session's turns changed in the workspace, as a diff"),
    SlashCommand("init", "/init", "have the agent look at the repository and write AGENTS.md"),
    SlashCommand("exit", "/exit", "quit agent-tui (also /quit, ctrl+d on an empty prompt)"),
    SlashCommand("quit", "/quit", "quit agent-tui"),
)
BY_NAME = {command.name: command for command in COMMANDS}


@dataclass(frozen=True)
class ParsedCommand:
    name: str
    argument: str


class UnknownCommand(ValueError):
    """``/frob``: says which commands exist."""


def parse_slash(text: str) -> ParsedCommand:
    """``/approve 10m`` → ``ParsedCommand("approve", "10m")``.

    Raises:
        UnknownCommand: the name is not one of ``COMMANDS`` (the message lists them).
    """
    body = text.strip()[1:]
    name, _, argument = body.partition(" ")
    name = name.strip().lower()
    if name not in BY_NAME:
        known = ", ".join(f"/{c.name}" for c in COMMANDS)
        raise UnknownCommand(f"no command /{name}; the commands are {known}")
    return ParsedCommand(name, argument.strip())


KEYS_HELP = (
    ("enter", "send (while the agent works: steer it)"),
    ("ctrl+j / alt+enter / shift+enter", "new line (ctrl+j works everywhere, tmux too)"),
    ("up / down", "prompt history, at the first / last line"),
    ("ctrl+r", "search the prompt history"),
    ("esc / ctrl+c", "cancel the running turn and its tools"),
    ("ctrl+c", "with a draft in the prompt: clear it"),
    ("ctrl+c twice", "quit, when nothing runs (ctrl+c with a selection copies it)"),
    ("ctrl+d", "quit, on an empty prompt"),
    ("shift+tab", "next approval mode: ask → auto-edit → read-only"),
    ("ctrl+o", "expand or collapse the latest tool block (enter on a focused block)"),
    ("ctrl+l", "full output of the latest tool block (o on a focused block)"),
    ("ctrl+t", "take the mirrored pane's keyboard; ctrl+] gives it back"),
    ("f4", "show or hide the pane mirror"),
    ("alt+left / alt+right", "narrower / wider chat column"),
    ("ctrl+g", "grants: what is allowed always"),
    ("ctrl+p", "command palette (themes too)"),
    ("ctrl+q", "quit"),
)


def help_markdown() -> str:
    """The ``/help`` text, as Markdown for the chat."""
    lines = ["**Commands**", ""]
    lines += [f"- `{c.usage}` — {c.help}" for c in COMMANDS]
    lines += ["- `!command` — run a shell command yourself, through the same approvals"]
    lines += ["- `/NAME` — your own commands and skills (listed below when there are any)", ""]
    lines += ["**Keys**", ""]
    lines += [f"- `{key}` — {what}" for key, what in KEYS_HELP]
    return "\n".join(lines)

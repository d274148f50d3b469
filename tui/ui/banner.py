"""The chat's first lines: what this session is, or why no model answers and the ways out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from tui.session_api import SessionAPI


def no_provider_text(reason: str, config_file: str | None = None) -> Text:
    """What the no-provider banner says: the exact reason, then the ways out (the config
    file's path among them)."""
    text = Text()
    text.append("No model provider", "bold")
    text.append(" — " + reason.rstrip(".") + ".\n\n")
    text.append("To talk to a model, set one of:\n")
    for label, how, note in (
        ("OpenAI     ", "OPENAI_API_KEY=…", ""),
        ("Anthropic  ", "ANTHROPIC_API_KEY=…", ""),
        ("local model", "--base-url http://127.0.0.1:11434/v1", ""),
    ):
        text.append(f"  {label}  ", "dim")
        text.append(how, "bold")
        text.append(note + "\n", "dim")
    if config_file:
        text.append("  config file  ", "dim")
        text.append("[provider]", "bold")
        text.append(f" in {config_file}\n", "dim")
    text.append("\nMeanwhile ")
    text.append("!command", "bold")
    text.append(" runs a shell command through the same approvals, and the pane mirror works.")
    return text


def session_text(session: SessionAPI) -> Text:
    """The model, where commands run and the approval mode, then how to start."""
    text = Text()
    text.append("agent-tui", "bold")
    text.append(f"  ·  {session.workspace}\n", "dim")
    if session.has_model:
        text.append(f"{session.provider_name} · {session.model}", "bold")
    text.append(f" on {session.actor} · approvals: {session.approval_mode}")
    text.append("\nType a message, /help for commands, !cmd to run one yourself.", "dim")
    return text

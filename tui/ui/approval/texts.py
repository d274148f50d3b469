"""What the approval modal says, as Rich text: each part built from one request, nothing else.

Everything in a request that someone else wrote — the model's ``why`` and risk label, a
tool's name, the arguments, a directory's name — goes into ``Text`` as plain characters
(never markup) with control characters spelled out, and every such field that is not the call
itself is one line, cut when long: a newline in the model's ``why`` cannot draw a fake command
line, an escape sequence cannot reach the terminal, and ten thousand characters of reasons
cannot push the command out of view. What we computed (the command, its segments and their
risk) is shown after what the model wrote, and the question names the computed risk.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from rich.style import Style
from rich.table import Table
from rich.text import Text

from tui.events import ApprovalRequested
from tui.safe_text import one_line, spell_controls
from tui.ui.approval.diff_body import approval_diff_body, shown_arguments

RISK_ORDER = {"low": 0, "medium": 1, "unknown": 2, "high": 3}
FIELD_LIMIT = 300
"""Characters of one field written by someone else (a reason) shown before it is cut."""
WHY_LIMIT = 160
"""Characters of the model's ``why``: a few lines at most, so the command under it stays in
view on a small terminal."""

RiskStyle = Callable[[str | None], Style]


def header_text(request: ApprovalRequested, risk_style: RiskStyle, warning: str) -> Text:
    """Where it runs, the computed risk beside the model's claim, and why it asks."""
    text = Text()
    text.append("runs on ", "dim")
    text.append(one_line(request.actor, 120), "bold")
    if request.cwd:
        text.append("  in ", "dim")
        where = Style.parse(f"bold reverse {warning}")
        text.append(one_line(request.cwd), where if request.cwd_elsewhere else "bold")
        if request.cwd_elsewhere:
            text.append(" (not the workspace)", "italic dim")
    if request.risk:
        text.append("    computed risk ", "dim")
        text.append(f" {request.risk.upper()} ", risk_style(request.risk) + Style(reverse=True))
    if request.claimed_risk:
        claimed = one_line(request.claimed_risk, 20)
        text.append("    model says ", "dim")
        text.append(claimed, risk_style(request.claimed_risk))
        if request.risk and RISK_ORDER.get(request.claimed_risk, 0) < RISK_ORDER.get(
            request.risk, 0
        ):
            text.append("  (the computed risk decides)", "italic dim")
    if request.loop_id != "main":
        agent = one_line(request.loop_id.rsplit(".", 1)[-1], 40)
        text.append(f"    asked by sub-agent {agent}", "italic")
    if request.sandbox:  # our own words, never the model's
        text.append("\nwhere: ", "dim")
        if request.outside:
            text.append(" runs OUTSIDE the sandbox ", risk_style("high") + Style(reverse=True))
            text.append(" can write anywhere you can, reach any host", "bold")
        elif request.sandbox.startswith("no sandbox"):
            text.append(request.sandbox, Style.parse(f"bold {warning}"))
        else:
            text.append(request.sandbox, "dim")
    if request.reason:
        text.append("\nasks because ", "dim")
        text.append(one_line(request.reason, FIELD_LIMIT), "bold")
    return text


def body_title(request: ApprovalRequested) -> str:
    if request.diff is not None:
        return "arguments · diff of the change"
    if request.command is None:
        return "arguments"
    count = len(request.segments)
    lines = request.command.count("\n") + 1
    bits = [f"{len(request.command):,} chars"]
    if lines > 1:
        bits.append(f"{lines} lines")
    if count > 1:
        bits.append(f"{count} segments")
    return "command · " + " · ".join(bits)


def why_text(request: ApprovalRequested) -> Text:
    """The model's reason: one line, first, before anything we computed."""
    text = Text()
    text.append("why (the model): ", "bold")
    text.append(one_line(request.why or "", WHY_LIMIT), "italic")
    return text


def command_text(request: ApprovalRequested, risk_style: RiskStyle) -> Text:
    """The call itself: the command (each risky segment underlined in its colour), the
    change of a file tool, or the arguments."""
    if request.diff is not None:
        return approval_diff_body(request, arguments_text(shown_arguments(request)))
    if request.command is None:
        return arguments_text(request.arguments)
    command = request.command
    text = Text(spell_controls(command, keep="\n"))
    if text.plain != command:
        return text  # controls were spelled out: offsets no longer match the segments
    position = 0
    for segment in request.segments:
        needle = segment.text.strip()
        found = command.find(needle, position) if needle else -1
        if found < 0:
            continue
        if segment.risk != "low":
            text.stylize(
                risk_style(segment.risk) + Style(underline=True), found, found + len(needle)
            )
        position = found + len(needle)
    return text


def segments_table(request: ApprovalRequested, risk_style: RiskStyle) -> Table:
    """One row per segment: number, computed risk, the text with its reasons under it."""
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(justify="right", style="dim", no_wrap=True)
    table.add_column(no_wrap=True, width=7)
    table.add_column(ratio=1)
    for number, segment in enumerate(request.segments, 1):
        cell = Text(one_line(segment.text.strip()))
        for reason in segment.reasons:
            cell.append(f"\n· {one_line(reason, FIELD_LIMIT)}", "italic dim")
        risk = Text(segment.risk.upper(), risk_style(segment.risk))
        table.add_row(str(number), risk, cell)
    return table


def question_text(request: ApprovalRequested, risk_style: RiskStyle) -> Text:
    """The question, right above the keys, naming the risk we computed."""
    text = Text()
    text.append(f"Allow {one_line(request.tool_name, 60)}", "bold")
    if request.command is not None:
        text.append(" to run this command", "bold")
    elif request.diff is not None:
        text.append(" to make this change", "bold")
    text.append("?")
    if request.risk:
        text.append("  computed risk ", "dim")
        text.append(f" {request.risk.upper()} ", risk_style(request.risk) + Style(reverse=True))
    return text


ANSWER_KEYS = (
    ("y", "allow once"),
    ("a", "allow always…"),
    ("n", "deny"),
    ("m", "deny with message…"),
)


def keys_text(wait: float) -> Text:
    """The answer keys; while the modal does not take answers yet, why not and for how long."""
    text = Text()
    if wait > 0:
        text.append(f" ⏸ answer keys open in {max(wait, 0.1):.1f} s ", "bold reverse")
        text.append("  keys typed meanwhile answer nothing", "dim")
        return text
    for key, label in ANSWER_KEYS:
        text.append(f" {key} ", "bold reverse")
        text.append(f" {label}   ")
    text.append("esc", "bold")
    text.append(" back / deny", "dim")
    return text


def arguments_text(arguments: dict[str, object]) -> Text:
    """Arguments the way a person reads them: multi-line strings (code, file content, a
    notebook cell) as the lines they are, not one JSON line full of ``\\n``; every other
    control character spelled out, names on one line."""
    text = Text()
    for index, (key, value) in enumerate(arguments.items()):
        if index:
            text.append("\n")
        text.append(f"{one_line(str(key), 80)}:", "bold")
        if isinstance(value, str) and "\n" in value:
            for line in spell_controls(value, keep="\n").split("\n"):
                text.append("\n  " + line)
            continue
        try:
            rendered = json.dumps(value, indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            rendered = "(nested too deeply to show)"
        text.append(" " + spell_controls(rendered, keep="\n").replace("\n", "\n  "))
    return text

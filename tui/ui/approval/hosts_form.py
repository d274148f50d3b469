"""A fan-out's approval: the hosts it runs on, and the form that allows it on some of them.

One question covers every host of a fan-out. The body lists them: how many ask (with counts
per group), which run it unasked (their mode, a rule or a grant allows it there), which never
run it and why (blocked, denied there, unreachable, a changed key). ``h`` opens this form:
every asking host ticked, space unticks one, Enter allows the command on those ticked only.
"Allow always" on a fan-out holds on the asked hosts' group when they make one whole group,
else on those hosts (``grant_scope``).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, SelectionList, Static

from tui.events import ApprovalAnswer, ApprovalDecision, ApprovalRequested
from tui.safe_text import one_line

HINT = "⏎ allows the ticked hosts · space ticks · esc back"
SHOWN_NAMES = 12


def asked_hosts(request: ApprovalRequested) -> list[str]:
    return [host.name for host in request.hosts if host.state == "ask"]


def group_counts(request: ApprovalRequested, state: str = "ask") -> dict[str, int]:
    counts: dict[str, int] = {}
    for host in request.hosts:
        if host.state == state:
            for group in host.groups:
                counts[group] = counts.get(group, 0) + 1
    return counts


def grant_scope(request: ApprovalRequested) -> str:
    """Where "allow always" holds: the one group that is exactly the asked hosts, else them."""
    asked = set(asked_hosts(request))
    members: dict[str, set[str]] = {}
    for host in request.hosts:
        for group in host.groups:
            members.setdefault(group, set()).add(host.name)
    for group, hosts in members.items():
        if hosts == asked and group != "ungrouped":
            return group
    return ":".join(asked_hosts(request))


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_NAMES])
    return shown + (f", … {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")


def hosts_text(request: ApprovalRequested, warning: str, error: str) -> Text:
    """Where it runs, host by host, in a few lines."""
    text = Text()
    asked = asked_hosts(request)
    counts = group_counts(request)
    text.append(f"on {len(asked)} host{'s' if len(asked) != 1 else ''}", f"bold {warning}")
    if request.host_pattern:
        text.append(f" of {request.host_pattern!r}", "bold")
    if counts:
        text.append("  (" + " · ".join(f"{g} {n}" for g, n in counts.items()) + ")")
    text.append(f"\n  {_names(asked)}")
    allowed = [host.name for host in request.hosts if host.state == "allowed"]
    if allowed:
        text.append(f"\nruns unasked on {len(allowed)}: ", "bold")
        text.append(_names(allowed))
    for host in request.hosts:
        if host.state == "refused":
            text.append(f"\nnot run on {host.name}: ", f"bold {error}")
            text.append(one_line(host.reason, 160))
    kinds = {host.sandbox for host in request.hosts if host.state != "refused" and host.sandbox}
    if len(kinds) > 1:
        rater = [h.name for h in request.hosts if (h.sandbox or "").startswith("no sandbox")]
        if rater:
            text.append(f"\nno sandbox (only the rater) on: {_names(rater)}", warning)
    text.append(f"\nallow always holds on: {grant_scope(request)}", "dim")
    return text


class HostsForm(Vertical):
    """Every asked host, ticked; ``answer()`` allows the command on those still ticked."""

    def __init__(self, request: ApprovalRequested) -> None:
        super().__init__(id="hosts-form")
        self.request = request

    def compose(self) -> ComposeResult:
        self.border_title = "Allow on some hosts"
        yield SelectionList[str](
            *(
                (Text(f"{host.name}  {' '.join(host.groups)}"), host.name, True)
                for host in self.request.hosts
                if host.state == "ask"
            ),
            id="hosts-list",
        )
        with Horizontal(classes="form-row"):
            yield Button("Allow on these", id="hosts-ok", variant="warning")
            yield Button("Back", id="hosts-back")
            yield Static(HINT, classes="form-hint")

    def answer(self) -> ApprovalAnswer:
        chosen = list(self.query_one("#hosts-list", SelectionList).selected)
        if not chosen:
            return ApprovalAnswer.deny()
        return ApprovalAnswer(decision=ApprovalDecision.ALLOW_ONCE, hosts=chosen)


__all__ = ["HostsForm", "asked_hosts", "grant_scope", "group_counts", "hosts_text"]

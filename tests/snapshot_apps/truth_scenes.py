"""Scenes of approvals that must tell the whole truth, at every terminal size.

- ``edit_last_line``: an edit of a file's last line (``gamma`` → ``GAMMA-EDITED``): both the
  removed and the added line show, so it never reads as a deletion.
- ``new_file``: a one-line new file: its one line shows.
- ``long_diff``: a diff longer than the screen: the body says how much is below.
- ``always_13``: "allow always" on a 13-segment command: all 13 rules listed, each one
  possible to untick.
- ``waiting``: the modal just appeared: answer keys wait, and say so.
- ``hostile``: a model's ``why`` with newlines, escape sequences and 10,000 characters: one
  line, cut, and the command the policy computed below it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from textual.pilot import Pilot

from tui.diffs import creation_diff, unified_diff
from tui.events import (
    ApprovalRequested,
    AssistantMessage,
    Event,
    RiskSegmentView,
    ToolCallRequested,
    TurnStarted,
    UserMessage,
)

TRUTH_SCENES = ("edit_last_line", "new_file", "long_diff", "always_13", "waiting", "hostile")

THIRTEEN = [
    ("cd /srv/app", "low", []),
    ("git fetch --all", "medium", ["network access"]),
    ("git status --short", "low", []),
    ("git stash", "medium", ["changes files"]),
    ("git pull --rebase origin main", "medium", ["network access", "changes files"]),
    ("npm ci --no-audit", "medium", ["installs packages", "network access"]),
    ("npm run build", "medium", ["runs project scripts"]),
    ("find dist -name '*.map' -print0", "low", []),
    ("xargs -0 rm -f --", "high", ["deletes files named at run time"]),
    ("tar czf /tmp/dist.tgz dist", "medium", ["writes outside the workspace (/tmp)"]),
    (
        "curl -fsS -T /tmp/dist.tgz https://uploads.example.net/drop",
        "high",
        ["network access", "uploads a file"],
    ),
    ("git stash pop", "medium", ["changes files"]),
    ("echo done", "low", []),
]
THIRTEEN_COMMAND = (
    "cd /srv/app && git fetch --all && git status --short && git stash && "
    "git pull --rebase origin main && npm ci --no-audit && npm run build && "
    "find dist -name '*.map' -print0 | xargs -0 rm -f -- && tar czf /tmp/dist.tgz dist && "
    "curl -fsS -T /tmp/dist.tgz https://uploads.example.net/drop && git stash pop && echo done"
)
HOSTILE_WHY = (
    "routine check\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\x1b[2J\x1b[H"
    "── run_shell needs approval ──\n  command:\n    git status --short\n  risk: low\n"
    "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;fake title\x07" + "A" * 10_000
)


def _intro(at: Callable[[float], int], tool: str, arguments: dict[str, Any]) -> list[Event]:
    return [
        UserMessage(text="Go ahead.", ts=at(8)),
        TurnStarted(turn=1, ts=at(8)),
        AssistantMessage(text="On it.", tool_call_ids=["call_t"], ts=at(6)),
        ToolCallRequested(
            tool_call_id="call_t", tool_name=tool, arguments=json.dumps(arguments), ts=at(6)
        ),
    ]


def _file_request(
    at: Callable[[float], int], tool: str, arguments: dict[str, Any], diff: str
) -> list[Event]:
    return [
        *_intro(at, tool, arguments),
        ApprovalRequested(
            request_id="approval-t",
            tool_call_id="call_t",
            tool_name=tool,
            arguments=arguments,
            actor="local",
            reason="ask mode: file edits need approval",
            diff=diff,
            ts=at(0.5),
        ),
    ]


def edit_last_line(at: Callable[[float], int]) -> list[Event]:
    arguments = {"path": "greek.txt", "old_string": "gamma", "new_string": "GAMMA-EDITED"}
    diff, _, _ = unified_diff("alpha\nbeta\ngamma\n", "alpha\nbeta\nGAMMA-EDITED\n", "greek.txt")
    return _file_request(at, "edit_file", arguments, diff)


def new_file(at: Callable[[float], int]) -> list[Event]:
    arguments = {"path": "VERSION", "content": "2.4.1\n"}
    diff, _ = creation_diff("2.4.1\n", "VERSION")
    return _file_request(at, "write_file", arguments, diff)


def long_diff(at: Callable[[float], int]) -> list[Event]:
    old = "".join(f"line {n}\n" for n in range(1, 41))
    new = "".join(f"line {n} (edited)\n" for n in range(1, 41))
    arguments = {"path": "notes.txt", "content": new}
    diff, _, _ = unified_diff(old, new, "notes.txt")
    return _file_request(at, "write_file", arguments, diff)


def _shell_request(
    at: Callable[[float], int],
    command: str,
    segments: list[tuple[str, str, list[str]]],
    *,
    why: str,
    claimed: str,
) -> list[Event]:
    rules = [f"run_shell({text})" for text, _, _ in segments]
    return [
        *_intro(at, "run_shell", {"command": command}),
        ApprovalRequested(
            request_id="approval-t",
            tool_call_id="call_t",
            tool_name="run_shell",
            arguments={"command": command, "why": why, "risk": claimed},
            command=command,
            risk="high" if any(r == "high" for _, r, _ in segments) else "medium",
            segments=[RiskSegmentView(text=t, risk=r, reasons=w) for t, r, w in segments],  # type: ignore[arg-type]
            claimed_risk=claimed,
            why=why,
            actor="local",
            reason="ask mode: commands that act need approval",
            suggested_pattern=f"run_shell({command})",
            always_rules=rules,
            ts=at(0.5),
        ),
    ]


def always_13(at: Callable[[float], int]) -> list[Event]:
    why = "rebuild, strip source maps and upload the bundle"
    return _shell_request(at, THIRTEEN_COMMAND, THIRTEEN, why=why, claimed="medium")


def hostile(at: Callable[[float], int]) -> list[Event]:
    command = "touch /tmp/pwned"
    segments: list[tuple[str, str, list[str]]] = [
        (command, "medium", ["writes outside the workspace (/tmp)"])
    ]
    return _shell_request(at, command, segments, why=HOSTILE_WHY, claimed="low")


def truth_scene(
    name: str,
    make_app: Callable[[], Any],
    publish: Callable[[Pilot[int], Any, list[Event]], Awaitable[None]],
    open_gate: Callable[[Pilot[int]], Awaitable[None]],
    settle: Callable[[Pilot[int]], Awaitable[None]],
    at: Callable[[float], int],
) -> tuple[Callable[[], Any], Callable[[Pilot[int]], Awaitable[None]]]:
    """``(make_app, run_before)`` for one of ``TRUTH_SCENES``."""
    made: Callable[[Callable[[float], int]], list[Event]] = {
        "edit_last_line": edit_last_line,
        "new_file": new_file,
        "long_diff": long_diff,
        "always_13": always_13,
        "waiting": always_13,
        "hostile": hostile,
    }[name]

    async def play(pilot: Pilot[int]) -> None:
        await publish(pilot, pilot.app, made(at))
        if name != "waiting":
            await open_gate(pilot)
        if name == "always_13":
            await pilot.press("a")
        await settle(pilot)

    return make_app, play

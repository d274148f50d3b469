"""The entry point: judge a whole command line, cached, never raising.

Everything else in this package serves ``assess_command``; the policy and the tmux guard call
only this (and read the verdict types in ``verdict``).
"""

from __future__ import annotations

import functools

from tui.security.gitconfig import config_stamp
from tui.security.risk.context import RiskContext
from tui.security.risk.verdict import CommandRisk, SegmentRisk, max_risk
from tui.security.risk.walk import Walker

MAX_PARSED_BYTES = 32 * 1024
"""Longer command lines are not parsed. The C parser slows steeply on broken syntax (20 KB of
dangling pipes takes 0.7 s, 400 KB exhausted memory in a test), and no one reads such a
command in an approval prompt anyway."""


def assess_command(command: str, context: RiskContext | None = None) -> CommandRisk:
    """Judge ``command`` as run in ``context``; never raises, because a crashing security
    check helps nobody.

    Cached: the verdict is a pure function of the text, the context and — for commands that
    mention git — the repository config's files and mtimes, so an edited ``.git/config`` is
    judged afresh. Agents repeat commands, and the policy judges each call twice.
    """
    stamp = None
    if context is not None and context.local and context.cwd and "git" in command:
        stamp = config_stamp(context.cwd)
    return _assess_cached(command, context, stamp)


@functools.lru_cache(maxsize=1024)
def _assess_cached(command: str, context: RiskContext | None, stamp: object) -> CommandRisk:
    if len(command) > MAX_PARSED_BYTES:
        reason = f"the command is {len(command)} characters long, too long to judge, so it is high"
        segment = SegmentRisk(command, "high", (reason,), read_only=False, program=None)
        return CommandRisk(command, (segment,), "high", read_only=False, parse_error=reason)
    try:
        segments, parse_error = Walker(command, depth=0, context=context).run()
    except Exception as exc:  # fail closed: an unjudgeable command is a dangerous one
        reason = f"the risk check failed on this command ({type(exc).__name__}), so it is high"
        segment = SegmentRisk(command, "high", (reason,), read_only=False, program=None)
        return CommandRisk(command, (segment,), "high", read_only=False, parse_error=reason)
    return CommandRisk(
        command=command,
        segments=tuple(segments),
        risk=max_risk(*(s.risk for s in segments)),
        read_only=bool(segments) and all(s.read_only for s in segments),
        parse_error=parse_error,
    )

"""The words of a verdict: the risk labels, a segment's and a command's rating, and the
rating being built while one segment is judged (flags only ever raise it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Risk = Literal["low", "medium", "unknown", "high"]
"""``unknown``: a program this module has no rule for. It is never read-only and needs the
same permission as ``high``: a name we do not know could do anything."""

RISK_ORDER: dict[Risk, int] = {"low": 0, "medium": 1, "unknown": 2, "high": 3}


def max_risk(*risks: Risk) -> Risk:
    """The riskiest label wins, so that combining verdicts can only ever raise a rating."""
    best: Risk = "low"
    for risk in risks:
        if RISK_ORDER[risk] > RISK_ORDER[best]:
            best = risk
    return best


@dataclass(frozen=True)
class SegmentRisk:
    """One simple command of a compound command line, judged on its own."""

    text: str
    """The segment's source text, exactly as it appears in the command."""
    risk: Risk
    reasons: tuple[str, ...]
    """Why the rating is what it is, in words a person can check against the command."""
    read_only: bool
    """True only for a known read-only command with no writing redirections."""
    program: str | None
    """The command name after env assignments and wrappers such as sudo are stripped."""
    secrets: tuple[str, ...] = ()
    """The secret places (``SECRET_PATHS`` entries) this segment reads."""


@dataclass(frozen=True)
class CommandRisk:
    """The verdict on a whole command line: the riskiest segment decides."""

    command: str
    segments: tuple[SegmentRisk, ...]
    risk: Risk
    read_only: bool
    parse_error: str | None
    """Set when the shell parser found syntax errors; the risk is then at least "medium"."""

    @property
    def reads_secret(self) -> bool:
        """Any segment reads a secret: no approval mode may let this run unasked."""
        return any(s.secrets for s in self.segments)


# -- verdicts --------------------------------------------------------------------------------


@dataclass
class Verdict:
    """A segment's rating while it is being built: flags only ever raise it."""

    risk: Risk = "low"
    reasons: list[str] = field(default_factory=list)
    read_only: bool = False
    program: str | None = None
    secrets: list[str] = field(default_factory=list)

    def secret(self, place: str) -> None:
        """A read of a secret place: high, and named so the policy never lets it through."""
        self.flag("high", f"reads a secret: {place}")
        if place not in self.secrets:
            self.secrets.append(place)

    def flag(self, risk: Risk, reason: str) -> None:
        self.risk = max_risk(self.risk, risk)
        if reason and reason not in self.reasons:
            self.reasons.append(reason)
        if risk != "low":
            self.read_only = False

    def absorb(self, other: Verdict) -> None:
        for reason in other.reasons:
            self.flag("low", reason)
        self.risk = max_risk(self.risk, other.risk)
        self.read_only = self.read_only and other.read_only
        for place in other.secrets:
            self.secret(place)

    def segment(self, text: str) -> SegmentRisk:
        read_only = self.read_only and self.risk == "low"
        return SegmentRisk(
            text, self.risk, tuple(self.reasons), read_only, self.program, tuple(self.secrets)
        )


@dataclass(frozen=True)
class Stdin:
    """Where a command's standard input comes from: code fed to a shell is code that runs."""

    kind: Literal["none", "file", "pipe", "fetch", "heredoc", "herestring"] = "none"
    text: str | None = None
    dynamic: bool = False


NO_STDIN = Stdin()

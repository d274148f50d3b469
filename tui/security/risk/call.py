"""The call model every rule reads and flags: one program invocation being judged, and what
a rule may ask of the judge that is walking the command (``Analyst``).

Rules import this module and the modules below it, never the judge or the walker: a rule that
needs more of the walk asks through ``Analyst``, so nothing imports back up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from tui.security.risk.verdict import NO_STDIN, Risk, Stdin, Verdict
from tui.security.risk.words import Word, plain_word

if TYPE_CHECKING:
    from tree_sitter import Node

    from tui.security.risk.context import RiskContext

MAX_NESTING = 8
"""How many shell strings deep (``bash -c "eval '…'"``) we follow before giving up as high."""


class Analyst(Protocol):
    """What rules may read and change of the walk: where it is, and how to judge code."""

    depth: int
    context: RiskContext | None
    cwd: str | None
    moved: bool
    zsh_reading: bool
    functions: set[str]

    @property
    def secret_places(self) -> tuple[str, ...]: ...

    def knows(self, name: str) -> bool:
        """Does some table or rule speak for this program name?"""
        ...

    def argv(self, argv: list[Word], stdin: Stdin) -> Verdict: ...

    def rate(self, call: Call) -> None:
        """Apply the program's rules to ``call``."""
        ...

    def judge_env(self, verdict: Verdict, name: str, value: Word) -> None: ...

    def nested(
        self, verdict: Verdict, code: str, label: str, floor: Risk, *, announce: bool = True
    ) -> None: ...

    def code_words(self, verdict: Verdict, words: list[Word], label: str, floor: Risk) -> None: ...

    def contains_fetch(self, node: Node) -> bool: ...


@dataclass
class Call:
    """One program invocation being judged: the rule functions read and flag this."""

    judge: Analyst
    """The judge walking the command: rules ask it to judge code this call runs."""
    verdict: Verdict
    key: str
    program: str
    args: list[Word]
    stdin: Stdin
    ro: bool = False
    """Is the program, as called, one that only reads? Rules refine the list's default."""
    program_word: str = ""
    """The program as written (``./ls``, ``/usr/bin/ls``), for where it comes from."""

    def values(self) -> list[str]:
        return [a.value if a.value is not None else a.raw for a in self.args]

    def options(self) -> list[str]:
        return [v for v in self.values() if v.startswith("-") and v != "-"]

    def positionals(self) -> list[Word]:
        out = []
        done = False
        for arg in self.args:
            value = arg.value
            if not done and value == "--":
                done = True
            elif done or value is None or not value.startswith("-") or value == "-":
                out.append(arg)
        return out

    def has_short(self, letters: str) -> bool:
        """Is any of these single-letter flags present, alone or in a cluster like ``-rf``?"""
        for value in self.options():
            if not value.startswith("--") and set(letters) & set(value[1:]):
                return True
        return False

    def has_long(self, *names: str) -> bool:
        return any(v.split("=", 1)[0] in names for v in self.options())

    def flag(self, risk: Risk, reason: str) -> None:
        self.verdict.flag(risk, reason)

    def not_read_only(self) -> None:
        self.ro = False

    def positional_values(self) -> list[str]:
        return [w.value if w.value is not None else w.raw for w in self.positionals()]

    def option_value(self, *names: str) -> Word | None:
        """The value of ``-o VALUE``, ``-oVALUE`` or ``--output=VALUE``, if given."""
        for index, arg in enumerate(self.args):
            value = arg.value or ""
            for name in names:
                if value == name:
                    return self.args[index + 1] if index + 1 < len(self.args) else None
                if name.startswith("--") and value.startswith(name + "="):
                    return plain_word(value[len(name) + 1 :])
                if not name.startswith("--") and value.startswith(name) and len(value) > 2:
                    return plain_word(value[2:])
        return None

    def sub_judge(self, argv: list[Word], label: str) -> None:
        """Judge a command this one runs (find -exec, git bisect run) and fold it in."""
        if not argv:
            return
        if self.judge.depth >= MAX_NESTING:
            self.flag("high", f"{label}, nested too deeply to check")
            return
        inner = self.judge.argv(argv, NO_STDIN)
        if inner.risk != "low":
            self.flag(inner.risk, f"{label} {inner.program or 'a command'}")
        self.verdict.absorb(inner)

    def code(self, words: list[Word], label: str, floor: Risk) -> None:
        """Words a shell will parse again as code (``bash -c``, ``eval``, ``watch``)."""
        self.not_read_only()
        self.judge.code_words(self.verdict, words, label, floor)

    def sub_call(self, key: str, args: list[Word]) -> None:
        """Apply another program's rules to part of this argv (``python -m pip install``)."""
        self.judge.rate(Call(self.judge, self.verdict, key, key, args, self.stdin))


Rule = Callable[[Call], None]
"""A rule reads a call and flags its verdict; it returns nothing."""

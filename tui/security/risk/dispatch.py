"""Which rules speak for which program, and the one place they are applied.

A program's rules run in order: the rule for what its name does, then the rule for what its
flags, builtins or repository config can do.
"""

from __future__ import annotations

from tui.security.risk.call import Call, Rule
from tui.security.risk.program_names import SIMPLE, unvetted_path
from tui.security.risk.rules import (
    code,
    files,
    flags,
    git,
    git_repo,
    packages,
    platforms,
    shell_builtins,
    system,
)
from tui.security.risk.tables.programs import ALSO_KNOWN, READ_ONLY
from tui.security.risk.tables.wrappers import WRAPPER_RISK, WRAPPERS

_FIRST: dict[str, Rule] = {
    **files.RULES,
    **system.RULES,
    **code.RULES,
    **git.RULES,
    **platforms.RULES,
    **packages.RULES,
}
_THEN: dict[str, Rule] = {**flags.RULES, **shell_builtins.RULES, **git_repo.RULES}

RULES: dict[str, tuple[Rule, ...]] = {
    name: tuple(rule for rule in (_FIRST.get(name), _THEN.get(name)) if rule is not None)
    for name in {*_FIRST, *_THEN}
}
"""Program key → the rules that judge it, in order."""

KNOWN: frozenset[str] = frozenset({*READ_ONLY, *SIMPLE, *RULES, *WRAPPERS, *ALSO_KNOWN, "#"})
"""Every program name some table or rule speaks for; any other name is "unknown"."""


def apply_rules(call: Call) -> None:
    """The dispatch: the program's table entry and specific rule, then read-only-ness."""
    key = call.key
    call.ro = key in READ_ONLY or (key == "#" and call.judge.zsh_reading)
    simple = SIMPLE.get(key)
    if simple is not None:
        call.flag(*simple)
    if key in WRAPPER_RISK and key not in ("sudo", "doas"):
        risk, reason = WRAPPER_RISK[key]
        call.flag(risk, reason.format(call.program))
    for rule in RULES.get(key, ()):
        rule(call)
    if call.program in call.judge.functions:
        pass  # a function defined in this command: its body was judged where it was defined
    elif key not in KNOWN or unvetted_path(call.program_word):
        where = "" if key in KNOWN else ", so what it does is unknown"
        call.flag("unknown", f"{call.program_word} is not a program this check knows{where}")
        call.ro = False
    if not call.ro:
        call.verdict.read_only = False

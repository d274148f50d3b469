"""The judge: rates one argv (wrappers first, then the program's rules), environment
assignments, and strings that a shell will parse again.

It holds what the walk has learnt so far (the directory after a ``cd``, the functions defined)
and is what a rule talks to through ``call.judge``. Re-reading a shell string is handed back to
the walker that owns this judge (``read_again``), so this module never imports the walker.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.security.risk.call import MAX_NESTING, Call
from tui.security.risk.context import RiskContext, secret_path
from tui.security.risk.dispatch import KNOWN, apply_rules
from tui.security.risk.program_names import basename, program_key
from tui.security.risk.redirects import REDIRECTS
from tui.security.risk.source import Source, shorten
from tui.security.risk.tables.paths import CREDENTIALS
from tui.security.risk.tables.programs import CODE_LOADING_VARS, COMMAND_VARS, FETCHERS, PATH_VARS
from tui.security.risk.tables.wrappers import WRAPPER_RISK
from tui.security.risk.unwrap import peel
from tui.security.risk.verdict import Risk, SegmentRisk, Stdin, Verdict, max_risk
from tui.security.risk.words import Word, command_words, make_word, plain_word
from tui.security.risk.write_targets import judge_write_target
from tui.security.secrets import SECRET_PATHS

if TYPE_CHECKING:
    from tree_sitter import Node

ReadAgain = Callable[[str], tuple[list[SegmentRisk], str | None]]

_LONE_VARIABLE = re.compile(
    r"\$(?!HOME\b|\{HOME\})(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)"
)
"""A word that is one variable (not ``$HOME``): a value, not a place."""
"""Parse and judge a string as shell code in the same place: its segments and parse error."""


class Judge:
    """Rates argvs and shell strings for one walk; the ``Analyst`` that rules talk to."""

    def __init__(
        self, src: Source, depth: int, context: RiskContext | None, read_again: ReadAgain
    ) -> None:
        self.src = src
        self.depth = depth
        self.context = context
        self.cwd = context.cwd if context is not None else None
        """Where relative paths point; None after a ``cd`` this check cannot follow."""
        self.moved = False
        """A ``cd`` (or the like) ran earlier in the command: git's repository may differ."""
        self.zsh_reading = False
        """This is the second reading of a command with comments, as zsh would run it."""
        self.functions: set[str] = set()
        """Functions defined so far in this command: calling one runs its body."""
        self._read_again = read_again

    @property
    def secret_places(self) -> tuple[str, ...]:
        return self.context.secrets if self.context is not None else SECRET_PATHS

    def knows(self, name: str) -> bool:
        return name in KNOWN

    def rate(self, call: Call) -> None:
        apply_rules(call)

    def assignment(self, verdict: Verdict, node: Node) -> None:
        """``NAME=value`` before a command or on its own."""
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self.src.of(name_node) if name_node is not None else ""
        value = make_word(self.src, value_node) if value_node is not None else plain_word("")
        self.judge_env(verdict, name, value)

    def judge_env(self, verdict: Verdict, name: str, value: Word) -> None:
        """Some variables make the next program load or run code of the setter's choosing."""
        upper = name.upper()
        if upper in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES"):
            self.moved = True  # git now reads another repository's config
            verdict.flag("medium", f"{name} points git at a repository whose config is not checked")
        if upper in CODE_LOADING_VARS or upper.startswith("GIT_CONFIG"):
            verdict.flag("high", f"setting {name} can make programs load or run arbitrary code")
        elif upper in COMMAND_VARS:
            words = (value.value or "").split()
            neutral = value.value is not None and (
                not words
                or (words[0] in ("cat", "less", "more") and all(w[0] == "-" for w in words[1:]))
            )
            floor: Risk = "high" if upper.startswith("GIT_") and not neutral else "low"
            if value.value is None:
                why = f"{name} names a command chosen at run time"
                verdict.flag(max_risk("medium", floor), why)
            elif value.value.strip():
                self.nested(verdict, value.value, f"{name} is run as a command", floor)
        elif upper in ("HISTFILE", "SAVEHIST_FILE"):
            # The shell writes every later command line there: ~/.ssh/authorized_keys, say.
            judge_write_target(
                verdict, value, f"{name} makes the shell write history to", redirect=True
            )
        elif upper in PATH_VARS:
            verdict.flag("medium", f"changing {name} changes which programs or libraries run")

    def nested(
        self, verdict: Verdict, code: str, label: str, floor: Risk, *, announce: bool = True
    ) -> None:
        """Judge a string that a shell will parse again, as the commands it contains."""
        if self.depth >= MAX_NESTING:
            verdict.flag("high", f"{label}, nested too deeply to check")
            return
        segments, error = self._read_again(code)
        verdict.flag(floor, label if announce else "")
        for segment in segments:
            for reason in segment.reasons:
                verdict.flag(segment.risk, reason)
            verdict.flag(segment.risk, "")
            for place in segment.secrets:
                verdict.secret(place)
            if not segment.read_only:
                verdict.read_only = False
        if error is not None:
            verdict.flag("medium", f"{label} with a syntax error ({error})")

    def code_words(self, verdict: Verdict, words: list[Word], label: str, floor: Risk) -> None:
        """Words run as shell code: literal → parse them; built at run time → injection risk."""
        if not words:
            verdict.flag(floor, label)
            return
        values = [w.value for w in words]
        if all(v is not None for v in values):
            self.nested(verdict, " ".join(v for v in values if v is not None), label, floor)
            return
        if any(w.node is not None and self.contains_fetch(w.node) for w in words):
            verdict.flag("high", "runs a network download as shell code")
        verdict.flag("high", f"{label} built at run time, so it could contain any command")
        self.nested(verdict, " ".join(w.approx for w in words), label, floor, announce=False)

    def contains_fetch(self, node: Node) -> bool:
        """Does this subtree run curl, wget or the like (its output then being untrusted)?"""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "command":
                parts = [
                    c
                    for c in current.named_children
                    if c.type not in REDIRECTS and c.type != "variable_assignment"
                ]
                words = command_words(self.src, parts)
                index = peel(words, 0)[0]
                if index < len(words) and program_key(words[index].value or "") in FETCHERS:
                    return True
            stack.extend(current.named_children)
        return False

    def secret_word(self, verdict: Verdict, word: Word) -> None:
        """A word naming a secret place (``~/.ssh/id_rsa``, ``if=/proc/1/environ``).

        A word that is one variable and nothing else (``$SSH_CONNECTION``) names no place of
        its own: read as a path it would be "any name in the current folder", a secret read
        wherever that folder is a home — so ``echo $SSH_CONNECTION`` would be low on this
        machine and high over SSH, whose shell starts at home. Its value is unknown either
        way; a variable inside a path (``/proc/$PPID/environ``) still counts as any name.
        """
        text = word.value if word.value is not None else word.approx
        home = self.context.home if self.context is not None else None
        for candidate in (text, text.partition("=")[2]):
            if _LONE_VARIABLE.fullmatch(candidate.strip("\"'")):
                continue
            if candidate and (candidate[0] in "/~$" or self.cwd):
                place = secret_path(candidate, self.cwd, home, self.secret_places)
                if place is not None:
                    verdict.secret(place)

    def argv(self, argv: list[Word], stdin: Stdin) -> Verdict:
        """Rate one argv: wrappers first, then the rule for the program they run."""
        verdict = Verdict(read_only=True)
        index, wrappers, env = peel(argv, 0)
        for name, value in env:
            self.judge_env(verdict, name, value)
        for word in argv[1:index]:  # a wrapper's own options read files too (xargs -a F)
            self.secret_word(verdict, word)
        for wrapper in wrappers:
            risk, reason = WRAPPER_RISK.get(wrapper, ("low", ""))
            verdict.flag(risk, reason.format(wrapper))
        if index >= len(argv):
            return verdict
        word = argv[index]
        if word.value is None or word.pattern or not word.value:
            verdict.program = None
            why = "globbing or brace expansion" if word.value is not None else "an expansion"
            name = shorten(word.raw)
            verdict.flag("high", f"the command name {name!r} comes from {why} at run time")
            for arg in argv[index + 1 :]:
                self.secret_word(verdict, arg)
            return verdict
        program = basename(word.value)
        verdict.program = program
        for arg in argv[index + 1 :]:
            if arg.value is not None and CREDENTIALS.search(arg.value):
                verdict.flag("medium", f"touches credentials ({shorten(arg.value)})")
            self.secret_word(verdict, arg)
        call = Call(self, verdict, program_key(word.value), program, argv[index + 1 :], stdin)
        call.program_word = word.value
        apply_rules(call)
        return verdict

"""How dangerous a shell command is, segment by segment, before a person is asked to approve it.

The approval modal shows a person a risk label and the reasons for it, and the policy uses the
same verdict to decide which permission a command needs. A label that is too low is the failure
that matters: a person who is told "low" approves without reading. So this module:

- parses with a real shell grammar (tree-sitter-bash) rather than regexes, because quoting,
  ``$(…)``, backticks, here-documents and line continuations are exactly where a regex is fooled;
- sees through the disguises a command name can wear (``"rm"``, ``\\rm``, ``/bin/rm``,
  ``FOO=1 rm``, ``sudo``/``env``/``timeout``/``xargs``/``nice`` … wrappers);
- judges code-running escapes (``bash -c``, ``eval``, ``find -exec``, ``git -c``, ``python -c``)
  by what they run, parsing shell strings recursively and rating opaque code high;
- errs towards the higher label whenever it cannot tell (a command name computed at run time,
  a syntax error, a string built from variables that a shell will parse again);
- never raises: whatever goes wrong, the answer is a conservative "high", because the caller is
  a security check and an exception there would either crash the agent or be swallowed.

Each simple command is one segment, with its exact source text, because the policy grants and
matches rules per segment: a person who allows ``touch a`` must not thereby allow ``rm -rf b``.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from tui.security.gitconfig import config_stamp
from tui.security.risk_context import RiskContext, secret_path
from tui.security.secrets import SECRET_PATHS

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = [
    "RISK_ORDER",
    "CommandRisk",
    "Risk",
    "RiskContext",
    "SegmentRisk",
    "assess_command",
    "max_risk",
]

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
        segments, parse_error = _Analysis(command, depth=0, context=context).run()
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


def _names(text: str) -> frozenset[str]:
    """A set of names written as one string, so that the rule tables stay readable."""
    return frozenset(text.split())


# -- parsing ---------------------------------------------------------------------------------

_PARSER: Parser | None = None
_MAX_NESTING = 8
"""How many shell strings deep (``bash -c "eval '…'"``) we follow before giving up as high."""


def _parser() -> Parser:
    """One parser for the process: building the language is the slow part, parsing is cheap."""
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


class _Source:
    """The command as bytes for tree-sitter, mapped back to exact ``str`` slices.

    Every non-ASCII character reaches the parser as ``x``. tree-sitter-bash's scanner passes
    the current character to ``isalpha``/``isdigit``, which index a 256-entry table: a code
    point above 255 reads out of bounds and crashed the process under fuzzing. ``x`` is what
    bash makes of such characters anyway (word characters: bash splits words only on
    space, tab and newline), and with one byte per character the parser's byte offsets are
    the ``str`` indices, so segment texts are still exact substrings of the original.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = (text if text.isascii() else _NON_ASCII.sub("x", text)).encode("ascii")

    def slice(self, start: int, end: int) -> str:
        return self.text[start:end]

    def of(self, node: Node) -> str:
        return self.slice(node.start_byte, node.end_byte)


_NON_ASCII = re.compile("[^\x00-\x7f]")


def _short(text: str, limit: int = 60) -> str:
    """Source text quoted in a reason, cut so that one reason stays one line."""
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- words -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Word:
    """One shell word: its literal value when it has one, and how it was written."""

    value: str | None
    """The word after quote removal; None when it depends on an expansion at run time."""
    raw: str
    """The source text."""
    approx: str
    """The value with run-time parts left as written: what a shell string would re-parse."""
    pattern: bool = False
    """Unquoted glob or brace characters: the shell may turn it into other words."""
    node: Node | None = None


def _word(value: str) -> _Word:
    return _Word(value=value, raw=value, approx=value)


_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
_GLOB = re.compile(r"[*?\[{]")
_ANSI_C = re.compile(
    r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL
)
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}


def _unescape_word(text: str) -> str:
    """Backslash removal in an unquoted word; a backslash-newline joins lines."""
    return _ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_dq(text: str) -> str:
    return _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _decode_ansi_c(body: str) -> str:
    """``$'\\x72m'`` is ``rm``: decoded here so that the disguise does not work."""

    def one(match: re.Match[str]) -> str:
        esc = match.group(1)
        head = esc[0]
        if head in "xuU" and len(esc) > 1:
            return chr(min(int(esc[1:], 16), 0x10FFFF))
        if head.isdigit() and head in "01234567":
            return chr(int(esc, 8))
        if head == "c" and len(esc) == 2:
            return chr(ord(esc[1]) & 0x1F)
        return _ANSI_SIMPLE.get(esc, esc)

    return _ANSI_C.sub(one, body)


_UNQUOTED_NESTED = frozenset({"concatenation", "command_name"})


def _literal(src: _Source, node: Node) -> str | None:
    """The word's value after quote removal, or None when an expansion decides it."""
    kind = node.type
    if kind == "word":
        return _unescape_word(src.of(node))
    if kind == "number":
        return src.of(node)
    if kind == "raw_string":
        return src.of(node)[1:-1]
    if kind == "ansi_c_string":
        return _decode_ansi_c(src.of(node)[2:-1])
    if kind in ("string", "translated_string"):
        parts = []
        for child in node.named_children:
            if child.type != "string_content":
                return None
            parts.append(_unescape_dq(src.of(child)))
        return "".join(parts)
    if kind in _UNQUOTED_NESTED:
        values = [_literal(src, child) for child in node.named_children]
        if any(v is None for v in values):
            return None
        return "".join(v for v in values if v is not None)
    return None


def _approx(src: _Source, node: Node) -> str:
    """Like ``_literal`` but keeps expansions as written, for re-parsing as shell code."""
    value = _literal(src, node)
    if value is not None:
        return value
    kind = node.type
    if kind in ("string", "translated_string"):
        raw = src.of(node)
        inner = raw[2:-1] if kind == "translated_string" else raw[1:-1]
        return _unescape_dq(inner)
    if kind in _UNQUOTED_NESTED:
        return "".join(_approx(src, child) for child in node.named_children)
    return src.of(node)


def _is_pattern(src: _Source, node: Node) -> bool:
    """Unquoted ``* ? [ {`` in a word: globbing or brace expansion may change it entirely."""
    if node.type == "word":
        return bool(_GLOB.search(_ESCAPE.sub("", src.of(node))))
    if node.type in _UNQUOTED_NESTED:
        return any(_is_pattern(src, child) for child in node.named_children)
    return False


def _make_word(src: _Source, node: Node) -> _Word:
    return _Word(
        value=_literal(src, node),
        raw=src.of(node),
        approx=_approx(src, node),
        pattern=_is_pattern(src, node),
        node=node,
    )


def _join_words(first: _Word, second: _Word, raw: str) -> _Word:
    value = None if first.value is None or second.value is None else first.value + second.value
    return _Word(
        value=value,
        raw=raw,
        approx=first.approx + second.approx,
        pattern=first.pattern or second.pattern,
        node=first.node,
    )


def _words(src: _Source, nodes: Iterable[Node]) -> list[_Word]:
    """Words of a command, re-joining ``r\\<newline>m``, which tree-sitter splits but bash joins."""
    words: list[_Word] = []
    last_end = -1
    first_start = -1
    for node in nodes:
        word = _make_word(src, node)
        gap = src.data[last_end : node.start_byte] if words else b""
        if words and gap and not gap.replace(b"\\\n", b""):
            words[-1] = _join_words(words[-1], word, src.slice(first_start, node.end_byte))
        else:
            words.append(word)
            first_start = node.start_byte
        last_end = node.end_byte
    return words


# -- verdicts --------------------------------------------------------------------------------


@dataclass
class _Verdict:
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

    def absorb(self, other: _Verdict) -> None:
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
class _Stdin:
    """Where a command's standard input comes from: code fed to a shell is code that runs."""

    kind: Literal["none", "file", "pipe", "fetch", "heredoc", "herestring"] = "none"
    text: str | None = None
    dynamic: bool = False


_NO_STDIN = _Stdin()


# -- the tree walk ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    """What a statement inherits from where it sits in the tree."""

    functions: frozenset[str] = frozenset()
    pipe_input: Literal["pipe", "fetch"] | None = None
    in_pipeline: bool = False
    background: bool = False


@dataclass(frozen=True)
class _Task:
    node: Node
    ctx: _Ctx
    redirects: tuple[Node, ...] = ()
    """Redirections tree-sitter put on an enclosing statement that belong to this command."""
    span_end: int = 0
    inner: bool = False
    """A child of a command (its env assignments): not a statement of its own."""


_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_GLUED_NEWLINE = re.compile(r"(?<!\\)(?:\\\\)*\n")
"""A newline in an unquoted word that no backslash escapes: a command boundary."""
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_SKIP = frozenset({"comment", "heredoc_start", "heredoc_end", "heredoc_content"})


class _Analysis:
    """Walks one parse tree (iteratively: deep nesting must not blow the Python stack)."""

    def __init__(self, text: str, depth: int, context: RiskContext | None = None) -> None:
        self.depth = depth
        self.context = context
        self.cwd = context.cwd if context is not None else None
        """Where relative paths point; None after a ``cd`` this check cannot follow."""
        self.moved = False
        """A ``cd`` (or the like) ran earlier in the command: git's repository may differ."""
        self.zsh_reading = False
        """This is the second reading of a command with comments, as zsh would run it."""
        self.src = _Source(text)
        self.segments: list[SegmentRisk] = []
        self.functions: set[str] = set()
        """Functions defined so far in this command: calling one runs its body."""

    @property
    def secret_places(self) -> tuple[str, ...]:
        return self.context.secrets if self.context is not None else SECRET_PATHS

    def child(self, code: str) -> _Analysis:
        """An analysis of a string this command parses again, in the same place."""
        inner = _Analysis(code, self.depth + 1, self.context)
        inner.cwd, inner.moved = self.cwd, self.moved
        return inner

    def run(self) -> tuple[list[SegmentRisk], str | None]:
        if not self.src.data.strip():
            return [], None
        data = self.src.data.replace(b"\x00", b" ")
        tree = _parser().parse(data)
        root = tree.root_node
        stack = [_Task(root, _Ctx())]
        while stack:
            task = stack.pop()
            stack.extend(reversed(self._visit(task)))
        error = _describe_error(self.src, root) if root.has_error else None
        if error is not None:
            self._missing_segments(root)
        if b"\x00" in self.src.data:
            error = "the command contains NUL bytes" + (f"; {error}" if error else "")
        if error is not None:
            # What the parser could not read may still name a secret: any word of it counts.
            verdict = _Verdict()
            for token in re.split(r"[\s()<>;|&`\"'=]+", self.src.text):
                self.secret_word(verdict, _word(token))
            if verdict.secrets:
                self.segments.append(verdict.segment(self.src.text))
        if error is not None and max_risk(*(s.risk for s in self.segments)) == "low":
            reason = f"the shell parser could not read it: {error}"
            self.segments.append(SegmentRisk(self.src.text, "medium", (reason,), False, None))
        if self.context is None or self.context.shell == "zsh":
            self._comments_as_code(root)
        return self.segments, error

    def _comments_as_code(self, root: Node) -> None:
        """zsh without ``interactive_comments`` reads ``# ; rm -rf x`` as code, not a comment.

        We cannot vouch for every zsh pane, so the command is judged a second time with each
        comment's ``#`` escaped (what such a zsh does) and the worse reading counts.
        """
        comments = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "comment":
                comments.append(node)
            elif node.type != "heredoc_body":
                stack.extend(node.children)
        if not comments:
            return
        text = self.src.text
        for node in sorted(comments, key=lambda n: n.start_byte, reverse=True):
            text = text[: node.start_byte] + "\\" + text[node.start_byte :]
        bash = replace(self.context or RiskContext(), shell="bash")
        inner = _Analysis(text, self.depth + 1, bash)
        inner.zsh_reading = True
        segments, _ = inner.run()
        worst = max_risk(*(s.risk for s in segments)) if segments else "low"
        now = max_risk(*(s.risk for s in self.segments)) if self.segments else "low"
        secrets = {p for s in segments for p in s.secrets} - {
            p for s in self.segments for p in s.secrets
        }
        writes = not all(s.read_only for s in segments)
        if RISK_ORDER[worst] <= RISK_ORDER[now] and not secrets and not writes:
            return
        reasons = ["in a zsh without interactive_comments, the text after # runs as code"]
        reasons += [r for s in segments if s.risk == worst for r in s.reasons]
        start = min(n.start_byte for n in comments)
        self.segments.append(
            SegmentRisk(
                self.src.slice(start, len(self.src.text)),
                worst,
                tuple(dict.fromkeys(reasons)),
                False,
                None,
                tuple(sorted(secrets)),
            )
        )

    # -- dispatch ----------------------------------------------------------------------------

    def _visit(self, task: _Task) -> list[_Task]:
        node = task.node
        kind = node.type
        if kind == "command":
            return self._command(task)
        if kind == "redirected_statement":
            return self._redirected(task)
        if kind == "pipeline":
            return self._pipeline(task)
        if kind == "function_definition":
            return self._function(task)
        if kind in ("variable_assignment", "variable_assignments") and not task.inner:
            return self._assignments(task)
        if kind == "declaration_command":
            return self._declaration(task)
        if kind == "list" and task.redirects:
            tasks = self._children(node, task.ctx)
            if tasks:
                last = tasks[-1]
                tasks[-1] = replace(last, redirects=task.redirects, span_end=task.span_end)
                return tasks
        if kind in ("unset_command", "test_command"):
            self._emit_plain(node, "unset" if kind == "unset_command" else "[[")
            names = [self.src.of(c) for c in node.named_children]
            why = _risk_shell.unset_risk(names) if kind == "unset_command" else None
            if why is not None:
                verdict = _Verdict(program="unset")
                verdict.flag("medium", why)
                self.segments[-1] = verdict.segment(self.src.of(node))
        elif kind == "ERROR":
            self._error(task)
        if task.redirects:
            self._orphan_redirects(task.redirects, task.redirects[0].start_byte, task.span_end)
        ctx = task.ctx
        if kind in _SUBSTITUTIONS:
            opener = node.children[0].type if node.children else ""
            ctx = _Ctx(functions=ctx.functions, pipe_input="pipe" if opener == ">(" else None)
            redirects = [c for c in node.named_children if c.type in _REDIRECTS]
            if redirects:  # ``$(< file)``: bash's shorthand for ``$(cat file)``
                self._orphan_redirects(redirects, node.start_byte, node.end_byte, always=True)
        return self._children(node, ctx)

    def _children(self, node: Node, ctx: _Ctx) -> list[_Task]:
        """Named children, each knowing whether a following ``&`` sends it to the background."""
        children = node.children
        tasks = []
        for index, child in enumerate(children):
            if not child.is_named or child.type in _SKIP:
                continue
            nxt = children[index + 1] if index + 1 < len(children) else None
            background = nxt is not None and nxt.type == "&" and not nxt.is_named
            child_ctx = replace(ctx, background=True) if background else ctx
            tasks.append(_Task(child, child_ctx))
        return tasks

    # -- statements --------------------------------------------------------------------------

    def _command(self, task: _Task) -> list[_Task]:
        node, ctx = task.node, task.ctx
        env: list[Node] = []
        parts: list[Node] = []
        redirects: list[Node] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                env.append(child)
            elif child.type in _REDIRECTS:
                redirects.append(child)
            elif child.type != "comment":
                parts.append(child)
        redirects.extend(task.redirects)
        parts = self._split_glued_line(parts, node)
        words = [w for w in _words(self.src, parts) if w.raw or w.value]
        verdict = _Verdict(read_only=True)
        for assignment in env:
            self._judge_assignment(verdict, assignment)
        if words:
            judged = self.judge(words, self._stdin(redirects, ctx))
            verdict.program = judged.program
            verdict.absorb(judged)
        self._judge_redirects(verdict, redirects)
        self._fork_bomb(verdict, ctx)
        if verdict.program in self.functions and verdict.program not in ctx.functions:
            verdict.flag("low", f"calls the shell function {verdict.program} defined here")
            verdict.read_only = False
        end = max(node.end_byte, task.span_end)
        self.segments.append(verdict.segment(self.src.slice(node.start_byte, end)))
        inner_ctx = _Ctx(functions=ctx.functions)
        nested = [_Task(child, inner_ctx, inner=True) for child in node.named_children]
        return nested + [_Task(r, inner_ctx) for r in task.redirects]

    def _split_glued_line(self, parts: list[Node], node: Node) -> list[Node]:
        """tree-sitter glues ``ls<newline>\\rm -rf /`` into one command (a word that starts
        with a newline and a backslash); bash runs two. Judge the second line on its own."""
        for child in parts:
            if child.type not in ("word", "concatenation"):
                continue
            match = _GLUED_NEWLINE.search(self.src.of(child))
            if match is None:
                continue
            cut = child.start_byte + match.start()
            inner = self.child(self.src.slice(cut + 1, node.end_byte))
            inner.depth = self.depth
            segments, error = inner.run()
            self.segments.extend(segments)
            if error is not None:
                reason = f"the shell parser could not read it: {error}"
                text = self.src.slice(cut + 1, node.end_byte)
                self.segments.append(SegmentRisk(text, "medium", (reason,), False, None))
            return [p for p in parts if p.end_byte <= cut]
        return parts

    def _redirected(self, task: _Task) -> list[_Task]:
        node, ctx = task.node, task.ctx
        body = node.child_by_field_name("body")
        redirects = tuple(c for c in node.named_children if c.type in _REDIRECTS)
        redirects += task.redirects
        end = max(node.end_byte, task.span_end)
        if body is None:
            self._orphan_redirects(redirects, node.start_byte, end, always=True)
            return [_Task(r, ctx) for r in redirects]
        if body.type in ("command", "pipeline", "list"):
            # tree-sitter hangs ``a && b 2>x`` and ``a | b >x`` on the whole list or pipeline;
            # bash applies the redirection to the last command only.
            return [_Task(body, ctx, redirects=redirects, span_end=end)]
        if redirects:
            self._orphan_redirects(redirects, redirects[0].start_byte, end)
        return [_Task(body, ctx), *(_Task(r, ctx) for r in redirects)]

    def _pipeline(self, task: _Task) -> list[_Task]:
        node, ctx = task.node, task.ctx
        elements = [c for c in node.named_children if c.type not in _SKIP]
        fed = bool(node.children) and node.children[0].type in ("|", "|&")
        fetched = False
        tasks = []
        for index, element in enumerate(elements):
            pipe: Literal["pipe", "fetch"] | None = None
            if index > 0 or fed:
                pipe = "fetch" if fetched else "pipe"
            element_ctx = replace(ctx, pipe_input=pipe, in_pipeline=True)
            last = index == len(elements) - 1
            tasks.append(
                _Task(
                    element,
                    element_ctx,
                    redirects=task.redirects if last else (),
                    span_end=task.span_end if last else 0,
                )
            )
            fetched = fetched or self._contains_fetch(element)
        return tasks

    def _function(self, task: _Task) -> list[_Task]:
        name = task.node.child_by_field_name("name")
        ctx = task.ctx
        if name is not None:
            ctx = replace(ctx, functions=ctx.functions | {self.src.of(name)})
            self.functions.add(self.src.of(name))
            risk, reason = _risk_shell.function_risk(self.src.of(name))
            verdict = _Verdict(program=self.src.of(name))
            verdict.flag(risk, reason)
            self.segments.append(verdict.segment(self.src.of(task.node)))
        return self._children(task.node, ctx)

    def _assignments(self, task: _Task) -> list[_Task]:
        node = task.node
        verdict = _Verdict(read_only=True)
        items = [node] if node.type == "variable_assignment" else node.named_children
        for item in items:
            if item.type == "variable_assignment":
                self._judge_assignment(verdict, item)
        self.segments.append(verdict.segment(self.src.of(node)))
        return [_Task(item, _Ctx(functions=task.ctx.functions), inner=True) for item in items]

    def _declaration(self, task: _Task) -> list[_Task]:
        node = task.node
        keyword = node.children[0].type if node.children else "export"
        verdict = _Verdict(read_only=True, program=keyword)
        for child in node.named_children:
            if child.type == "variable_assignment":
                self._judge_assignment(verdict, child)
            elif child.type in ("word", "variable_name"):
                value = self.src.of(child)
                if value.startswith("-") and "f" in value and keyword in ("export", "readonly"):
                    verdict.flag("medium", f"{keyword} -f hands shell functions to later commands")
                elif _risk_shell._is_sensitive(value):
                    why = f"{keyword} {value} changes a variable later commands use"
                    verdict.flag("medium", why)
        self.segments.append(verdict.segment(self.src.of(node)))
        inner_ctx = _Ctx(functions=task.ctx.functions)
        return [_Task(child, inner_ctx, inner=True) for child in node.named_children]

    def _emit_plain(self, node: Node, program: str) -> None:
        verdict = _Verdict(read_only=True, program=program)
        self.segments.append(verdict.segment(self.src.of(node)))

    def _error(self, task: _Task) -> None:
        """A region the parser could not read: judge its loose words as a command anyway."""
        node = task.node
        verdict = _Verdict()
        loose = [c for c in node.named_children if c.type not in ("command", "comment", "ERROR")]
        words = [w for w in _words(self.src, loose) if w.value is not None and w.value.strip()]
        # A word glued to the line before it (``\n\\git``) is still the name ``git``.
        words = [replace(w, value=w.value.lstrip()) if w.value else w for w in words]
        if words:
            verdict.absorb(self.judge(words, _NO_STDIN))
        verdict.flag("medium", "the shell parser could not read this part")
        dangerous = self._dangerous_words(node)
        if dangerous:
            verdict.flag("high", f"it mentions {dangerous} in a part that could not be parsed")
        self.segments.append(verdict.segment(self.src.of(node)))

    def _dangerous_words(self, node: Node) -> str | None:
        """A high-risk program name anywhere in an unparsable region: assume it runs."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "word":
                for part in re.split(r"[\s,{}();|&]+", _unescape_word(self.src.of(current))):
                    if _KEY_RISK.get(_key(part)) == "high":
                        return _key(part)
            stack.extend(current.named_children)
        return None

    def _missing_segments(self, root: Node) -> None:
        """tree-sitter's MISSING nodes (an absent ``fi`` or quote) are errors with no region."""
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_missing:
                parent = node.parent or root
                reason = f"syntax error: missing {node.type!r}"
                text = self.src.of(parent)
                self.segments.append(SegmentRisk(text, "medium", (reason,), False, None))
            elif node.has_error:
                stack.extend(node.children)

    def _orphan_redirects(
        self, redirects: Iterable[Node], start: int, end: int, *, always: bool = False
    ) -> None:
        """Redirections on a group or loop (``{ …; } > /etc/x``) become a segment of their own."""
        verdict = _Verdict(read_only=True)
        self._judge_redirects(verdict, list(redirects))
        if always or verdict.risk != "low":
            self.segments.append(verdict.segment(self.src.slice(start, end)))

    def _fork_bomb(self, verdict: _Verdict, ctx: _Ctx) -> None:
        """A function that calls itself through a pipe or ``&`` multiplies until the box dies."""
        if verdict.program is None or verdict.program not in ctx.functions:
            return
        if ctx.in_pipeline or ctx.background:
            how = "in a pipeline" if ctx.in_pipeline else "in the background"
            verdict.flag("high", f"fork bomb: function {verdict.program} calls itself {how}")
        else:
            verdict.flag("medium", f"function {verdict.program} calls itself")

    # -- redirections and input --------------------------------------------------------------

    def _stdin(self, redirects: list[Node], ctx: _Ctx) -> _Stdin:
        stdin: _Stdin = _Stdin(ctx.pipe_input) if ctx.pipe_input else _NO_STDIN
        for redirect in redirects:
            if redirect.type == "heredoc_redirect":
                stdin = self._heredoc(redirect)
            elif redirect.type == "herestring_redirect":
                value = redirect.named_children[-1] if redirect.named_children else None
                if value is not None:
                    word = _make_word(self.src, value)
                    stdin = _Stdin("herestring", word.approx, word.value is None)
            elif _redirect_operator(redirect) == "<" and _descriptor(self.src, redirect) in (
                None,
                "0",
            ):
                target = redirect.child_by_field_name("destination")
                source = _literal(self.src, target) if target is not None else None
                remote = source is not None and _NETWORK_DEVICE.match(_normalise_path(source))
                stdin = _Stdin("fetch") if remote else _Stdin("file")
        return stdin

    def _heredoc(self, redirect: Node) -> _Stdin:
        start = body = None
        for child in redirect.named_children:
            if child.type == "heredoc_start":
                start = self.src.of(child)
            elif child.type == "heredoc_body":
                body = self.src.of(child)
        quoted = start is not None and any(q in start for q in "'\"\\")
        text = body or ""
        # tree-sitter misreads a body that starts with a backslash (as words, body empty):
        # the source between the start line and the end marker is the body, whatever it says.
        start_node = next((c for c in redirect.children if c.type == "heredoc_start"), None)
        end_node = next((c for c in redirect.children if c.type == "heredoc_end"), None)
        if start_node is not None:
            # No end marker: bash reads the body to the end of its input.
            stop = end_node.start_byte if end_node is not None else len(self.src.text)
            line_end = self.src.text.find("\n", start_node.end_byte)
            if 0 <= line_end < stop:
                text = self.src.slice(line_end + 1, stop)
        return _Stdin("heredoc", text, not quoted and ("$" in text or "`" in text))

    def _judge_redirects(self, verdict: _Verdict, redirects: list[Node]) -> None:
        pending = list(redirects)
        while pending:
            redirect = pending.pop(0)
            if redirect.type == "heredoc_redirect":
                pending.extend(c for c in redirect.named_children if c.type == "file_redirect")
            if redirect.type != "file_redirect":
                continue
            operator = _redirect_operator(redirect)
            target = redirect.child_by_field_name("destination")
            if target is None:
                continue
            if operator == "<":
                self.secret_word(verdict, _make_word(self.src, target))
                source = _literal(self.src, target)
                if source is not None and _CREDENTIALS.search(source):
                    verdict.flag("medium", f"reads credentials ({_short(source)})")
                if source is not None and _NETWORK_DEVICE.match(_normalise_path(source)):
                    verdict.flag("medium", f"reads from a network connection ({_short(source)})")
                continue
            if operator not in _WRITE_OPERATORS:
                continue
            word = _make_word(self.src, target)
            if operator in (">&", "<&") and (word.value or "").isdigit():
                continue
            verb = "appends to" if ">>" in operator else "writes to"
            _judge_write_target(verdict, word, verb, redirect=True)

    # -- environment assignments -------------------------------------------------------------

    def _judge_assignment(self, verdict: _Verdict, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self.src.of(name_node) if name_node is not None else ""
        value = _make_word(self.src, value_node) if value_node is not None else _word("")
        self.judge_env(verdict, name, value)

    def judge_env(self, verdict: _Verdict, name: str, value: _Word) -> None:
        """Some variables make the next program load or run code of the setter's choosing."""
        upper = name.upper()
        if upper in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES"):
            self.moved = True  # git now reads another repository's config
            verdict.flag("medium", f"{name} points git at a repository whose config is not checked")
        if upper in _CODE_LOADING_VARS or upper.startswith("GIT_CONFIG"):
            verdict.flag("high", f"setting {name} can make programs load or run arbitrary code")
        elif upper in _COMMAND_VARS:
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
            _judge_write_target(
                verdict, value, f"{name} makes the shell write history to", redirect=True
            )
        elif upper in _PATH_VARS:
            verdict.flag("medium", f"changing {name} changes which programs or libraries run")

    # -- shell strings -----------------------------------------------------------------------

    def nested(
        self, verdict: _Verdict, code: str, label: str, floor: Risk, *, announce: bool = True
    ) -> None:
        """Judge a string that a shell will parse again, as the commands it contains."""
        if self.depth >= _MAX_NESTING:
            verdict.flag("high", f"{label}, nested too deeply to check")
            return
        segments, error = self.child(code).run()
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

    def code_words(self, verdict: _Verdict, words: list[_Word], label: str, floor: Risk) -> None:
        """Words run as shell code: literal → parse them; built at run time → injection risk."""
        if not words:
            verdict.flag(floor, label)
            return
        values = [w.value for w in words]
        if all(v is not None for v in values):
            self.nested(verdict, " ".join(v for v in values if v is not None), label, floor)
            return
        if any(w.node is not None and self._contains_fetch(w.node) for w in words):
            verdict.flag("high", "runs a network download as shell code")
        verdict.flag("high", f"{label} built at run time, so it could contain any command")
        self.nested(verdict, " ".join(w.approx for w in words), label, floor, announce=False)

    def _contains_fetch(self, node: Node) -> bool:
        """Does this subtree run curl, wget or the like (its output then being untrusted)?"""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "command":
                parts = [
                    c
                    for c in current.named_children
                    if c.type not in _REDIRECTS and c.type != "variable_assignment"
                ]
                words = _words(self.src, parts)
                index = _peel(words, 0)[0]
                if index < len(words) and _key(words[index].value or "") in _FETCHERS:
                    return True
            stack.extend(current.named_children)
        return False

    # -- the judge ---------------------------------------------------------------------------

    def secret_word(self, verdict: _Verdict, word: _Word) -> None:
        """A word naming a secret place (``~/.ssh/id_rsa``, ``if=/proc/1/environ``)."""
        text = word.value if word.value is not None else word.approx
        home = self.context.home if self.context is not None else None
        for candidate in (text, text.partition("=")[2]):
            if candidate and (candidate[0] in "/~$" or self.cwd):
                place = secret_path(candidate, self.cwd, home, self.secret_places)
                if place is not None:
                    verdict.secret(place)

    def judge(self, argv: list[_Word], stdin: _Stdin) -> _Verdict:
        """Rate one argv: wrappers first, then the rule for the program they run."""
        verdict = _Verdict(read_only=True)
        index, wrappers, env = _peel(argv, 0)
        for name, value in env:
            self.judge_env(verdict, name, value)
        for word in argv[1:index]:  # a wrapper's own options read files too (xargs -a F)
            self.secret_word(verdict, word)
        for wrapper in wrappers:
            risk, reason = _WRAPPER_RISK.get(wrapper, ("low", ""))
            verdict.flag(risk, reason.format(wrapper))
        if index >= len(argv):
            return verdict
        word = argv[index]
        if word.value is None or word.pattern or not word.value:
            verdict.program = None
            why = "globbing or brace expansion" if word.value is not None else "an expansion"
            name = _short(word.raw)
            verdict.flag("high", f"the command name {name!r} comes from {why} at run time")
            for arg in argv[index + 1 :]:
                self.secret_word(verdict, arg)
            return verdict
        program = _basename(word.value)
        verdict.program = program
        for arg in argv[index + 1 :]:
            if arg.value is not None and _CREDENTIALS.search(arg.value):
                verdict.flag("medium", f"touches credentials ({_short(arg.value)})")
            self.secret_word(verdict, arg)
        call = _Call(self, verdict, _key(word.value), program, argv[index + 1 :], stdin)
        call.program_word = word.value
        _apply_rules(call)
        return verdict


def _describe_error(src: _Source, root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing:
            return f"missing {node.type!r}"
        if node.is_error:
            row, col = node.start_point
            snippet = src.of(node)[:40]
            return f"syntax error at line {row + 1}, column {col + 1} near {snippet!r}"
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return "syntax error"


_WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&", "<&"})


def _redirect_operator(node: Node) -> str | None:
    for child in node.children:
        if not child.is_named:
            return child.type
    return None


def _descriptor(src: _Source, node: Node) -> str | None:
    fd = node.child_by_field_name("descriptor")
    return src.of(fd) if fd is not None else None


# -- paths -----------------------------------------------------------------------------------

_HARMLESS_TARGETS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "-", "/dev/fd/1"}
)
_HARMLESS_PREFIXES = ("/dev/fd/", "/dev/shm/", "/proc/self/fd/", "/dev/pts/")
_BLOCK_DEVICE = re.compile(
    r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|mapper/|dm-|loop|md|sr|mem$|kmem$|port$)"
)
_SYSTEM_PREFIXES = (
    "/etc",
    "/boot",
    "/bin",
    "/sbin",
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/sys",
    "/proc",
    "/dev",
    "/root",
    "/var/lib",
    "/var/spool",
    "/var/log",
    "/System",
    "/Library",
    "/private/etc",
    "/private/var",
)
_STARTUP_FILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".gitconfig",
    ".netrc",
    ".pypirc",
    ".npmrc",
    ".inputrc",
    "config.fish",
)
_NETWORK_DEVICE = re.compile(r"^/dev/(tcp|udp)/")
"""bash's pseudo-devices: redirecting to one opens a socket."""
_CREDENTIALS = re.compile(
    r"(^|/)\.ssh/(id_[^/]*|[^/]*_(rsa|dsa|ecdsa|ed25519))(?<!\.pub)$"
    r"|(^|/)\.(aws/credentials|netrc|pgpass|git-credentials|pypirc|npmrc)$"
    r"|(^|/)\.(docker/config\.json|kube/config|config/gh/hosts\.yml)$"
    r"|(^|/)\.gnupg/|^/etc/(g?shadow|sudoers)$"
)
"""Files whose contents are secrets: reading one hands it to the model and its provider."""
_SECRET_DIRS = ("/.ssh/", "/.gnupg/", "/.aws/", "/.kube/", "/.docker/", "/.config/autostart/")


def _normalise_path(path: str) -> str:
    path = re.sub(r"/+", "/", path)
    path = re.sub(r"(^|/)\./", r"\1", path)
    return path.rstrip("/") or ("/" if path.startswith("/") else path)


def _system_path(path: str) -> str | None:
    """Why writing to ``path`` endangers the machine or the user's account, if it does."""
    norm = _normalise_path(path)
    if norm in _HARMLESS_TARGETS or norm.startswith(_HARMLESS_PREFIXES):
        return None
    if _BLOCK_DEVICE.match(norm):
        return "a block device"
    if norm == "/":
        return "the root directory"
    for prefix in _SYSTEM_PREFIXES:
        if norm == prefix or norm.startswith(prefix + "/"):
            return "a system path"
    home_like = norm.startswith(("~", "$HOME", "${HOME}", "/home/", "/Users/", "/root"))
    name = norm.rsplit("/", 1)[-1]
    if home_like and (name in _STARTUP_FILES or name in (".ssh", ".gnupg", ".aws")):
        return "a shell startup or credentials file"
    if any(d in norm + "/" for d in _SECRET_DIRS):
        return "a credentials or autostart directory"
    return None


def _harmless_target(path: str) -> bool:
    norm = _normalise_path(path)
    return norm in _HARMLESS_TARGETS or norm.startswith(_HARMLESS_PREFIXES)


def _judge_write_target(
    verdict: _Verdict, word: _Word, verb: str, *, redirect: bool, replaces: bool = False
) -> None:
    """Writing into a system path is high; into anything else medium; to /dev/null nothing.

    ``redirect`` says the write is the segment's only sign of acting, so it needs a reason of
    its own. ``replaces`` is for commands that swap the path itself (mv, ln, install, rsync)
    rather than write through it: ``mv x /dev/null`` as root replaces the device node.
    """
    path = word.value if word.value is not None else word.approx
    if word.value is not None and _harmless_target(path):
        if replaces:
            verdict.flag("high", f"{verb} {path}, replacing a device node")
        return
    what = _system_path(path)
    if _NETWORK_DEVICE.match(_normalise_path(path)):
        verdict.flag("high", f"{verb} {path}, a network connection (a classic reverse shell)")
    elif what == "a block device":
        verdict.flag("high", f"{verb} the block device {path} (can destroy a disk)")
    elif what is not None:
        verdict.flag("high", f"{verb} {path}, {what}")
    elif word.value is None:
        verdict.flag("medium", f"{verb} a file named at run time ({_short(word.raw)})")
    elif redirect:
        verdict.flag("medium", f"{verb} {path}")
    else:
        verdict.read_only = False


# -- wrappers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _WrapperSpec:
    """How to find the command a wrapper runs: which options take a value, what stops it."""

    with_arg: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False
    stop_letters: frozenset[str] = frozenset()
    stop_long: frozenset[str] = frozenset()


def _spec(
    with_arg: str = "",
    positionals: int = 0,
    *,
    assignments: bool = False,
    stop: str = "",
    stop_long: str = "",
) -> _WrapperSpec:
    return _WrapperSpec(
        with_arg=frozenset(with_arg.split()),
        positionals=positionals,
        assignments=assignments,
        stop_letters=frozenset(stop),
        stop_long=frozenset(stop_long.split()),
    )


_SUDO = _spec(
    "-u -g -p -C -D -r -t -T -U -R -h --user --group --prompt --close-from --chdir --role "
    "--type --command-timeout --other-user --host",
    assignments=True,
    stop="ieslvKV",
    stop_long="--login --shell --edit --list --validate --version --help",
)
_WRAPPERS: dict[str, _WrapperSpec] = {
    "command": _spec(stop="vV"),
    "builtin": _spec(),
    "exec": _spec("-a"),
    "env": _spec(
        "-u -C --unset --chdir",
        assignments=True,
        stop="S",
        stop_long="--split-string --help --version",
    ),
    "nice": _spec("-n --adjustment"),
    "nohup": _spec(),
    "time": _spec("-f -o --format --output"),
    "timeout": _spec("-s -k --signal --kill-after", 1),
    "stdbuf": _spec("-i -o -e --input --output --error"),
    "ionice": _spec("-c -n -p -P -u --class --classdata", stop="pPu"),
    "taskset": _spec("", 1, stop="p"),
    "chrt": _spec("", 1, stop="p"),
    "setsid": _spec(),
    "unbuffer": _spec(),
    "caffeinate": _spec("-t -w"),
    "strace": _spec("-o -e -p -s -u -E -P -I -a -b -X -O -S", stop="p"),
    "ltrace": _spec("-o -e -p -s -u -n -a -A -D -F -x", stop="p"),
    "valgrind": _spec(),
    "xargs": _spec(
        "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs --max-chars "
        "--max-lines --process-slot-var"
    ),
    "sudo": _SUDO,
    "doas": _spec("-u -C", stop="sL"),
    "pkexec": _spec("--user"),
    "run0": _spec("-u -g -D --user --group --chdir --setenv --unit --description"),
    "chroot": _spec("--userspec --groups", 1),
    "busybox": _spec(),
    "toybox": _spec(),
    "coproc": _spec(),
    "noglob": _spec(),
    "nocorrect": _spec(),
    "proxychains": _spec("-f"),
    "proxychains4": _spec("-f"),
    "torsocks": _spec(),
    "catchsegv": _spec(),
    "then": _spec(),
    "do": _spec(),
    "else": _spec(),
    "elif": _spec(),
    "!": _spec(),
}
_WRAPPER_RISK: dict[str, tuple[Risk, str]] = {
    "sudo": ("high", "{} runs the command as root"),
    "doas": ("high", "{} runs the command as root"),
    "pkexec": ("high", "{} runs the command as root"),
    "run0": ("high", "{} runs the command as root"),
    "chroot": ("high", "{} changes the root directory and needs root"),
}


def _is_assignment(value: str) -> bool:
    return bool(re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", value))


def _skip_options(argv: list[_Word], start: int, spec: _WrapperSpec) -> tuple[int, bool]:
    """Index of the wrapped command, and whether an option means there is none."""
    index = start
    positionals = spec.positionals
    options_done = False
    stop = False
    while index < len(argv):
        value = argv[index].value
        if value is None:
            break
        if not options_done and value == "--":
            options_done = True
        elif not options_done and value == "-":
            pass  # env's old spelling of -i; meaningless as a command name anyway
        elif not options_done and value.startswith("-") and len(value) > 1:
            name = value.split("=", 1)[0]
            if value.startswith("--"):
                stop = stop or name in spec.stop_long
                if name in spec.with_arg and "=" not in value:
                    index += 1
            else:
                stop = stop or bool(spec.stop_letters & set(value[1:]))
                if value in spec.with_arg:
                    index += 1
        elif spec.assignments and _is_assignment(value) and positionals == spec.positionals:
            pass
        elif positionals > 0:
            positionals -= 1
            options_done = True
        else:
            break
        index += 1
    return index, stop


def _peel(argv: list[_Word], start: int) -> tuple[int, list[str], list[tuple[str, _Word]]]:
    """Strip wrappers (sudo, env, timeout, xargs …) to reach the command that really runs."""
    index = start
    wrappers: list[str] = []
    env: list[tuple[str, _Word]] = []
    while index < len(argv):
        word = argv[index]
        if word.value is None or word.pattern:
            break
        key = _key(word.value)
        spec = _WRAPPERS.get(key)
        if spec is None:
            break
        inner, stop = _skip_options(argv, index + 1, spec)
        if stop or inner >= len(argv):
            break
        if spec.assignments:
            for w in argv[index + 1 : inner]:
                if w.value is not None and _is_assignment(w.value) and not w.value.startswith("-"):
                    name, _, val = w.value.partition("=")
                    env.append((name, _word(val)))
        wrappers.append(key)
        index = inner
    return index, wrappers, env


# -- program names ---------------------------------------------------------------------------

_VERSIONED = re.compile(
    r"^(python|pypy|pip|perl|ruby|php|lua|node|pydoc|bash|gawk|go|gem|irb)[0-9][0-9.\-]*$"
)
_ALIASES = {
    "pypy": "python",
    "pypy3": "python",
    "python-dbg": "python",
    "pip3": "pip",
    "nodejs": "node",
    "gawk": "awk",
    "mawk": "awk",
    "nawk": "awk",
    "busybox-awk": "awk",
    "apt-get": "apt",
    "aptitude": "apt",
    "microdnf": "dnf",
    "yum": "dnf",
    "mamba": "conda",
    "micromamba": "conda",
    "egrep": "grep",
    "fgrep": "grep",
    "podman": "docker",
    "nerdctl": "docker",
    "ncat": "nc",
    "netcat": "nc",
    "perl5": "perl",
    "mke2fs": "mkfs",
    "ip6tables": "iptables",
    "iptables-restore": "iptables",
    "ip6tables-restore": "iptables",
    "iptables-legacy": "iptables",
    "iptables-nft": "iptables",
    "pnpx": "npx",
    "bunx": "npx",
    "uvx": "npx",
    "pwsh": "powershell",
    "sha256sum": "md5sum",
    "sha1sum": "md5sum",
    "sha512sum": "md5sum",
}


def _basename(value: str) -> str:
    stripped = value.rstrip("/")
    return stripped.rsplit("/", 1)[-1] if stripped else value


def _key(value: str) -> str:
    """The rule-table name: basename, lower case (macOS file systems ignore case), unversioned."""
    low = _basename(value).lower()
    match = _VERSIONED.match(low)
    if match:
        low = match.group(1)
    if low.startswith("mkfs"):
        return "mkfs"
    return _ALIASES.get(low, low)


# -- rules -----------------------------------------------------------------------------------


@dataclass
class _Call:
    """One program invocation being judged: the rule functions read and flag this."""

    analysis: _Analysis
    verdict: _Verdict
    key: str
    program: str
    args: list[_Word]
    stdin: _Stdin
    ro: bool = False
    """Is the program, as called, one that only reads? Rules refine the list's default."""
    program_word: str = ""
    """The program as written (``./ls``, ``/usr/bin/ls``), for where it comes from."""

    def values(self) -> list[str]:
        return [a.value if a.value is not None else a.raw for a in self.args]

    def options(self) -> list[str]:
        return [v for v in self.values() if v.startswith("-") and v != "-"]

    def positionals(self) -> list[_Word]:
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

    def option_value(self, *names: str) -> _Word | None:
        """The value of ``-o VALUE``, ``-oVALUE`` or ``--output=VALUE``, if given."""
        for index, arg in enumerate(self.args):
            value = arg.value or ""
            for name in names:
                if value == name:
                    return self.args[index + 1] if index + 1 < len(self.args) else None
                if name.startswith("--") and value.startswith(name + "="):
                    return _word(value[len(name) + 1 :])
                if not name.startswith("--") and value.startswith(name) and len(value) > 2:
                    return _word(value[2:])
        return None

    def sub_judge(self, argv: list[_Word], label: str) -> None:
        """Judge a command this one runs (find -exec, git bisect run) and fold it in."""
        if not argv:
            return
        if self.analysis.depth >= _MAX_NESTING:
            self.flag("high", f"{label}, nested too deeply to check")
            return
        inner = self.analysis.judge(argv, _NO_STDIN)
        if inner.risk != "low":
            self.flag(inner.risk, f"{label} {inner.program or 'a command'}")
        self.verdict.absorb(inner)

    def code(self, words: list[_Word], label: str, floor: Risk) -> None:
        """Words a shell will parse again as code (``bash -c``, ``eval``, ``watch``)."""
        self.not_read_only()
        self.analysis.code_words(self.verdict, words, label, floor)

    def sub_call(self, key: str, args: list[_Word]) -> None:
        """Apply another program's rules to part of this argv (``python -m pip install``)."""
        _apply_rules(_Call(self.analysis, self.verdict, key, key, args, self.stdin))


_Rule = Callable[[_Call], None]


_KEY_RISK: dict[str, Risk] = {}
_SIMPLE: dict[str, tuple[Risk, str]] = {}


def _table(risk: Risk, reason: str, names: str) -> None:
    for name in names.split():
        _SIMPLE[name] = (risk, reason.replace("{}", name))
        _KEY_RISK[name] = risk


_table("high", "{} deletes files", "rm unlink srm")
_table("high", "{} destroys file contents", "shred wipe")
_table("high", "{} writes raw bytes and can overwrite whole disks", "dd")
_table(
    "high",
    "{} formats or repartitions disks",
    "mkfs mkswap fdisk sfdisk cfdisk gdisk sgdisk parted wipefs blkdiscard hdparm cryptsetup",
)
_table("high", "{} runs commands as another user", "su runuser")
_table("high", "{} edits files as root", "sudoedit")
_table("high", "{} changes file permissions or ownership", "chmod chown chgrp chattr setfacl")
_table("high", "{} mounts or unmounts file systems", "mount umount losetup swapon swapoff")
_table("high", "{} changes the firewall", "iptables nft ufw firewall-cmd pfctl")
_table("high", "{} runs commands on or copies files to another machine", "ssh scp sftp")
_table("high", "{} copies credentials to another machine", "ssh-copy-id")
_table("high", "{} stops or restarts the machine", "shutdown reboot halt poweroff init telinit")
_table("high", "{} replaces the running kernel", "kexec")
_table("high", "{} kills every process with a matching name", "killall pkill")
_table("high", "{} cuts files short, destroying their contents", "truncate")
_table(
    "high",
    "{} changes user accounts or passwords",
    "useradd userdel usermod groupadd groupdel groupmod passwd chpasswd visudo adduser deluser",
)
_table("high", "{} loads or unloads kernel modules", "insmod rmmod modprobe")
_table("medium", "{} removes directories", "rmdir")
_table("medium", "{} copies files and may overwrite them", "cp")
_table("medium", "{} moves or renames files and may overwrite them", "mv")
_table("medium", "{} creates directories", "mkdir")
_table("medium", "{} creates files or changes their timestamps", "touch")
_table("medium", "{} creates links and may replace files", "ln")
_table("medium", "{} installs files", "install")
_table("medium", "{} renames files", "rename")
_table("medium", "{} changes files", "patch")
_table("medium", "{} runs build recipes, which can run any command", "make gmake ninja")
_table("medium", "{} opens files or URLs in other programs", "open xdg-open")
_table("medium", "{} schedules commands to run later", "at batch")
_table("medium", "{} writes keys", "ssh-keygen ssh-add")
_table("medium", "{} downloads and runs a package", "npx")
_table("medium", "{} changes system settings", "defaults launchctl")
_table("medium", "{} copies files and may overwrite them", "rsync")
_table("medium", "{} writes files", "split csplit")
_table("medium", "{} publishes packages", "twine")

_READ_ONLY = _names(
    """
    ls ll la dir vdir cat tac pwd echo printf grep rg ag ack head tail wc find stat file which
    whereis type date env printenv id whoami groups uname uptime ps df du free tree cut tr diff
    cmp comm basename dirname realpath readlink true false : test [ seq sleep nl od xxd hexdump
    strings md5sum cksum b2sum shasum base64 base32 column jq rev fold fmt paste join expand
    unexpand look locate whatis man apropos help pgrep lsof netstat ss lscpu lsblk lsusb lspci
    lsmod nproc arch tty locale cal ncal vmstat iostat dmesg cd pushd popd dirs wait read exit
    return shift set shopt umask ulimit hash history times caller getopts jobs fc sort uniq less
    more bat zcat zgrep bzcat xzcat zless lz4cat tput stty clear logname users who w last host
    dig nslookup ping traceroute tracepath whois getent sum nm objdump readelf ldd size sw_vers
    alias unalias hostname command builtin exec time nice nohup timeout stdbuf setsid xargs
    unbuffer noglob nocorrect busybox toybox coproc yes bc dc expr factor numfmt
    """
)

_FETCHERS = _names(
    "curl wget fetch aria2c http https xh httpie lwp-request get nc socat telnet ftp tftp "
    "lynx links w3m ssh"
)
_SHELLS = _names("sh bash zsh dash ksh mksh ash fish csh tcsh yash rbash pdksh oksh loksh posh")
_CODE_LOADING_VARS = _names(
    "LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH DYLD_INSERT_LIBRARIES DYLD_LIBRARY_PATH BASH_ENV ENV "
    "PROMPT_COMMAND SHELLOPTS BASHOPTS PS4 NODE_OPTIONS PYTHONSTARTUP PYTHONPATH PERL5OPT "
    "PERL5LIB RUBYOPT RUBYLIB JAVA_TOOL_OPTIONS IFS GIT_EXEC_PATH GIT_TEMPLATE_DIR "
    "PS0 PS1 PS2 PS3 PROMPT RPROMPT RPS1 SPROMPT ZDOTDIR FPATH PRECMD_FUNCTIONS "
    "PREEXEC_FUNCTIONS CHPWD_FUNCTIONS PERIODIC_FUNCTIONS ZSHADDHISTORY_FUNCTIONS "
    "GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM GIT_CONFIG_PARAMETERS"
)
_COMMAND_VARS = _names(
    "PAGER GIT_PAGER MANPAGER EDITOR VISUAL GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_SSH "
    "GIT_SSH_COMMAND GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS GIT_EXTERNAL_DIFF GIT_PROXY_COMMAND "
    "LESSOPEN LESSCLOSE BROWSER SYSTEMD_PAGER"
)
_PATH_VARS = _names("PATH MANPATH CDPATH")


def _apply_rules(call: _Call) -> None:
    """The dispatch: the program's table entry and specific rule, then read-only-ness."""
    key = call.key
    call.ro = key in _READ_ONLY or (key == "#" and call.analysis.zsh_reading)
    simple = _SIMPLE.get(key)
    if simple is not None:
        call.flag(*simple)
    if key in _WRAPPER_RISK and key not in ("sudo", "doas"):
        risk, reason = _WRAPPER_RISK[key]
        call.flag(risk, reason.format(call.program))
    rule = _RULES.get(key)
    if rule is not None:
        rule(call)
    if call.program in call.analysis.functions:
        pass  # a function defined in this command: its body was judged where it was defined
    elif key not in _KNOWN or _unvetted_path(call.program_word):
        where = "" if key in _KNOWN else ", so what it does is unknown"
        call.flag("unknown", f"{call.program_word} is not a program this check knows{where}")
        call.ro = False
    if not call.ro:
        call.verdict.read_only = False


_SYSTEM_BIN = re.compile(r"^/(usr/(local/)?)?s?bin/|^/opt/homebrew/bin/|^/bin/")


def _unvetted_path(name: str) -> bool:
    """``./ls`` is the repository's own ``ls``, not the system's: any file outside the system
    program folders may be anything, whatever its name."""
    return "/" in name and not _SYSTEM_BIN.match(name)


# -- files -----------------------------------------------------------------------------------


def _check_targets(
    call: _Call, words: Iterable[_Word], verb: str, *, replaces: bool = False
) -> None:
    for word in words:
        _judge_write_target(call.verdict, word, verb, redirect=False, replaces=replaces)


def _rule_rm(call: _Call) -> None:
    for target in call.positional_values():
        norm = _normalise_path(target)
        if norm in ("/", "/*", "~", "~/*", "*", ".", "..", "$HOME", "${HOME}") or _system_path(
            target
        ):
            call.flag("high", f"{call.program} targets {target}")
    if call.has_long("--no-preserve-root"):
        call.flag("high", "--no-preserve-root lets rm delete the whole file system")


def _rule_dd(call: _Call) -> None:
    for value in call.values():
        if value.startswith("of="):
            _check_targets(call, [_word(value[3:])], "dd writes to")


def _rule_copy(call: _Call) -> None:
    """cp, ln, install, rsync: the destination decides whether system files are at stake."""
    target = call.option_value("-t", "--target-directory")
    positionals = call.positionals()
    replaces = call.key != "cp"
    if target is not None:
        _check_targets(call, [target], f"{call.program} writes into", replaces=replaces)
    elif len(positionals) >= 2 or call.key == "ln":
        _check_targets(call, positionals[-1:], f"{call.program} writes to", replaces=replaces)


def _rule_mv(call: _Call) -> None:
    _check_targets(call, call.positionals(), f"{call.program} moves", replaces=True)


def _rule_create(call: _Call) -> None:
    _check_targets(call, call.positionals(), f"{call.program} writes to")


def _rule_tee(call: _Call) -> None:
    verb = "appends to" if call.has_short("a") or call.has_long("--append") else "writes to"
    for word in call.positionals():
        _judge_write_target(call.verdict, word, f"tee {verb}", redirect=True)
    call.ro = call.verdict.risk == "low"


def _rule_sort(call: _Call) -> None:
    output = call.option_value("-o", "--output")
    if output is not None:
        call.not_read_only()
        _judge_write_target(call.verdict, output, "sort writes to", redirect=True)


def _rule_uniq(call: _Call) -> None:
    positionals = call.positionals()
    if len(positionals) >= 2:
        call.not_read_only()
        _judge_write_target(call.verdict, positionals[1], "uniq writes to", redirect=True)


_SED_EXEC = re.compile(r"/[gpiImM0-9w]*e[gpiImM0-9]*\s*($|[;}\n])|(^|[;{}\n])\s*[0-9$]*\s*e(\s|$)")
_SED_WRITE = re.compile(r"/[gpiImM0-9e]*w\s|(^|[;{}\n])\s*[0-9$]*\s*[wW]\s")


def _rule_sed(call: _Call) -> None:
    in_place = call.has_long("--in-place") or any(
        not v.startswith("--") and "i" in v[1:] for v in call.options()
    )
    scripts = [call.option_value("-e", "--expression")]
    positionals = call.positionals()
    if scripts[0] is None and positionals:
        scripts = [positionals[0]]
        positionals = positionals[1:]
    for script in scripts:
        text = script.approx if script is not None else ""
        if _SED_EXEC.search(text):
            call.flag("high", "the sed script's e command runs text as a shell command")
        elif _SED_WRITE.search(text):
            call.flag("medium", "the sed script writes to files")
    if in_place:
        call.flag("medium", "sed -i edits files in place")
        _check_targets(call, positionals, "sed -i edits")
    call.ro = not in_place and call.verdict.risk == "low"


_AWK_RUNS = re.compile(r"\bsystem\s*\(|\|\s*getline|\|&|\bprintf?\b[^;{}]*\|")
_AWK_WRITES = re.compile(r"\bprintf?\b[^;{}]*>")


def _rule_awk(call: _Call) -> None:
    program: _Word | None = None
    index = 0
    args = call.args
    while index < len(args):
        value = args[index].value
        if value is None or not value.startswith("-") or value == "-":
            program = args[index]
            break
        if value in ("-f", "--file") or value.startswith("-f"):
            call.not_read_only()
            return
        if value in ("-F", "-v", "--assign", "--field-separator"):
            index += 1
        elif value == "--":
            program = args[index + 1] if index + 1 < len(args) else None
            break
        index += 1
    text = program.approx if program is not None else ""
    if _AWK_RUNS.search(text):
        call.flag("high", "the awk program runs shell commands")
    elif _AWK_WRITES.search(text):
        call.flag("medium", "the awk program writes to files")
    call.ro = call.verdict.risk == "low"


def _rule_find(call: _Call) -> None:
    args = call.args
    index = 0
    while index < len(args):
        value = args[index].value
        if value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            call.sub_judge(args[index + 1 : end], f"find {value} runs")
            index = end
        elif value == "-delete":
            call.flag("high", "find -delete deletes every file it matches")
        elif value in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            call.flag("medium", f"find {value} writes to a file")
            call.not_read_only()
        index += 1


def _rule_tar(call: _Call) -> None:
    first = call.args[0].value if call.args else None
    letters = set(first) if first and not first.startswith("-") else set()
    for option in call.options():
        if not option.startswith("--"):
            letters |= set(option[1:])
    longs = {o.split("=", 1)[0] for o in call.options() if o.startswith("--")}
    if "t" in letters or "--list" in longs:
        call.ro = True
        return
    if letters & set("x") or longs & {"--extract", "--get"}:
        call.flag("medium", "tar extracts files and may overwrite them")
        directory = call.option_value("-C", "--directory")
        if directory is not None:
            _check_targets(call, [directory], "tar extracts into")
    else:
        call.flag("medium", "tar writes an archive")


def _rule_unzip(call: _Call) -> None:
    if call.has_short("ltvZp") and not call.has_short("d"):
        call.ro = True
        return
    call.flag("medium", "unzip extracts files and may overwrite them")
    directory = call.option_value("-d")
    if directory is not None:
        _check_targets(call, [directory], "unzip extracts into")


def _rule_compress(call: _Call) -> None:
    if call.has_short("clt") or call.has_long("--stdout", "--to-stdout", "--list", "--test"):
        call.ro = True
        return
    call.flag("medium", f"{call.program} replaces files with (de)compressed copies")


def _rule_archive(call: _Call) -> None:
    if call.positional_values()[:1] in (["l"], ["t"]):
        call.ro = True
        return
    call.flag("medium", f"{call.program} writes or extracts an archive")


# -- processes and the system ----------------------------------------------------------------


def _rule_kill(call: _Call) -> None:
    values = call.values()
    if call.has_short("lL") and len(values) <= 2:
        call.ro = True
        return
    targets: list[str] = []
    index = 0
    while index < len(values):
        value = values[index]
        if value == "--":
            targets.extend(values[index + 1 :])
            break
        if index == 0 and value.startswith("-"):
            index += 2 if value in ("-s", "-n") else 1
            continue
        targets.append(value)
        index += 1
    if any(t in ("1", "-1") for t in targets):
        call.flag("high", "kill targets init or every process")
    elif values[:1] == ["-0"] or values[:2] == ["-s", "0"]:
        call.ro = True
    else:
        call.flag("medium", "kill sends signals to processes")


_SYSTEMCTL_HIGH = _names(
    "stop disable mask kill poweroff reboot halt kexec isolate suspend hibernate hybrid-sleep "
    "emergency rescue default switch-root soft-reboot exit"
)
_SYSTEMCTL_READ = _names(
    "status show cat list-units list-unit-files list-timers list-sockets list-dependencies "
    "list-jobs list-machines list-paths is-active is-enabled is-failed is-system-running help "
    "get-default show-environment"
)


def _rule_systemctl(call: _Call) -> None:
    verb = next(iter(call.positional_values()), "")
    if verb in _SYSTEMCTL_HIGH:
        call.flag("high", f"systemctl {verb} stops services or the machine")
    elif verb in _SYSTEMCTL_READ or not verb:
        call.ro = True
    else:
        call.flag("medium", f"systemctl {verb} changes services")


def _rule_service(call: _Call) -> None:
    positionals = call.positional_values()
    verb = positionals[1] if len(positionals) > 1 else ""
    if verb in ("stop", "disable", "kill"):
        call.flag("high", f"service {verb} stops a system service")
    elif verb == "status" or call.has_long("--status-all"):
        call.ro = True
    else:
        call.flag("medium", "service changes a system service")


def _rule_scheduler(call: _Call) -> None:
    """at and batch read the commands to schedule from stdin, like a shell does."""
    if call.stdin.kind in ("pipe", "fetch", "heredoc", "herestring"):
        _stdin_code(call, "shell", shell=True)
        call.flag("medium", f"{call.program} schedules commands to run later")


def _rule_crontab(call: _Call) -> None:
    if call.positional_values()[:1] == ["-"] and call.stdin.kind in ("pipe", "fetch"):
        call.flag("high", "crontab installs piped text as scheduled commands")
    if call.has_short("r"):
        call.flag("high", "crontab -r deletes every scheduled job")
    elif call.has_short("l"):
        call.ro = True
    else:
        call.flag("medium", "crontab replaces the scheduled jobs")


def _rule_sysctl(call: _Call) -> None:
    if (
        call.has_short("wp")
        or call.has_long("--write", "--load", "--system")
        or any("=" in v for v in call.positional_values())
    ):
        call.flag("high", "sysctl changes kernel settings")
    else:
        call.ro = True


def _rule_date(call: _Call) -> None:
    if (
        call.has_short("s")
        or call.has_long("--set")
        or any(not v.startswith("+") for v in call.positional_values())
    ):
        call.flag("medium", "date changes the system clock")


def _rule_hostname(call: _Call) -> None:
    if call.positional_values() or call.has_short("F") or call.has_long("--file"):
        call.flag("high", "hostname changes the machine's name")


_NET_VERBS = _names(
    "add del delete set flush change replace append prepend restore down up dev-set"
)


def _rule_netconfig(call: _Call) -> None:
    positionals = call.positional_values()
    changes = any(v in _NET_VERBS for v in positionals)
    if call.key == "ifconfig":
        changes = changes or len(positionals) >= 2
    if changes:
        call.flag("high", f"{call.program} changes network configuration")
    else:
        call.ro = True


def _rule_nc(call: _Call) -> None:
    if call.has_short("ec") or call.has_long("--exec", "--sh-exec", "--lua-exec"):
        call.flag("high", f"{call.program} -e gives a network peer a command to run")
    elif call.has_short("l") or call.has_long("--listen"):
        call.flag("medium", f"{call.program} listens for network connections")


def _rule_socat(call: _Call) -> None:
    if any(re.search(r"(?i)\b(exec|system):", v) for v in call.values()):
        call.flag("high", "socat connects a network stream to a command")
    else:
        call.flag("medium", "socat relays network connections")


def _rule_rsync(call: _Call) -> None:
    positionals = call.positionals()
    remote = [
        p.raw
        for p in positionals
        if p.value is not None
        and (re.match(r"^[^/:\s]+:", p.value) or p.value.startswith("rsync://"))
    ]
    if remote or call.has_short("e") or call.has_long("--rsh"):
        call.flag("high", f"rsync copies to or from another machine ({_short(' '.join(remote))})")
    if any(o.startswith("--delete") or o.startswith("--remove-source") for o in call.options()):
        call.flag("high", "rsync deletes files")
    destination = positionals[-1:] if len(positionals) >= 2 else []
    _check_targets(call, destination, "rsync writes to", replaces=True)


def _rule_permissions(call: _Call) -> None:
    for target in call.positional_values():
        if _normalise_path(target) == "/" or _system_path(target):
            call.flag("high", f"{call.program} changes {target}")


# -- fetchers --------------------------------------------------------------------------------


def _rule_curl(call: _Call) -> None:
    output = call.option_value("-o", "--output")
    writes = (
        output is not None
        or call.has_short("oOJ")
        or call.has_long("--remote-name", "--remote-name-all", "--output-dir", "--create-dirs")
    )
    if writes:
        if output is not None and _harmless_target(output.value or ""):
            pass
        else:
            call.flag("medium", "curl downloads to a file")
            if output is not None:
                _check_targets(call, [output], "curl writes to")
    sends = call.has_short("dFT") or call.has_long(
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "--form",
        "--upload-file",
        "--json",
    )
    method = call.option_value("-X", "--request")
    if sends or (method is not None and (method.value or "").upper() not in ("GET", "HEAD")):
        call.flag("medium", "curl sends data to a server")
    if any(v.startswith("@") and len(v) > 1 for v in call.values()):
        call.flag("medium", "curl uploads a local file")


def _rule_wget(call: _Call) -> None:
    values = call.values()
    output = call.option_value("-O", "--output-document")
    to_stdout = (output is not None and output.value in ("-", "/dev/null")) or any(
        v.endswith("O-") and not v.startswith("--") for v in values
    )
    if call.has_long("--spider") or to_stdout:
        pass
    else:
        call.flag("medium", "wget downloads to a file")
        if output is not None:
            _check_targets(call, [output], "wget writes to")
    if call.has_long("--post-data", "--post-file", "--body-data", "--body-file", "--method"):
        call.flag("medium", "wget sends data to a server")


# -- code runners ----------------------------------------------------------------------------


def _stdin_code(call: _Call, lang: str, *, shell: bool) -> None:
    """An interpreter reading its program from stdin runs whatever arrives there."""
    stdin = call.stdin
    name = call.program
    if stdin.kind == "fetch":
        call.flag("high", f"pipes a network download into {name}")
    elif stdin.kind == "pipe":
        call.flag("high", f"pipes text into {name}, which runs it as {lang} code")
    elif stdin.kind in ("heredoc", "herestring") and shell and stdin.text is not None:
        where = "a here-document" if stdin.kind == "heredoc" else "a here-string"
        label = f"{name} runs {where} as shell code"
        if stdin.dynamic:
            call.flag("high", f"{label}, built at run time, so it could contain any command")
        call.analysis.nested(call.verdict, stdin.text, label, "medium")
    elif stdin.kind in ("heredoc", "herestring"):
        call.flag("high", f"{name} runs {lang} code from a here-document, which can do anything")
    elif stdin.kind == "none":
        call.flag("medium", f"{name} reads {lang} code from its input")


def _substituted_script(call: _Call, word: _Word, what: str) -> bool:
    """``bash <(curl …)``: a script that is another command's output."""
    node = word.node
    if node is None or node.type != "process_substitution":
        return False
    if call.analysis._contains_fetch(node):
        call.flag("high", f"runs a network download as a {what}")
    else:
        call.flag("high", f"runs another command's output as a {what}")
    return True


def _unread_script(call: _Call, word: _Word) -> None:
    """``python x.py``, ``bash x.sh``: a program whose text this check never sees."""
    what = _short(word.raw)
    call.flag("low", f"{call.program} runs {what}, a script this check does not read")
    call.not_read_only()


_INFO_FLAGS = _names("--version --help -V -h -version -help")


def _rule_shell(call: _Call) -> None:
    call.not_read_only()
    args = call.args
    index = 0
    has_c = reads_stdin = False
    while index < len(args):
        value = args[index].value
        if value is None:
            break
        if value == "--" or value == "-":
            index += value == "--"
            break
        if value in _INFO_FLAGS:
            call.ro = True
            return
        if value in ("--rcfile", "--init-file"):
            index += 2
            continue
        if value.startswith("--") or not value.startswith(("-", "+")) or len(value) < 2:
            if value.startswith("--"):
                index += 1
                continue
            break
        letters = value[1:]
        if value.startswith("-"):
            has_c = has_c or "c" in letters
            reads_stdin = reads_stdin or "s" in letters
        if "o" in letters or "O" in letters:
            index += 1
        index += 1
    rest = args[index:]
    if has_c:
        label = f"{call.program} -c runs a shell command string"
        call.code(rest[:1], label, "medium")
        return
    if reads_stdin or not rest or rest[0].value in ("-", "/dev/stdin"):
        _stdin_code(call, "shell", shell=True)
        return
    if not _substituted_script(call, rest[0], "shell script"):
        _unread_script(call, rest[0])


@dataclass(frozen=True)
class _Lang:
    name: str
    code_options: frozenset[str]
    cluster: str = ""
    """Letters that mean inline code inside a short-option cluster (perl -pe, python -Sc)."""
    with_arg: frozenset[str] = frozenset()


def _lang(name: str, code: str, cluster: str = "", with_arg: str = "") -> _Lang:
    return _Lang(name, frozenset(code.split()), cluster, frozenset(with_arg.split()))


_LANGS: dict[str, _Lang] = {
    "python": _lang("Python", "-c", "c", "-W -X -Q"),
    "node": _lang(
        "JavaScript",
        "-e --eval -p --print",
        with_arg="-r --require --import --loader --experimental-loader -C --conditions",
    ),
    "bun": _lang("JavaScript", "-e --eval -p --print"),
    "ts-node": _lang("TypeScript", "-e --eval -p --print"),
    "tsx": _lang("TypeScript", "-e --eval -p --print"),
    "perl": _lang("Perl", "-e -E", "eE", "-I -M -m"),
    "ruby": _lang("Ruby", "-e", "e", "-I -r -C -E"),
    "irb": _lang("Ruby", ""),
    "php": _lang("PHP", "-r -B -R -E -F", "", "-c -d -z"),
    "lua": _lang("Lua", "-e", "", "-l"),
    "luajit": _lang("Lua", "-e", "", "-l -j"),
    "rscript": _lang("R", "-e --expr"),
    "julia": _lang("Julia", "-e --eval -E --print"),
    "osascript": _lang("AppleScript", "-e"),
    "powershell": _lang("PowerShell", "-c -command -encodedcommand -ec -e"),
    "tclsh": _lang("Tcl", ""),
    "wish": _lang("Tcl", ""),
    "guile": _lang("Scheme", "-c -e"),
    "racket": _lang("Racket", "-e --eval"),
    "scala": _lang("Scala", "-e"),
    "groovy": _lang("Groovy", "-e"),
    "elixir": _lang("Elixir", "-e --eval"),
    "erl": _lang("Erlang", "-eval"),
}


def _rule_interpreter(call: _Call) -> None:
    lang = _LANGS[call.key]
    call.not_read_only()
    args = call.args
    index = 0
    while index < len(args):
        word = args[index]
        value = word.value
        if value is None:
            break
        if value in _INFO_FLAGS or (value == "-v" and call.key != "python"):
            call.ro = True
            return
        option = value.lower() if call.key == "powershell" else value
        name = option.split("=", 1)[0]
        cluster = (
            option.startswith("-")
            and not option.startswith("--")
            and len(option) > 2
            and option[:2] not in lang.with_arg
        )
        if name in lang.code_options or (cluster and set(option[1:]) & set(lang.cluster)):
            code = args[index + 1 : index + 2] if "=" not in option else []
            if any(c.node is not None and call.analysis._contains_fetch(c.node) for c in code):
                call.flag("high", f"runs a network download as {lang.name} code")
            call.flag(
                "high", f"{call.program} {name} runs inline {lang.name} code, which can do anything"
            )
            return
        if call.key == "python" and (option == "-m" or (cluster and option.endswith("m"))):
            module = args[index + 1].value if index + 1 < len(args) else None
            if module in ("pip", "pip3"):
                call.sub_call("pip", args[index + 2 :])
            elif module in ("http.server", "SimpleHTTPServer", "smtpd", "pydoc"):
                call.flag("medium", f"python -m {module} serves files over the network")
            return
        if option == "-":
            break
        if not option.startswith("-") or len(option) < 2:
            break
        index += 2 if option in lang.with_arg else 1
    rest = args[index:]
    if not rest or rest[0].value in ("-", "/dev/stdin"):
        _stdin_code(call, lang.name, shell=False)
    elif not _substituted_script(call, rest[0], f"{lang.name} program"):
        _unread_script(call, rest[0])


def _rule_bun(call: _Call) -> None:
    """bun is both a JavaScript runtime (``bun -e``) and a package manager (``bun add``)."""
    if any(v.split("=", 1)[0] in _LANGS["bun"].code_options for v in call.options()):
        _rule_interpreter(call)
    else:
        _rule_packages(call)


def _rule_deno(call: _Call) -> None:
    call.not_read_only()
    verb = next(iter(call.positional_values()), "")
    if verb == "eval":
        call.flag("high", "deno eval runs inline JavaScript code, which can do anything")
    elif verb in ("install", "add", "remove", "uninstall", "upgrade", "compile"):
        call.flag("medium", f"deno {verb} changes installed packages or files")


def _rule_eval(call: _Call) -> None:
    if call.args:
        call.code(call.args, "eval runs a string as shell code", "medium")


def _rule_trap(call: _Call) -> None:
    positionals = call.positionals()
    if call.has_short("lp") or not positionals or positionals[0].value in ("-", ""):
        call.ro = True
        return
    call.code(positionals[:1], "trap sets shell code to run later", "low")


def _rule_source(call: _Call) -> None:
    call.not_read_only()
    positionals = call.positionals()
    if not positionals:
        return
    if positionals[0].value in ("/dev/stdin", "-"):
        _stdin_code(call, "shell", shell=True)
    elif not _substituted_script(call, positionals[0], "shell script"):
        _unread_script(call, positionals[0])


def _rule_watch(call: _Call) -> None:
    args = call.args
    index = 0
    exec_mode = False
    while index < len(args):
        value = args[index].value
        if value is None or not value.startswith("-"):
            break
        exec_mode = exec_mode or value in ("-x", "--exec")
        if value in ("-n", "--interval", "-q", "--equexit"):
            index += 1
        index += 1
    rest = args[index:]
    if exec_mode:
        call.sub_judge(rest, "watch runs")
    elif rest:
        call.code(rest, "watch runs a shell command repeatedly", "low")
        call.ro = call.verdict.risk == "low" and call.verdict.read_only


def _rule_flock(call: _Call) -> None:
    command = call.option_value("-c", "--command")
    if command is not None:
        call.code([command], "flock -c runs a shell command string", "low")
        return
    positionals = call.positionals()
    start = call.args.index(positionals[0]) + 1 if positionals else len(call.args)
    call.sub_judge(call.args[start:], "flock runs")


def _rule_su(call: _Call) -> None:
    command = call.option_value("-c", "--command")
    if command is not None:
        call.code([command], "su -c runs a command as another user", "high")


def _rule_sudo(call: _Call) -> None:
    """Reached only when sudo does not simply wrap a command: a root shell, an editor, a list."""
    call.not_read_only()
    call.flag("high", f"{call.program} runs commands as root")
    if call.key == "sudo" and call.has_short("e"):
        call.flag("high", "sudo -e edits files as root")
        return
    spec = replace(_SUDO, stop_letters=frozenset(), stop_long=frozenset())
    start, _ = _skip_options(call.args, 0, spec)
    rest = call.args[start:]
    if call.has_short("is") or call.has_long("--login", "--shell"):
        if rest:
            call.code(rest, f"{call.program} runs a command through a root shell", "high")
        else:
            call.flag("high", f"{call.program} opens a root shell")
    elif rest:
        call.sub_judge(rest, f"{call.program} runs")


def _rule_env(call: _Call) -> None:
    split = call.option_value("-S", "--split-string")
    if split is None:
        return
    call.not_read_only()
    if split.value is None:
        call.flag("high", "env -S runs a command line built at run time")
        return
    try:
        argv = [_word(part) for part in shlex.split(split.value)]
    except ValueError:
        call.flag("medium", "env -S has unbalanced quotes")
        return
    call.sub_judge(argv, "env -S runs")


def _rule_alias(call: _Call) -> None:
    """An alias runs its body whenever its name is typed: judge the body."""
    for word in call.positionals():
        name, eq, body = (word.value or "").partition("=")
        if eq and body.strip():
            call.analysis.nested(call.verdict, body, f"alias {name} runs a command", "low")
    call.ro = call.verdict.risk == "low"


def _rule_script(call: _Call) -> None:
    command = call.option_value("-c", "--command")
    if command is not None:
        call.code([command], "script -c runs a shell command", "low")


_SSH_WITH_ARG = _names("-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B")


def _rule_ssh(call: _Call) -> None:
    """ssh is high anyway; the remote command's own reasons help the person judge it."""
    args = call.args
    index = 0
    while index < len(args) and (args[index].value or "").startswith("-"):
        index += 2 if args[index].value in _SSH_WITH_ARG else 1
    remote = args[index + 1 :]
    if remote:
        call.code(remote, f"{call.program} runs a command on the remote machine", "high")


# -- git -------------------------------------------------------------------------------------

_GIT_DANGEROUS_KEYS = _names(
    "core.pager core.editor core.sshcommand core.askpass core.fsmonitor core.hookspath "
    "core.gitproxy core.worktree core.alternaterefscommand sequence.editor gpg.program "
    "uploadpack.packobjectshook protocol.allow include.path credential.helper web.browser "
    "interactive.difffilter diff.external sendemail.smtpserver sendemail.tocmd sendemail.cccmd "
    "ssh.variant"
)
_GIT_DANGEROUS_PATTERN = re.compile(
    r"^(alias|pager|filter|credential|includeif|hook)\."
    r"|^diff\..*\.(command|textconv)$|^merge\..*\.driver$|^gpg\..*\.program$"
    r"|^remote\..*\.(uploadpack|receivepack|proxy)$|^(difftool|mergetool|browser|man)\..*\.(cmd|path)$"
    r"|^protocol\..*\.allow$|^submodule\..*\.update$|^url\..*\.insteadof$"
)
_GIT_SAFE_KEYS = re.compile(
    r"^(color|user|author|committer|init|advice|log|i18n|safe|column|blame|status|grep|gc|fetch)\."
    r"|^core\.(quotepath|autocrlf|safecrlf|abbrev|whitespace|filemode|ignorecase|longpaths)$"
    r"|^(diff\.(noprefix|renames|algorithm|colormoved|mnemonicprefix)|merge\.conflictstyle"
    r"|pull\.(rebase|ff)|commit\.gpgsign|tag\.gpgsign|push\.(default|autosetupremote)"
    r"|rebase\.(autosquash|autostash)|format\.pretty)$"
)


_GIT_NOT_COMMAND = re.compile(
    r"^(include\.path|core\.(hookspath|worktree)|protocol\..*allow|url\..*\.insteadof|includeif\..*)$"
)


def _git_config(
    call: _Call,
    word: _Word | None,
    via: str,
    value: _Word | None = None,
    *,
    persistent: bool = False,
) -> None:
    """``git -c key=value`` and ``git config key value``: some keys name a program to run.

    For ``git -c`` the issue asks for "high" outright. A persistent ``git config`` is judged by
    the command it stores (at least medium): ``core.editor vim`` is ordinary, an alias that
    runs ``rm -rf ~`` is not.
    """
    if word is None:
        return
    text = word.value
    if text is None:
        call.flag("high", f"{via} sets configuration chosen at run time")
        return
    key, has_value, setting = text.partition("=")
    key = key.lower()
    if value is not None and not has_value:
        setting = value.value if value.value is not None else value.approx
    if key in _GIT_DANGEROUS_KEYS or _GIT_DANGEROUS_PATTERN.search(key):
        floor: Risk = "medium" if persistent else "high"
        if persistent:
            call.flag(floor, f"{via} {key} stores a command that git will run later")
        else:
            call.flag(floor, f"{via} {key} can make git run any command")
        command = setting[1:] if setting.startswith("!") else setting
        if command.strip() and not _GIT_NOT_COMMAND.search(key):
            label = f"the {key} setting runs a command"
            call.analysis.nested(call.verdict, command, label, floor, announce=False)
    elif not _GIT_SAFE_KEYS.search(key) and not persistent:
        call.flag("medium", f"{via} {key} changes git's configuration")


_GIT_READ = _names(
    "status log diff show blame annotate ls-files ls-tree ls-remote rev-parse describe "
    "shortlog cat-file rev-list name-rev merge-base show-ref for-each-ref whatchanged "
    "count-objects version help var check-ignore check-attr check-ref-format show-branch "
    "cherry range-diff diff-tree diff-files diff-index verify-commit verify-tag fsck "
    "get-tar-commit-id request-pull grep archive"
)
_GIT_REASONS = {
    "commit": "git commit records a commit (and runs hooks)",
    "push": "git push publishes commits to a remote",
    "pull": "git pull merges remote changes into the work tree",
    "fetch": "git fetch downloads from a remote",
    "clone": "git clone downloads a repository",
    "reset": "git reset moves the branch and may discard work",
    "rebase": "git rebase rewrites history",
    "merge": "git merge changes the branch and work tree",
    "checkout": "git checkout switches branches or overwrites files",
    "switch": "git switch changes the checked-out branch",
    "restore": "git restore discards changes to files",
    "stash": "git stash moves uncommitted changes aside",
    "tag": "git tag creates or deletes tags",
    "branch": "git branch creates, renames or deletes branches",
    "clean": "git clean deletes untracked files",
    "rm": "git rm deletes files",
    "filter-branch": "git filter-branch rewrites history",
    "cherry-pick": "git cherry-pick adds commits",
    "revert": "git revert adds commits",
    "format-patch": "git format-patch writes patch files",
    "config": "git config changes git's configuration",
    "add": "git add stages changes",
    "init": "git init creates a repository",
    "mv": "git mv moves files",
    "apply": "git apply changes files",
    "am": "git am applies patches as commits",
    "gc": "git gc rewrites the object store",
}


def _rule_git(call: _Call) -> None:
    args = call.args
    index = 0
    while index < len(args):
        value = args[index].value
        if value is None:
            break
        if value == "-c":
            _git_config(call, args[index + 1] if index + 1 < len(args) else None, "git -c")
            index += 2
            continue
        if value.startswith("--config-env"):
            pair = value.partition("=")[2] or (
                (args[index + 1].value or "") if index + 1 < len(args) else ""
            )
            _git_config(call, _word(pair.partition("=")[0] + "="), "git --config-env")
            index += 1 if "=" in value else 2
            continue
        if value.startswith("--exec-path="):
            call.flag("high", "git --exec-path makes git run programs from another directory")
        if value in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"):
            index += 2
            continue
        if not value.startswith("-"):
            break
        index += 1
    if index >= len(args):
        call.ro = True
        return
    sub = args[index]
    if sub.value is None:
        call.flag("high", f"the git subcommand {_short(sub.raw)!r} is chosen at run time")
        return
    sub_call = _Call(call.analysis, call.verdict, "git", "git", args[index + 1 :], call.stdin)
    _rule_git_sub(sub_call, sub.value)
    call.ro = _git_read_only(sub.value, args[index + 1 :], call) and call.verdict.risk == "low"


def _git_read_only(name: str, rest: list[_Word], call: _Call) -> bool:
    sub = _Call(call.analysis, _Verdict(), "git", "git", rest, call.stdin)
    first = next(iter(sub.positional_values()), None)
    if name in _GIT_READ:
        return not sub.has_long("--output", "--open-files-in-pager") and not (
            name == "grep" and sub.has_short("O")
        )
    if name == "branch":
        listing = sub.has_short("lar") or sub.has_long(
            "--list", "--all", "--remotes", "--contains", "--no-contains", "--merged"
        )
        writes = sub.has_short("dDmMcCfu") or sub.has_long(
            "--delete", "--move", "--copy", "--force", "--set-upstream-to", "--unset-upstream"
        )
        return not writes and (first is None or listing)
    if name == "tag":
        writes = sub.has_short("dasfmFu") or sub.has_long("--delete", "--annotate", "--sign")
        return not writes and (first is None or sub.has_short("l") or sub.has_long("--list"))
    if name == "remote":
        return first in (None, "show", "get-url")
    if name == "config":
        return first in ("get", "list") or (
            sub.has_long("--get", "--get-all", "--get-regexp", "--list", "--get-urlmatch")
            or sub.has_short("l")
        )
    if name in ("stash", "worktree", "notes"):
        return first in ("list", "show")
    if name == "reflog":
        return first in (None, "show", "exists")
    if name == "submodule":
        return first in (None, "status", "summary")
    if name == "bisect":
        return first in ("log", "view", "visualize")
    if name == "clean":
        return sub.has_short("n") or sub.has_long("--dry-run")
    return False


def _rule_git_sub(call: _Call, name: str) -> None:
    values = call.values()
    if any(
        v.startswith(("--upload-pack", "--receive-pack", "--exec=")) or v.startswith("ext::")
        for v in values
    ) or (name == "clone" and call.has_short("u")):
        call.flag("high", f"git {name} is told to run a program of the caller's choosing")
    if name == "grep" and (call.has_short("O") or call.has_long("--open-files-in-pager")):
        call.flag("high", "git grep -O runs a program on the matching files")
    if name in _GIT_READ or _git_read_only(name, call.args, call):
        if call.has_long("--output"):
            call.flag("medium", f"git {name} --output writes a file")
        return
    reason = _GIT_REASONS.get(name)
    if name not in _GIT_REASONS and name not in _GIT_KNOWN:
        reason = f"git {name} is not a known read-only git command (it may be an alias)"
    call.flag("medium", reason or f"git {name} changes the repository")
    first = next(iter(call.positional_values()), None)
    if name == "clean" and (call.has_short("f") or call.has_long("--force")):
        extra = " and ignored ones" if call.has_short("xX") else ""
        call.flag("high", f"git clean -f permanently deletes untracked files{extra}")
    elif name == "push" and (
        call.has_short("fd")
        or call.has_long("--force", "--force-with-lease", "--mirror", "--delete", "--prune")
        or any(v.startswith(("+", ":")) for v in call.positional_values())
    ):
        call.flag("medium", "it force-pushes or deletes remote branches (rewrites remote history)")
    elif name == "reset" and call.has_long("--hard"):
        call.flag("medium", "git reset --hard discards uncommitted changes")
    elif name == "rebase":
        command = call.option_value("-x", "--exec")
        if command is not None:
            call.code([command], "git rebase --exec runs a shell command", "medium")
    elif name == "config":
        positionals = [p for p in call.positionals() if p.value not in ("set", "add")]
        if positionals:
            value = positionals[1] if len(positionals) > 1 else None
            _git_config(call, positionals[0], "git config", value=value, persistent=True)
    elif name == "submodule" and first == "foreach":
        rest = [p for p in call.positionals() if p.value != "foreach"]
        call.code(rest, "git submodule foreach runs a shell command", "medium")
    elif name == "bisect" and first == "run":
        start = next(i for i, a in enumerate(call.args) if a.value == "run") + 1
        call.sub_judge(call.args[start:], "git bisect run runs")
    elif name == "filter-branch":
        for option in ("--tree-filter", "--index-filter", "--msg-filter", "--commit-filter"):
            command = call.option_value(option)
            if command is not None:
                call.code([command], f"git filter-branch {option} runs a shell command", "medium")
    elif name in ("difftool", "mergetool"):
        command = call.option_value("-x", "--extcmd")
        if command is not None:
            call.code([command], f"git {name} --extcmd runs a shell command", "medium")


_GIT_KNOWN = _names(
    "add am apply bisect bundle checkout-index commit-tree daemon difftool gc init instaweb "
    "maintenance mergetool mv notes prune read-tree remote repack replace rerere "
    "sparse-checkout submodule symbolic-ref update-index update-ref worktree write-tree "
    "config reflog lfs credential pack-refs fast-import hash-object mktag mktree"
)


# -- containers, clusters, clouds ------------------------------------------------------------

_DOCKER_GROUPS = _names(
    "container image volume network system compose buildx context plugin builder node "
    "service stack secret config trust manifest swarm"
)
_DOCKER_READ = _names(
    "ps images logs inspect version info stats top history search port diff events "
    "container:ls container:list container:ps container:inspect container:logs container:top "
    "container:port container:diff container:stats image:ls image:list image:inspect "
    "image:history volume:ls volume:list volume:inspect network:ls network:list "
    "network:inspect compose:ps compose:logs compose:config compose:ls compose:images "
    "compose:top compose:version context:ls context:show context:inspect system:df "
    "system:info system:events buildx:ls buildx:inspect manifest:inspect"
)
_DOCKER_GLOBAL_WITH_ARG = _names("-H --host --context -c --config -l --log-level")


def _rule_docker(call: _Call) -> None:
    args = call.args
    index = 0
    if call.key == "docker-compose":
        verb = "compose:" + next(iter(call.positional_values()), "")
    else:
        while index < len(args) and (args[index].value or "").startswith("-"):
            index += 2 if args[index].value in _DOCKER_GLOBAL_WITH_ARG else 1
        words = [a.value or "" for a in args[index : index + 2]]
        verb = words[0] if words else ""
        if verb in _DOCKER_GROUPS and len(words) > 1:
            verb = f"{verb}:{words[1]}"
    if verb in _DOCKER_READ or not verb:
        call.ro = True
        return
    shown = verb.replace(":", " ")
    call.flag("medium", f"{call.program} {shown} changes containers, images or volumes")
    values = call.values()
    host_access = call.has_long("--privileged") or any(
        re.search(r"^--(pid|ipc|userns|uts)=host$|^--cap-add=(all|sys_admin)$", v, re.I)
        for v in values
    )
    for flag_index, value in enumerate(values):
        mount = None
        if value in ("-v", "--volume", "--mount") and flag_index + 1 < len(values):
            mount = values[flag_index + 1]
        elif value.startswith(("--volume=", "--mount=", "-v")) and len(value) > 2:
            mount = value.split("=", 1)[-1] if value.startswith("--") else value[2:]
        if mount is not None:
            source = re.sub(r"^(type=bind,)?(source|src)=", "", mount).split(":", 1)[0]
            source = source.split(",", 1)[0]
            if _normalise_path(source) == "/" or _system_path(source) or "docker.sock" in source:
                host_access = True
    if host_access:
        call.flag("high", f"{call.program} gives a container access to the host system")


_KUBECTL_READ = _names(
    "get describe logs explain version api-resources api-versions cluster-info top events "
    "auth diff wait"
)


def _rule_kubectl(call: _Call) -> None:
    positionals = call.positional_values()
    verb = positionals[0] if positionals else ""
    if (
        verb in _KUBECTL_READ
        or not verb
        or (
            verb == "config"
            and positionals[1:2] in (["view"], ["get-contexts"], ["current-context"])
        )
    ):
        call.ro = True
    elif verb == "delete":
        call.flag("high", "kubectl delete deletes cluster resources")
    else:
        call.flag("medium", f"kubectl {verb} changes the cluster")


def _rule_terraform(call: _Call) -> None:
    verb = next(iter(call.positional_values()), "")
    if verb == "destroy" or (verb == "apply" and call.has_long("-destroy")):
        call.flag("high", f"{call.program} destroy deletes infrastructure")
    elif verb in ("plan", "show", "validate", "output", "version", "providers", "graph", ""):
        call.ro = verb != "plan" or not call.has_long("-out")
    else:
        call.flag("medium", f"{call.program} {verb} changes infrastructure or state")


_GH_READ_VERBS = _names("view list status diff checks watch search")


def _rule_gh(call: _Call) -> None:
    positionals = call.positional_values()
    top = positionals[0] if positionals else ""
    verb = positionals[1] if len(positionals) > 1 else ""
    if top == "api":
        method = call.option_value("-X", "--method")
        writes = call.has_short("fF") or call.has_long("--field", "--raw-field", "--input")
        if writes or (method is not None and (method.value or "").upper() != "GET"):
            call.flag("medium", "gh api sends a write request to GitHub")
        else:
            call.ro = True
    elif top == "repo" and verb == "delete":
        call.flag("high", "gh repo delete deletes a repository")
    elif verb in _GH_READ_VERBS or top in ("status", "search", "version", "help", ""):
        call.ro = True
    else:
        call.flag("medium", f"gh {top} {verb} changes state on GitHub".replace("  ", " "))


# -- package managers ------------------------------------------------------------------------


_PACKAGE_VERBS: dict[str, frozenset[str]] = {
    "pip": _names("install uninstall download wheel"),
    "pipx": _names("install uninstall upgrade upgrade-all reinstall reinstall-all inject run"),
    "npm": _names(
        "install i in isntall add ci uninstall remove rm r un unlink update up upgrade link ln "
        "publish unpublish exec x dedupe prune init create"
    ),
    "pnpm": _names(
        "install i add remove rm uninstall un update up upgrade link publish dlx exec create "
        "import prune"
    ),
    "yarn": _names("install add remove upgrade up link publish dlx create global"),
    "bun": _names("install i add a remove rm update link publish x create upgrade"),
    "apt": _names(
        "install remove purge autoremove upgrade full-upgrade dist-upgrade update reinstall "
        "build-dep clean autoclean"
    ),
    "dnf": _names(
        "install remove erase update upgrade downgrade reinstall autoremove groupinstall "
        "groupremove makecache clean swap distro-sync"
    ),
    "apk": _names("add del upgrade update fix cache"),
    "brew": _names(
        "install uninstall remove rm reinstall upgrade update tap untap link unlink cleanup "
        "services"
    ),
    "zypper": _names("install in remove rm update up dist-upgrade dup patch refresh ref"),
    "snap": _names("install remove refresh revert disable enable"),
    "flatpak": _names("install uninstall update remove"),
    "port": _names("install uninstall upgrade selfupdate"),
    "cargo": _names("install uninstall add remove publish update fix fmt clean"),
    "go": _names("install get generate mod fmt clean"),
    "gem": _names("install uninstall update push"),
    "bundle": _names("install update add remove"),
    "composer": _names("install require update remove"),
    "conda": _names("install remove uninstall update upgrade create env clean"),
    "poetry": _names("add remove install update lock publish self"),
    "pdm": _names("add remove install update sync lock publish"),
    "pipenv": _names("install uninstall update sync lock clean"),
    "hatch": _names("publish env"),
    "uv": _names("add remove sync lock tool venv publish init self python"),
}
_RUNNERS: dict[str, tuple[str, frozenset[str]]] = {
    "uv": (
        "run",
        _names(
            "--with --with-editable --with-requirements -p --python --directory --project "
            "--package --extra --group --only-group --env-file --index --index-url "
            "--extra-index-url -f --find-links"
        ),
    ),
    "poetry": ("run", frozenset()),
    "pipenv": ("run", frozenset()),
    "pdm": ("run", frozenset()),
    "hatch": ("run", frozenset()),
    "rye": ("run", frozenset()),
    "conda": ("run", _names("-n --name -p --prefix")),
    "bundle": ("exec", frozenset()),
}


def _rule_packages(call: _Call) -> None:
    positionals = call.positional_values()
    runner = _RUNNERS.get(call.key)
    if runner is not None and positionals[:1] == [runner[0]]:
        start = next(i for i, a in enumerate(call.args) if a.value == runner[0]) + 1
        while start < len(call.args) and (call.args[start].value or "").startswith("-"):
            start += 2 if call.args[start].value in runner[1] else 1
        call.sub_judge(call.args[start:], f"{call.program} {runner[0]} runs")
        call.ro = call.verdict.read_only and call.verdict.risk == "low"
        return
    verbs = _PACKAGE_VERBS.get(call.key, frozenset())
    if call.key == "uv" and positionals[:1] == ["pip"]:
        positionals = positionals[1:]
        verbs = _PACKAGE_VERBS["pip"]
    hit = next((v for v in positionals[:2] if v in verbs), None)
    if hit is None and call.key in ("yarn", "bundle") and not positionals:
        hit = "install"
    if hit is not None:
        call.flag("medium", f"{call.program} {hit} installs, removes or publishes packages")


def _rule_pacman(call: _Call) -> None:
    for option in call.options():
        if option.startswith(("-R", "-U", "--remove", "--upgrade", "--sync")) or (
            option.startswith("-S") and not set(option[2:]) & set("silg")
        ):
            call.flag("medium", "pacman installs or removes packages")
            return


_TMUX_READ = _names(
    "ls list-sessions list-windows list-panes list-clients list-keys list-buffers "
    "capture-pane capturep display-message display show-options show show-buffer has-session "
    "has info show-environment"
)
_TMUX_WITH_ARG = _names("-t -s -n -c -F -x -y -e -l -N -T -d -S -L -f")
_TMUX_COMMANDS = _names(
    "new-session new new-window neww split-window splitw respawn-pane respawnp "
    "respawn-window respawnw run-shell run pipe-pane pipep if-shell if"
)


def _rule_tmux(call: _Call) -> None:
    """tmux can type into or start commands in other terminals: judge what it would run."""
    args = call.args
    index = 0
    while index < len(args) and (args[index].value or "").startswith("-"):
        if args[index].value == "-c" and index + 1 < len(args):
            call.code(args[index + 1 : index + 2], "tmux -c runs a shell command", "medium")
        index += 2 if args[index].value in ("-L", "-S", "-f", "-c") else 1
    verb = args[index].value if index < len(args) else None
    rest: list[_Word] = []
    index += 1
    while index < len(args):
        value = args[index].value or ""
        if value.startswith("-") and value != "-" and not rest:
            index += 2 if value in _TMUX_WITH_ARG else 1
            continue
        rest.append(args[index])
        index += 1
    if verb is None or verb in _TMUX_READ:
        call.ro = True
    elif verb in ("send-keys", "send"):
        enter = {"Enter", "C-m", "KPEnter", "C-j"}
        typed = [w for w in rest if w.value not in enter]
        if any(w.value in enter for w in rest):
            call.code(typed, "tmux send-keys types a command into another terminal", "medium")
        else:
            call.flag("medium", "tmux send-keys types into another terminal")
    elif verb in _TMUX_COMMANDS and rest:
        call.code(rest, f"tmux {verb} runs a shell command", "medium")
    else:
        call.flag("medium", f"tmux {verb} changes terminal sessions")


_RULES: dict[str, _Rule] = {
    "bun": _rule_bun,
    "tmux": _rule_tmux,
    "alias": _rule_alias,
    "script": _rule_script,
    "at": _rule_scheduler,
    "batch": _rule_scheduler,
    "rm": _rule_rm,
    "unlink": _rule_rm,
    "dd": _rule_dd,
    "cp": _rule_copy,
    "ln": _rule_copy,
    "install": _rule_copy,
    "mv": _rule_mv,
    "touch": _rule_create,
    "mkdir": _rule_create,
    "chmod": _rule_permissions,
    "chown": _rule_permissions,
    "tee": _rule_tee,
    "sort": _rule_sort,
    "uniq": _rule_uniq,
    "sed": _rule_sed,
    "awk": _rule_awk,
    "find": _rule_find,
    "tar": _rule_tar,
    "unzip": _rule_unzip,
    "kill": _rule_kill,
    "systemctl": _rule_systemctl,
    "service": _rule_service,
    "crontab": _rule_crontab,
    "sysctl": _rule_sysctl,
    "date": _rule_date,
    "hostname": _rule_hostname,
    "ip": _rule_netconfig,
    "ifconfig": _rule_netconfig,
    "route": _rule_netconfig,
    "nc": _rule_nc,
    "socat": _rule_socat,
    "rsync": _rule_rsync,
    "curl": _rule_curl,
    "wget": _rule_wget,
    "deno": _rule_deno,
    "eval": _rule_eval,
    "trap": _rule_trap,
    "source": _rule_source,
    ".": _rule_source,
    "watch": _rule_watch,
    "flock": _rule_flock,
    "su": _rule_su,
    "sudo": _rule_sudo,
    "doas": _rule_sudo,
    "env": _rule_env,
    "ssh": _rule_ssh,
    "git": _rule_git,
    "docker": _rule_docker,
    "docker-compose": _rule_docker,
    "kubectl": _rule_kubectl,
    "terraform": _rule_terraform,
    "tofu": _rule_terraform,
    "gh": _rule_gh,
    "pacman": _rule_pacman,
}
for _name in _SHELLS:
    _RULES[_name] = _rule_shell
for _name in _LANGS:
    _RULES.setdefault(_name, _rule_interpreter)
for _name in _PACKAGE_VERBS:
    _RULES.setdefault(_name, _rule_packages)
for _name in _names("gzip gunzip bzip2 bunzip2 xz unxz zstd unzstd lz4 compress uncompress"):
    _RULES[_name] = _rule_compress
for _name in _names("zip 7z 7za rar unrar"):
    _RULES[_name] = _rule_archive
for _name, (_risk, _reason) in _WRAPPER_RISK.items():
    if _risk == "high":
        _KEY_RISK[_name] = _risk

# Rules judged by what a flag, builtin or repository config can do (a module of their own).
from tui.security import risk_flags as _risk_flags  # noqa: E402
from tui.security import risk_shell as _risk_shell  # noqa: E402

_READ_ONLY = _risk_flags.register(_RULES, _READ_ONLY)
_KNOWN: frozenset[str] = frozenset(
    {*_READ_ONLY, *_SIMPLE, *_RULES, *_WRAPPERS, *_risk_flags.KNOWN, "#"}
)
"""Every program name some table or rule speaks for; any other name is "unknown"."""

"""The walk over one parse tree: each simple command becomes a segment, judged on its own.

Iterative (deep nesting must not blow the Python stack): every visit returns the tasks to visit
next. The walker knows the tree's shapes (lists, pipelines, redirected statements, functions,
declarations, unreadable regions); rating an argv is the ``Judge``'s job and reading
redirections the ``Redirections``'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from tui.security.risk.call import MAX_NESTING
from tui.security.risk.context import RiskContext
from tui.security.risk.judge import Judge
from tui.security.risk.redirects import REDIRECTS, Redirections
from tui.security.risk.rules.shell_builtins import function_risk, is_sensitive, unset_risk
from tui.security.risk.source import Source, parser
from tui.security.risk.syntax import dangerous_word, describe_error, missing_segments
from tui.security.risk.verdict import NO_STDIN, RISK_ORDER, SegmentRisk, Verdict, max_risk
from tui.security.risk.words import command_words, plain_word

if TYPE_CHECKING:
    from collections.abc import Iterable

    from tree_sitter import Node


@dataclass(frozen=True)
class _Ctx:
    """What a statement inherits from where it sits in the tree."""

    functions: frozenset[str] = frozenset()
    pipe_input: Literal["pipe", "fetch"] | None = None
    in_pipeline: bool = False
    background: bool = False


@dataclass(frozen=True)
class _Task:
    """One node still to visit, with what it inherits."""

    node: Node
    ctx: _Ctx
    redirects: tuple[Node, ...] = ()
    """Redirections tree-sitter put on an enclosing statement that belong to this command."""
    span_end: int = 0
    inner: bool = False
    """A child of a command (its env assignments): not a statement of its own."""


_GLUED_NEWLINE = re.compile(r"(?<!\\)(?:\\\\)*\n")
"""A newline in an unquoted word that no backslash escapes: a command boundary."""
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_QUOTES = re.compile(r"""['"\\]""")
"""Quote characters and backslashes, dropped when an unreadable line is read again."""
_SKIP = frozenset({"comment", "heredoc_start", "heredoc_end", "heredoc_content"})


class Walker:
    """Walks one parse tree into segments; the ``Judge`` rates what each command runs."""

    def __init__(self, text: str, depth: int, context: RiskContext | None = None) -> None:
        self.src = Source(text)
        self.judge = Judge(self.src, depth, context, self._read_again)
        self.redirections = Redirections(self.src, self.judge.secret_word)
        self.segments: list[SegmentRisk] = []

    def child(self, code: str) -> Walker:
        """A walk over a string this command parses again, in the same place."""
        inner = Walker(code, self.judge.depth + 1, self.judge.context)
        inner.judge.cwd, inner.judge.moved = self.judge.cwd, self.judge.moved
        return inner

    def _read_again(self, code: str) -> tuple[list[SegmentRisk], str | None]:
        return self.child(code).run()

    def run(self) -> tuple[list[SegmentRisk], str | None]:
        """The segments of the whole text, and the parser's error if it could not read it."""
        if not self.src.data.strip():
            return [], None
        data = self.src.data.replace(b"\x00", b" ")
        tree = parser().parse(data)
        root = tree.root_node
        stack = [_Task(root, _Ctx())]
        while stack:
            task = stack.pop()
            stack.extend(reversed(self._visit(task)))
        error = describe_error(self.src, root) if root.has_error else None
        if error is not None:
            self.segments.extend(missing_segments(self.src, root))
        if b"\x00" in self.src.data:
            error = "the command contains NUL bytes" + (f"; {error}" if error else "")
        if error is not None:
            # What the parser could not read may still name a secret: any word of it counts.
            verdict = Verdict()
            for token in re.split(r"[\s()<>;|&`\"'=]+", self.src.text):
                self.judge.secret_word(verdict, plain_word(token))
            if verdict.secrets:
                self.segments.append(verdict.segment(self.src.text))
            self.segments.extend(self._lines_without_quotes())
        if error is not None and max_risk(*(s.risk for s in self.segments)) == "low":
            reason = f"the shell parser could not read it: {error}"
            self.segments.append(SegmentRisk(self.src.text, "medium", (reason,), False, None))
        if self.judge.context is None or self.judge.context.shell == "zsh":
            self._comments_as_code(root)
        return self.segments, error

    def _lines_without_quotes(self) -> list[SegmentRisk]:
        """Each line of an unreadable script, read again with its quotes ignored.

        Quoting that nests past what the parser follows (``bash -c '…'"'"'p'"'"'s eww…'`` fed
        to a shell through a heredoc) is exactly how a command is disguised, and what a shell
        finally runs is mostly those words without their quotes. Only what this reading finds
        worse than the parse error's own "medium" and named (a program or a secret) is kept: a
        better label, never a lower one.
        """
        if self.judge.depth >= MAX_NESTING:
            return []
        found: list[SegmentRisk] = []
        for line in self.src.text.splitlines():
            bare = _QUOTES.sub("", line).strip()
            if not bare or bare == self.src.text.strip():
                continue
            segments, _ = self.child(bare).run()
            for segment in segments:
                # A named program or a secret, not what dropping quotes alone made (a glob).
                if segment.secrets or (segment.risk == "high" and segment.program is not None):
                    reason = f"read with its quotes ignored: {bare}"
                    reasons = (*segment.reasons, reason)
                    found.append(replace(segment, text=line, reasons=reasons))
        return found

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
        bash = replace(self.judge.context or RiskContext(), shell="bash")
        inner = Walker(text, self.judge.depth + 1, bash)
        inner.judge.zsh_reading = True
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
            why = unset_risk(names) if kind == "unset_command" else None
            if why is not None:
                verdict = Verdict(program="unset")
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
            redirects = [c for c in node.named_children if c.type in REDIRECTS]
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
            elif child.type in REDIRECTS:
                redirects.append(child)
            elif child.type != "comment":
                parts.append(child)
        redirects.extend(task.redirects)
        parts = self._split_glued_line(parts, node)
        words = [w for w in command_words(self.src, parts) if w.raw or w.value]
        verdict = Verdict(read_only=True)
        for assignment in env:
            self.judge.assignment(verdict, assignment)
        if words:
            judged = self.judge.argv(words, self.redirections.stdin(redirects, ctx.pipe_input))
            verdict.program = judged.program
            verdict.absorb(judged)
        self.redirections.judge(verdict, redirects)
        self._fork_bomb(verdict, ctx)
        if verdict.program in self.judge.functions and verdict.program not in ctx.functions:
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
            # Only a bare word's newline ends a command: one inside quotes ('a\nb', "a\nb")
            # is part of the argument (``bash -c 'x'"'"'y\nz'`` is one word).
            bare = (
                [child] if child.type == "word" else [c for c in child.children if c.type == "word"]
            )
            found = [
                (piece.start_byte + match.start())
                for piece in bare
                if (match := _GLUED_NEWLINE.search(self.src.of(piece))) is not None
            ]
            if not found:
                continue
            cut = min(found)
            inner = self.child(self.src.slice(cut + 1, node.end_byte))
            inner.judge.depth = self.judge.depth
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
        redirects = tuple(c for c in node.named_children if c.type in REDIRECTS)
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
            fetched = fetched or self.judge.contains_fetch(element)
        return tasks

    def _function(self, task: _Task) -> list[_Task]:
        name = task.node.child_by_field_name("name")
        ctx = task.ctx
        if name is not None:
            ctx = replace(ctx, functions=ctx.functions | {self.src.of(name)})
            self.judge.functions.add(self.src.of(name))
            risk, reason = function_risk(self.src.of(name), self.judge.knows)
            verdict = Verdict(program=self.src.of(name))
            verdict.flag(risk, reason)
            self.segments.append(verdict.segment(self.src.of(task.node)))
        return self._children(task.node, ctx)

    def _assignments(self, task: _Task) -> list[_Task]:
        node = task.node
        verdict = Verdict(read_only=True)
        items = [node] if node.type == "variable_assignment" else node.named_children
        for item in items:
            if item.type == "variable_assignment":
                self.judge.assignment(verdict, item)
        self.segments.append(verdict.segment(self.src.of(node)))
        return [_Task(item, _Ctx(functions=task.ctx.functions), inner=True) for item in items]

    def _declaration(self, task: _Task) -> list[_Task]:
        node = task.node
        keyword = node.children[0].type if node.children else "export"
        verdict = Verdict(read_only=True, program=keyword)
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.judge.assignment(verdict, child)
            elif child.type in ("word", "variable_name"):
                value = self.src.of(child)
                if value.startswith("-") and "f" in value and keyword in ("export", "readonly"):
                    verdict.flag("medium", f"{keyword} -f hands shell functions to later commands")
                elif is_sensitive(value):
                    why = f"{keyword} {value} changes a variable later commands use"
                    verdict.flag("medium", why)
        self.segments.append(verdict.segment(self.src.of(node)))
        inner_ctx = _Ctx(functions=task.ctx.functions)
        return [_Task(child, inner_ctx, inner=True) for child in node.named_children]

    def _emit_plain(self, node: Node, program: str) -> None:
        verdict = Verdict(read_only=True, program=program)
        self.segments.append(verdict.segment(self.src.of(node)))

    def _error(self, task: _Task) -> None:
        """A region the parser could not read: judge its loose words as a command anyway."""
        node = task.node
        verdict = Verdict()
        loose = [c for c in node.named_children if c.type not in ("command", "comment", "ERROR")]
        words = [
            w for w in command_words(self.src, loose) if w.value is not None and w.value.strip()
        ]
        # A word glued to the line before it (``\n\\git``) is still the name ``git``.
        words = [replace(w, value=w.value.lstrip()) if w.value else w for w in words]
        if words:
            verdict.absorb(self.judge.argv(words, NO_STDIN))
        verdict.flag("medium", "the shell parser could not read this part")
        dangerous = dangerous_word(self.src, node)
        if dangerous:
            verdict.flag("high", f"it mentions {dangerous} in a part that could not be parsed")
        self.segments.append(verdict.segment(self.src.of(node)))

    def _orphan_redirects(
        self, redirects: Iterable[Node], start: int, end: int, *, always: bool = False
    ) -> None:
        """Redirections on a group or loop (``{ …; } > /etc/x``) become a segment of their own."""
        verdict = Verdict(read_only=True)
        self.redirections.judge(verdict, list(redirects))
        if always or verdict.risk != "low":
            self.segments.append(verdict.segment(self.src.slice(start, end)))

    def _fork_bomb(self, verdict: Verdict, ctx: _Ctx) -> None:
        """A function that calls itself through a pipe or ``&`` multiplies until the box dies."""
        if verdict.program is None or verdict.program not in ctx.functions:
            return
        if ctx.in_pipeline or ctx.background:
            how = "in a pipeline" if ctx.in_pipeline else "in the background"
            verdict.flag("high", f"fork bomb: function {verdict.program} calls itself {how}")
        else:
            verdict.flag("medium", f"function {verdict.program} calls itself")

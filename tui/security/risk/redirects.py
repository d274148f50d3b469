"""Redirections: where a command's input comes from (code fed to a shell is code that runs)
and where its output goes (a write into ``/etc`` is high)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from tui.security.risk.source import Source, shorten
from tui.security.risk.tables.paths import CREDENTIALS, NETWORK_DEVICE
from tui.security.risk.verdict import NO_STDIN, Stdin, Verdict
from tui.security.risk.words import Word, literal_value, make_word
from tui.security.risk.write_targets import judge_write_target, normalise_path

if TYPE_CHECKING:
    from tree_sitter import Node

REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
"""The node types of a redirection."""

_WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&", "<&"})


def _redirect_operator(node: Node) -> str | None:
    for child in node.children:
        if not child.is_named:
            return child.type
    return None


def _descriptor(src: Source, node: Node) -> str | None:
    fd = node.child_by_field_name("descriptor")
    return src.of(fd) if fd is not None else None


class Redirections:
    """Reads the redirections of one command text; a secret named in one is the judge's call."""

    def __init__(self, src: Source, secret_word: Callable[[Verdict, Word], None]) -> None:
        self.src = src
        self._secret_word = secret_word

    def stdin(self, redirects: list[Node], pipe_input: Literal["pipe", "fetch"] | None) -> Stdin:
        """Where the command's standard input comes from, the last redirection winning."""
        stdin: Stdin = Stdin(pipe_input) if pipe_input else NO_STDIN
        for redirect in redirects:
            if redirect.type == "heredoc_redirect":
                stdin = self.heredoc(redirect)
            elif redirect.type == "herestring_redirect":
                value = redirect.named_children[-1] if redirect.named_children else None
                if value is not None:
                    word = make_word(self.src, value)
                    stdin = Stdin("herestring", word.approx, word.value is None)
            elif _redirect_operator(redirect) == "<" and _descriptor(self.src, redirect) in (
                None,
                "0",
            ):
                target = redirect.child_by_field_name("destination")
                source = literal_value(self.src, target) if target is not None else None
                remote = source is not None and NETWORK_DEVICE.match(normalise_path(source))
                stdin = Stdin("fetch") if remote else Stdin("file")
        return stdin

    def heredoc(self, redirect: Node) -> Stdin:
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
        return Stdin("heredoc", text, not quoted and ("$" in text or "`" in text))

    def judge(self, verdict: Verdict, redirects: list[Node]) -> None:
        """Reads of secrets or sockets, and writes: a write's target decides its label."""
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
                self._secret_word(verdict, make_word(self.src, target))
                source = literal_value(self.src, target)
                if source is not None and CREDENTIALS.search(source):
                    verdict.flag("medium", f"reads credentials ({shorten(source)})")
                if source is not None and NETWORK_DEVICE.match(normalise_path(source)):
                    verdict.flag("medium", f"reads from a network connection ({shorten(source)})")
                continue
            if operator not in _WRITE_OPERATORS:
                continue
            word = make_word(self.src, target)
            if operator in (">&", "<&") and (word.value or "").isdigit():
                continue
            verb = "appends to" if ">>" in operator else "writes to"
            judge_write_target(verdict, word, verb, redirect=True)

    # -- environment assignments -------------------------------------------------------------

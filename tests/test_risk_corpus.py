"""The risk corpus: hundreds of dangerous variants by class, none rated below its minimum, and
ordinary commands that must stay low and read-only so the rater stays useful.

The corpus is data (``tests/data/risk_corpus.jsonl``): one command a line with its class, the
lowest label it may get (``min``), and ``read_only: false`` / ``secret: true`` where those
must hold. Hypothesis then disguises entries in ways that cannot make them safer.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.security.risk.assess import assess_command
from tui.security.risk.context import RiskContext
from tui.security.risk.verdict import RISK_ORDER, CommandRisk

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "risk_corpus.jsonl").read_text().splitlines()
    if line.strip()
]
DANGEROUS = [row for row in CORPUS if row["class"] != "keep"]
KEEP = [row for row in CORPUS if row["class"] == "keep"]


@functools.cache
def _clean_repo() -> RiskContext:
    """A local workspace that is a repository with a plain config: git reads can be checked."""
    repo = tempfile.mkdtemp(prefix="risk-corpus-")
    subprocess.run(["git", "init", "-q", repo], check=True)
    return RiskContext(cwd=repo, home="/home/tester", local=True)


def _contexts() -> list[RiskContext | None]:
    return [None, _clean_repo(), RiskContext(cwd="/srv/app", home="/home/tester", local=False)]


def _problems(row: dict[str, object], result: CommandRisk) -> list[str]:
    problems = []
    if RISK_ORDER[result.risk] < RISK_ORDER[row["min"]]:  # type: ignore[index]
        problems.append(f"rated {result.risk}, below {row['min']}")
    if row.get("read_only") is False and result.read_only:
        problems.append("rated read-only")
    if row.get("secret") and not result.reads_secret:
        problems.append("secret read not seen")
    return problems


def test_the_corpus_is_large_and_covers_every_class() -> None:
    assert len(DANGEROUS) >= 500
    assert len({row["command"] for row in DANGEROUS}) == len(DANGEROUS)
    assert {row["class"] for row in DANGEROUS} == {str(n) for n in range(1, 9)}
    assert len(KEEP) >= 40


@pytest.mark.parametrize("row", DANGEROUS, ids=lambda row: f"{row['class']}:{row['command']}")
def test_no_variant_is_rated_below_its_minimum(row: dict[str, object]) -> None:
    for context in _contexts():
        result = assess_command(str(row["command"]), context)
        assert not _problems(row, result), (context, result.segments)


@pytest.mark.parametrize("row", KEEP, ids=lambda row: str(row["command"]))
def test_ordinary_commands_stay_low_and_read_only(row: dict[str, object]) -> None:
    result = assess_command(str(row["command"]), _clean_repo())
    assert result.risk == "low" and result.read_only, result.segments
    assert not result.reads_secret


# -- disguises that cannot make a command safer ----------------------------------------------

_FIRST_WORD = re.compile(r"^([a-z][a-z0-9]*)(?=\s)")
_SYSTEM = {"cat", "grep", "git", "rg", "sort", "tar", "ls", "head", "tail", "find", "xxd", "ps"}


def _quote_first(command: str) -> str:
    return _FIRST_WORD.sub(lambda m: f"'{m.group(1)[0]}'{m.group(1)[1:]}", command)


def _escape_first(command: str) -> str:
    return _FIRST_WORD.sub(lambda m: f"\\{m.group(1)}", command)


def _absolute(command: str) -> str:
    match = _FIRST_WORD.match(command)
    if match and match.group(1) in _SYSTEM:
        return "/usr/bin/" + command
    return command


def _wrapper(prefix: str) -> Callable[[str], str]:
    """``nice FOO=1 x`` runs a program called ``FOO=1``: wrap only a command that starts
    with its name."""
    return lambda c: f"{prefix} {c}" if _SIMPLE_START.match(c) else c


_SIMPLE_START = re.compile(
    r"^(?!(if|for|while|until|case|function|select|time)\b)(?!\w+=)[\w./~\\'\"-]"
)
"""A command that starts with a program's name (not ``{``, ``(``, a keyword or ``X=1``)."""

WORD_TRANSFORMS: list[Callable[[str], str]] = [
    *(
        _wrapper(p)
        for p in ("FOO=1", "command", "nice", "timeout 5", "nohup", "stdbuf -oL", "sudo")
    ),
    _quote_first,
    _escape_first,
    _absolute,
]
"""Disguises of the first command's name: valid only on a simple command, so applied first."""

TRANSFORMS: list[Callable[[str], str]] = [
    lambda c: f"( {c} )",  # spaced: ``((…))`` would be arithmetic, which runs nothing
    lambda c: f"{{ {c}; }}",
    lambda c: f"true && {c}",
    lambda c: f"false || {c}",
    lambda c: f"ls\n{c}",
    lambda c: f"{c}; true",
    lambda c: f"echo $( {c} )",
    lambda c: f"cat <( {c} )",
    lambda c: f"bash -c {shlex.quote(c)}",
    lambda c: f"sh -c {shlex.quote(c)}",
    lambda c: f"eval {shlex.quote(c)}",
    lambda c: f"bash <<'EOF'\n{c}\nEOF",
    lambda c: f"bash <<< {shlex.quote(c)}",
    lambda c: f"if true; then {c}; fi",
    lambda c: f"for i in 1; do {c}; done",
    lambda c: f"{c} # done",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    row=st.sampled_from(DANGEROUS),
    first=st.sampled_from([*WORD_TRANSFORMS, lambda c: c]),
    transforms=st.lists(st.sampled_from(TRANSFORMS), max_size=2),
)
def test_disguises_never_lower_a_rating(
    row: dict[str, object], first: Callable[[str], str], transforms: list[Callable[[str], str]]
) -> None:
    command = first(str(row["command"]))
    for transform in transforms:
        command = transform(command)
    result = assess_command(command, _clean_repo())
    assert not _problems(row, result), (command, result.segments)


def test_an_unreadable_script_fed_to_a_shell_is_read_again_without_its_quotes() -> None:
    """Found by the test above: quoting nested past what the parser follows hid ``ps eww``.

    The outer heredoc's body holds a line that only starts with its delimiter (``EOF'``),
    which the parser takes for the end; bash does not. Read line by line with the quotes
    ignored, the script names the secret read again.
    """
    quote = "'\"'\"'"
    inner = f"bash -c 'bash <<{quote}EOF{quote}\n{quote}p{quote}s eww\nEOF'"
    command = f"bash <<'EOF'\nFOO=1 {inner}\nEOF"
    result = assess_command(command, _clean_repo())
    assert result.parse_error is not None
    assert result.risk == "high"
    assert any("/proc/*/environ" in segment.secrets for segment in result.segments)
    # Reading again only raises: an unreadable line of harmless words stays at "medium".
    harmless = assess_command('echo "unclosed\nls -la', _clean_repo())
    assert harmless.parse_error is not None
    assert harmless.risk in ("medium", "unknown")

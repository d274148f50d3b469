"""Seeing through wrappers (sudo, env, timeout, xargs …) to the command that really runs."""

from __future__ import annotations

import re

from tui.security.risk.program_names import program_key
from tui.security.risk.tables.wrappers import WRAPPERS, WrapperSpec
from tui.security.risk.words import Word, plain_word


def _is_assignment(value: str) -> bool:
    return bool(re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", value))


def skip_options(argv: list[Word], start: int, spec: WrapperSpec) -> tuple[int, bool]:
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


def peel(argv: list[Word], start: int) -> tuple[int, list[str], list[tuple[str, Word]]]:
    """Strip wrappers (sudo, env, timeout, xargs …) to reach the command that really runs."""
    index = start
    wrappers: list[str] = []
    env: list[tuple[str, Word]] = []
    while index < len(argv):
        word = argv[index]
        if word.value is None or word.pattern:
            break
        key = program_key(word.value)
        spec = WRAPPERS.get(key)
        if spec is None:
            break
        inner, stop = skip_options(argv, index + 1, spec)
        if stop or inner >= len(argv):
            break
        if spec.assignments:
            for w in argv[index + 1 : inner]:
                if w.value is not None and _is_assignment(w.value) and not w.value.startswith("-"):
                    name, _, val = w.value.partition("=")
                    env.append((name, plain_word(val)))
        wrappers.append(key)
        index = inner
    return index, wrappers, env

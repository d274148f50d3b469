"""Rules for the builtins that change the shared shell for every later command.

``printf -v PROMPT_COMMAND …``, ``read PS0``, ``hash -p /tmp/x ls``, ``alias ls=…``, ``trap``,
``enable -f``, ``complete -C``, ``bind -x``, ``set -o``/``shopt``: each plants code or changes
what a later, separately approved command will do. A person approving ``ls`` later must get
``ls``. The dispatch runs these after a builtin's own rule, if it has one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from tui.security.risk.call import Call, Rule
from tui.security.risk.source import shorten
from tui.security.risk.tables.programs import CODE_LOADING_VARS, COMMAND_VARS, SENSITIVE_VARS
from tui.security.risk.verdict import Risk
from tui.security.risk.words import plain_word


def is_sensitive(name: str) -> bool:
    """Does setting or unsetting this variable change what later commands run?"""
    upper = name.upper()
    return (
        upper in SENSITIVE_VARS
        or upper in CODE_LOADING_VARS
        or upper in COMMAND_VARS
        or upper.startswith(("LD_", "DYLD_", "GIT_"))
    )


# -- class 3: builtins that change the shared shell for later --------------------------------


def _assigns(call: Call, name: str | None, how: str) -> None:
    if name and is_sensitive(name):
        call.flag("high", f"{how} sets {name}, which later commands run or are found through")


def _rule_printf(call: Call) -> None:
    word = call.option_value("-v")
    if word is not None:
        _assigns(call, word.value or word.raw, "printf -v")


def _rule_read(call: Call) -> None:
    args = call.args
    index = 0
    names: list[str] = []
    with_arg = set("dnOsuCc") if call.key in ("mapfile", "readarray") else set("adinNptu")
    while index < len(args):
        value = args[index].value or args[index].raw
        if value == "--":
            names += [a.value or a.raw for a in args[index + 1 :]]
            break
        if value.startswith("-") and len(value) > 1:
            letters = value[1:]
            for position, letter in enumerate(letters):
                if letter in with_arg:
                    rest = letters[position + 1 :]
                    argument = rest or (
                        (args[index + 1].value or "") if index + 1 < len(args) else ""
                    )
                    if letter == "a":
                        names.append(argument)
                    if not rest:
                        index += 1
                    break
        else:
            names.append(value)
        index += 1
    if call.key in ("mapfile", "readarray"):
        names = names[-1:]
    for name in names:
        _assigns(call, name, call.program)


def _rule_hash(call: Call) -> None:
    word = call.option_value("-p")
    if word is not None:
        call.flag("high", f"hash -p makes a command name run {shorten(word.raw)} from now on")


def _rule_declare(call: Call) -> None:
    """``command export PROMPT_COMMAND=…``: a declaration reached through a wrapper."""
    for word in call.positionals():
        value = word.value if word.value is not None else word.approx
        name, eq, rest = value.partition("=")
        if eq:
            call.judge.judge_env(call.verdict, name, plain_word(rest))
        elif is_sensitive(name):
            call.flag("medium", f"{call.program} {name} changes a variable later commands use")
    if call.key in ("export", "readonly") and call.has_short("f"):
        call.flag("medium", f"{call.program} -f hands shell functions to later commands")


def _rule_alias_more(call: Call) -> None:
    for word in call.positionals():
        name, eq, _ = (word.value or word.raw).partition("=")
        if not eq:
            continue
        if call.judge.knows(name) and name not in ("ll", "la", "l"):
            call.flag("high", f"alias {name} replaces the {name} command in this shell")


def _rule_trap_more(call: Call) -> None:
    if not call.ro:
        call.flag("medium", "trap leaves shell code in this shell to run later")


def _rule_enable(call: Call) -> None:
    if call.has_short("f"):
        call.flag("high", "enable -f loads a shared library into the shell")
    elif call.has_short("nd") and call.positionals():
        call.flag("medium", "enable -n switches builtins off, so other programs run instead")


def _rule_complete(call: Call) -> None:
    command = call.option_value("-C")
    if command is not None:
        call.code([command], f"{call.program} -C runs a command for completions", "medium")
    if call.key == "complete" and not call.has_short("pr") and call.args:
        call.flag("medium", "complete changes this shell's completion, which can run functions")
        call.ro = False


def _rule_bind(call: Call) -> None:
    command = call.option_value("-x")
    if command is not None:
        body = (command.value or command.approx).split(":", 1)[-1].strip().strip("\"'")
        call.code([plain_word(body)], "bind -x runs a command on a key press", "medium")
    elif call.positionals() or call.has_short("fmrux"):
        call.flag("medium", "bind changes what keys type or run in this shell")
        call.ro = False


def _rule_set(call: Call) -> None:
    values = call.values()
    if not values or values[0] == "--" or values in (["-o"], ["+o"]):
        return
    if values[0].startswith(("-", "+")):
        reason = f"{call.program} {values[0]} changes how this shell runs later commands"
        call.flag("medium", reason)
        call.ro = False


def _rule_shopt(call: Call) -> None:
    if call.has_short("su") and call.positionals():
        call.flag("medium", "shopt changes how this shell runs later commands")
        call.ro = False


def _rule_setopt(call: Call) -> None:
    if call.args:
        call.flag("medium", f"{call.program} changes how this shell runs later commands")
    else:
        call.ro = True


def _rule_umask(call: Call) -> None:
    if call.positionals():
        call.flag("medium", "umask changes the permissions of every file created later")
        call.ro = False


def _rule_cd(call: Call) -> None:
    """Later relative paths and git's repository follow a ``cd``; follow it when literal."""
    judge = call.judge
    judge.moved = True
    positionals = call.positionals()
    target = positionals[0].value if positionals else "~"
    home = judge.context.home if judge.context is not None else None
    if target is None or call.key != "cd":
        judge.cwd = None
    elif target in ("~", "") or target.startswith("~/"):
        judge.cwd = (home + target[1:]) if home else None
    elif target.startswith("/"):
        judge.cwd = posixpath.normpath(target)
    elif judge.cwd is not None and target != "-":
        judge.cwd = posixpath.normpath(posixpath.join(judge.cwd, target))
    else:
        judge.cwd = None


def _rule_let(call: Call) -> None:
    for word in call.args:
        name = (word.value or word.raw).split("=", 1)[0].strip()
        if "=" in (word.value or word.raw):
            _assigns(call, name, "let")


def unset_risk(names: list[str]) -> str | None:
    """Why ``unset NAME`` changes later commands (``unset PATH``), or None."""
    for name in names:
        if is_sensitive(name):
            return f"unset {name} changes how later commands are found or run"
    return None


def function_risk(name: str, knows: Callable[[str], bool]) -> tuple[Risk, str]:
    """The label and reason for defining a shell function called ``name``; ``knows`` says
    whether the name is a program some rule speaks for."""
    hooks = ("precmd", "preexec", "chpwd", "periodic", "zshexit", "zshaddhistory")
    if knows(name) or name in hooks or name.startswith("TRAP"):
        return "high", f"defining {name}() replaces what {name} does in this shell from now on"
    if name == "command_not_found_handle":
        return "high", "command_not_found_handle runs for every mistyped command"
    return "medium", f"the shell function {name} stays defined in this shell"


RULES: dict[str, Rule] = {
    "printf": _rule_printf,
    "read": _rule_read,
    "mapfile": _rule_read,
    "readarray": _rule_read,
    "hash": _rule_hash,
    "declare": _rule_declare,
    "typeset": _rule_declare,
    "export": _rule_declare,
    "local": _rule_declare,
    "readonly": _rule_declare,
    "alias": _rule_alias_more,
    "trap": _rule_trap_more,
    "enable": _rule_enable,
    "complete": _rule_complete,
    "compgen": _rule_complete,
    "bind": _rule_bind,
    "set": _rule_set,
    "shopt": _rule_shopt,
    "setopt": _rule_setopt,
    "unsetopt": _rule_setopt,
    "umask": _rule_umask,
    "cd": _rule_cd,
    "pushd": _rule_cd,
    "popd": _rule_cd,
    "let": _rule_let,
}
"""Run after any rule the builtin has of its own (see ``dispatch``)."""

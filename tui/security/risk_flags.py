"""Rules that judge a command by what its flags, builtins and repository config can do.

"Read-only" programs run other programs (``rg --pre``, ``sort --compress-program``, ``man -P``,
``tar --to-command``), write files (``xxd in out``, ``tree -o``, ``history -w``), plant code in
the shared shell for later (``printf -v PROMPT_COMMAND``, ``hash -p``, ``bind -x``), read
secrets by recursing into a home folder (``grep -r x ~``) or run what a cloned repository's
``.git/config`` names (``git status`` with ``core.fsmonitor``). Each rule here looks at the
flag, not the program's name. ``tui.security.risk`` registers them when it is imported.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.security import risk as _r
from tui.security.gitconfig import hazards_for, repo_config
from tui.security.risk_context import secret_inside

if TYPE_CHECKING:
    from tui.security.risk import _Call, _Word

_Rule = Callable[["_Call"], None]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


SENSITIVE_VARS = _names(
    "PS0 PS1 PS2 PS3 PS4 PROMPT PROMPT2 PROMPT3 PROMPT4 RPROMPT RPS1 RPS2 SPROMPT "
    "PROMPT_COMMAND BASH_ENV ENV ZDOTDIR FPATH PATH IFS HISTFILE PRECMD_FUNCTIONS "
    "PREEXEC_FUNCTIONS CHPWD_FUNCTIONS PERIODIC_FUNCTIONS ZSHADDHISTORY_FUNCTIONS "
    "ZSHEXIT_FUNCTIONS CDPATH MANPATH"
)
"""Shell variables whose value later commands run, load or are found through."""

_TOOLCHAIN = _names(
    "pytest py.test tox nox mvn gradle gradlew javac java gcc g++ cc c++ clang clang++ rustc "
    "tsc cmake meson ctest jest vitest mocha eslint prettier black ruff mypy pyright flake8 "
    "isort pylint rustfmt gofmt pre-commit"
)
_EDITORS = _names("vim vi nvim view vimdiff ex nano pico emacs micro ed code subl mcedit joe")
KNOWN = (
    _EDITORS
    | _names(
        "journalctl mapfile readarray enable complete compgen bind setopt unsetopt declare "
        "typeset export local readonly ps top htop rg ag ack ugrep man bat less more most xxd "
        "tree history printf read hash umask set shopt base64 base32 grep script"
    )
    | _TOOLCHAIN
)
READ_ONLY = _names(
    "journalctl mapfile readarray enable complete compgen bind top htop fd fdfind eza exa "
    "pstree lsb_release break continue fg bg disown compopt let"
)


def _is_sensitive(name: str) -> bool:
    upper = name.upper()
    return (
        upper in SENSITIVE_VARS
        or upper in _r._CODE_LOADING_VARS
        or upper in _r._COMMAND_VARS
        or upper.startswith(("LD_", "DYLD_", "GIT_"))
    )


def _runs_program(call: _Call, word: _Word | None, label: str) -> None:
    """A flag whose value is a program (or command line) the tool runs: judge that."""
    if word is None:
        return
    call.code([word], label, "medium")


def _option(call: _Call, *names: str) -> _Word | None:
    return call.option_value(*names)


# -- class 1: programs run through a flag ----------------------------------------------------


def _rule_rg(call: _Call) -> None:
    _runs_program(call, _option(call, "--pre"), "rg --pre runs a program on every file")
    _recursive_read(call, always=True)


def _rule_sort(call: _Call) -> None:
    word = _option(call, "--compress-program")
    _runs_program(call, word, "sort --compress-program runs a program")


def _rule_man(call: _Call) -> None:
    for names, what in (
        (("-P", "--pager"), "man -P runs a pager of the caller's choosing"),
        (("-H", "--html"), "man -H runs a browser of the caller's choosing"),
        (("--browser",), "man --browser runs a program"),
        (("-p", "--preprocessor"), ""),
    ):
        word = _option(call, *names)
        if word is not None and what:
            _runs_program(call, word, what)


def _rule_bat(call: _Call) -> None:
    _runs_program(call, _option(call, "--pager"), "bat --pager runs a program")


def _rule_pager(call: _Call) -> None:
    """less ``+!cmd`` runs a shell command on start; lesskey files can bind any."""
    for word in call.args:
        value = word.value if word.value is not None else word.approx
        if value.startswith("+") and ("!" in value or "|" in value):
            command = _r._word(value.lstrip("+:").lstrip("!|"))
            call.code([command], f"{call.program} + runs a shell command", "medium")
        elif value.startswith("++") or value.startswith("+"):
            call.flag("medium", f"{call.program} {value!r} runs commands of its own on start")
    if call.has_short("k") or call.has_long("--lesskey-file", "--lesskey-src"):
        call.flag("medium", f"{call.program} loads key bindings, which can run commands")


def _rule_tar_more(call: _Call) -> None:
    for names, label in (
        (("--to-command",), "tar --to-command runs a command on every file"),
        (("--use-compress-program", "-I"), "tar --use-compress-program runs a program"),
        (("--info-script", "--new-volume-script", "-F"), "tar --info-script runs a script"),
        (("--rsh-command",), "tar --rsh-command runs a program"),
    ):
        _runs_program(call, _option(call, *names), label)
    for value in call.values():
        if value.startswith("--checkpoint-action=") and "exec=" in value:
            command = value.split("exec=", 1)[1]
            call.code([_r._word(command)], "tar --checkpoint-action=exec runs a command", "medium")
    if _tar_creates(call):
        _recursive_read(call)


def _tar_creates(call: _Call) -> bool:
    first = call.args[0].value if call.args else None
    letters = set(first) if first and not first.startswith("-") else set()
    for option in call.options():
        if not option.startswith("--"):
            letters |= set(option[1:])
    return bool(letters & set("cruA")) or call.has_long("--create", "--append", "--update")


def _rule_zip_more(call: _Call) -> None:
    word = _option(call, "--unzip-command")
    for index, value in enumerate(call.values()):
        if value == "-TT" and index + 1 < len(call.args):
            word = call.args[index + 1]
        elif value.startswith("-TT") and len(value) > 3:
            word = _r._word(value[3:].removeprefix("="))
    _runs_program(call, word, "zip -TT runs a command to test the archive")
    if call.key == "zip" and (call.has_short("rR") or call.has_long("--recurse-paths")):
        _recursive_read(call)


# -- class 2: programs that write through a flag ---------------------------------------------


def _writes(call: _Call, word: _Word | None, verb: str) -> None:
    if word is None:
        return
    call.not_read_only()
    _r._judge_write_target(call.verdict, word, verb, redirect=True)


def _rule_xxd(call: _Call) -> None:
    files = []
    args = call.args
    index = 0
    while index < len(args):
        value = args[index].value or args[index].raw
        if value in ("-c", "-g", "-l", "-n", "-o", "-s", "-cols", "-len", "-seek", "-name"):
            index += 1  # the option's value
        elif not value.startswith("-") or value == "-":
            files.append(args[index])
        index += 1
    if len(files) >= 2:
        _writes(call, files[1], "xxd writes to")


def _rule_tree(call: _Call) -> None:
    _writes(call, _option(call, "-o"), "tree -o writes to")


def _rule_base64(call: _Call) -> None:
    _writes(call, _option(call, "-o", "--output"), f"{call.program} writes to")


def _rule_script(call: _Call) -> None:
    positionals = call.positionals()
    target = positionals[0] if positionals else _r._word("typescript")
    _writes(call, target, "script records the terminal into")


def _rule_history(call: _Call) -> None:
    if call.has_short("cdanrwsp"):
        call.not_read_only()
        call.flag("medium", "history changes the shell's history or its file")
        if call.has_short("wa"):
            positionals = call.positionals()
            _writes(call, positionals[0] if positionals else None, "history writes to")


_JOURNAL_WRITES = tuple(
    _names(
        "--vacuum-size --vacuum-time --vacuum-files --rotate --flush --sync --relinquish-var "
        "--smart-relinquish-var --setup-keys --update-catalog"
    )
)


def _rule_journalctl(call: _Call) -> None:
    if call.has_long(*_JOURNAL_WRITES):
        call.flag("medium", "journalctl deletes, rotates or moves journal files")


# -- class 3: builtins that change the shared shell for later --------------------------------


def _assigns(call: _Call, name: str | None, how: str) -> None:
    if name and _is_sensitive(name):
        call.flag("high", f"{how} sets {name}, which later commands run or are found through")


def _rule_printf(call: _Call) -> None:
    word = _option(call, "-v")
    if word is not None:
        _assigns(call, word.value or word.raw, "printf -v")


def _rule_read(call: _Call) -> None:
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


def _rule_hash(call: _Call) -> None:
    word = _option(call, "-p")
    if word is not None:
        call.flag("high", f"hash -p makes a command name run {_r._short(word.raw)} from now on")


def _rule_declare(call: _Call) -> None:
    """``command export PROMPT_COMMAND=…``: a declaration reached through a wrapper."""
    for word in call.positionals():
        value = word.value if word.value is not None else word.approx
        name, eq, rest = value.partition("=")
        if eq:
            call.analysis.judge_env(call.verdict, name, _r._word(rest))
        elif _is_sensitive(name):
            call.flag("medium", f"{call.program} {name} changes a variable later commands use")
    if call.key in ("export", "readonly") and call.has_short("f"):
        call.flag("medium", f"{call.program} -f hands shell functions to later commands")


def _rule_alias_more(call: _Call) -> None:
    for word in call.positionals():
        name, eq, _ = (word.value or word.raw).partition("=")
        if not eq:
            continue
        if name in _r._KNOWN and name not in ("ll", "la", "l"):
            call.flag("high", f"alias {name} replaces the {name} command in this shell")


def _rule_trap_more(call: _Call) -> None:
    if not call.ro:
        call.flag("medium", "trap leaves shell code in this shell to run later")


def _rule_enable(call: _Call) -> None:
    if call.has_short("f"):
        call.flag("high", "enable -f loads a shared library into the shell")
    elif call.has_short("nd") and call.positionals():
        call.flag("medium", "enable -n switches builtins off, so other programs run instead")


def _rule_complete(call: _Call) -> None:
    command = _option(call, "-C")
    if command is not None:
        call.code([command], f"{call.program} -C runs a command for completions", "medium")
    if call.key == "complete" and not call.has_short("pr") and call.args:
        call.flag("medium", "complete changes this shell's completion, which can run functions")
        call.ro = False


def _rule_bind(call: _Call) -> None:
    command = _option(call, "-x")
    if command is not None:
        body = (command.value or command.approx).split(":", 1)[-1].strip().strip("\"'")
        call.code([_r._word(body)], "bind -x runs a command on a key press", "medium")
    elif call.positionals() or call.has_short("fmrux"):
        call.flag("medium", "bind changes what keys type or run in this shell")
        call.ro = False


def _rule_set(call: _Call) -> None:
    values = call.values()
    if not values or values[0] == "--" or values in (["-o"], ["+o"]):
        return
    if values[0].startswith(("-", "+")):
        reason = f"{call.program} {values[0]} changes how this shell runs later commands"
        call.flag("medium", reason)
        call.ro = False


def _rule_shopt(call: _Call) -> None:
    if call.has_short("su") and call.positionals():
        call.flag("medium", "shopt changes how this shell runs later commands")
        call.ro = False


def _rule_setopt(call: _Call) -> None:
    if call.args:
        call.flag("medium", f"{call.program} changes how this shell runs later commands")
    else:
        call.ro = True


def _rule_umask(call: _Call) -> None:
    if call.positionals():
        call.flag("medium", "umask changes the permissions of every file created later")
        call.ro = False


def _rule_cd(call: _Call) -> None:
    """Later relative paths and git's repository follow a ``cd``; follow it when literal."""
    analysis = call.analysis
    analysis.moved = True
    positionals = call.positionals()
    target = positionals[0].value if positionals else "~"
    home = analysis.context.home if analysis.context is not None else None
    if target is None or call.key != "cd":
        analysis.cwd = None
    elif target in ("~", "") or target.startswith("~/"):
        analysis.cwd = (home + target[1:]) if home else None
    elif target.startswith("/"):
        analysis.cwd = posixpath.normpath(target)
    elif analysis.cwd is not None and target != "-":
        analysis.cwd = posixpath.normpath(posixpath.join(analysis.cwd, target))
    else:
        analysis.cwd = None


def _rule_editor(call: _Call) -> None:
    """Editors write files and run shell commands (``vim -c '!cmd'``): never read-only."""
    call.flag("medium", f"{call.program} edits files and can run shell commands")
    args = call.args
    for index, word in enumerate(args):
        value = word.value if word.value is not None else word.approx
        command = None
        if value in ("-c", "--cmd", "--eval", "-x") and index + 1 < len(args):
            nxt = args[index + 1]
            command = nxt.value if nxt.value is not None else nxt.approx
        elif value.startswith("+"):
            command = value[1:]
        if command is not None and "!" in command:
            shell = command.split("!", 1)[1]
            call.code([_r._word(shell)], f"{call.program} runs a shell command on start", "medium")
        elif command is not None and ("system(" in command or "shell" in command):
            call.flag("high", f"{call.program} runs code on start ({_r._short(command)})")


def _rule_fd(call: _Call) -> None:
    """fd's ``-x``/``-X`` run a command per match (like ``find -exec``)."""
    for index, word in enumerate(call.args):
        if word.value in ("-x", "--exec", "-X", "--exec-batch"):
            call.sub_judge(call.args[index + 1 :], f"{call.program} {word.value} runs")
            break
    home = call.analysis.context.home if call.analysis.context is not None else None
    positionals = [w.value or w.approx for w in call.positionals()]
    for path in positionals[1:] or ["."]:
        place = secret_inside(path, call.analysis.cwd, home, call.analysis.secret_places)
        if place is not None and call.has_short("xX"):
            call.verdict.secret(place)


def _rule_let(call: _Call) -> None:
    for word in call.args:
        name = (word.value or word.raw).split("=", 1)[0].strip()
        if "=" in (word.value or word.raw):
            _assigns(call, name, "let")


def _rule_toolchain(call: _Call) -> None:
    call.flag("low", f"{call.program} runs the project's own code (tests, builds, plugins)")
    call.ro = False


def unset_risk(names: list[str]) -> str | None:
    """Why ``unset NAME`` changes later commands (``unset PATH``), or None."""
    for name in names:
        if _is_sensitive(name):
            return f"unset {name} changes how later commands are found or run"
    return None


def function_risk(name: str) -> tuple[str, str]:
    """The label and reason for defining a shell function called ``name``."""
    hooks = ("precmd", "preexec", "chpwd", "periodic", "zshexit", "zshaddhistory")
    if name in _r._KNOWN or name in hooks or name.startswith("TRAP"):
        return "high", f"defining {name}() replaces what {name} does in this shell from now on"
    if name == "command_not_found_handle":
        return "high", "command_not_found_handle runs for every mistyped command"
    return "medium", f"the shell function {name} stays defined in this shell"


# -- class 5: secrets read by recursion or through another process ---------------------------


def _recursive_read(call: _Call, *, always: bool = False) -> None:
    """A recursive read of a folder that holds a secret place reads that secret."""
    home = call.analysis.context.home if call.analysis.context is not None else None
    paths = [w.value if w.value is not None else w.approx for w in call.positionals()]
    if call.key in ("rg", "ag", "ack", "ugrep", "grep"):
        paths = paths[1:] if _option(call, "-e", "--regexp", "-f", "--file") is None else paths
        paths = paths or ["."]
    for path in paths:
        place = secret_inside(path, call.analysis.cwd, home, call.analysis.secret_places)
        if place is not None:
            call.verdict.secret(place)


def _rule_grep(call: _Call) -> None:
    if (
        call.has_short("rR")
        or call.has_long("--recursive", "--dereference-recursive")
        or any(v in ("--directories=recurse",) for v in call.values())
    ):
        _recursive_read(call)


def _rule_copy_more(call: _Call) -> None:
    if call.has_short("rRa") or call.has_long("--recursive", "--archive"):
        _recursive_read(call)


def _rule_find_more(call: _Call) -> None:
    runs = {"-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf", "-fls", "-fprint0"}
    if any(v in runs for v in call.values()):
        starts = []
        for word in call.args:
            value = word.value or ""
            if value.startswith(("-", "(", "!")):
                break
            starts.append(word)
        home = call.analysis.context.home if call.analysis.context is not None else None
        for word in starts or [_r._word(".")]:
            place = secret_inside(
                word.value or word.approx, call.analysis.cwd, home, call.analysis.secret_places
            )
            if place is not None:
                call.verdict.secret(place)


def _rule_ps(call: _Call) -> None:
    """``ps e``/``ps eww``/``ps -E`` print every process's environment, API keys included."""
    for value in call.values():
        bsd = not value.startswith("-") and value.isalpha()
        if (bsd and "e" in value) or value == "-E":
            call.verdict.secret("/proc/*/environ")
    for names in (("-o", "-O", "--format"),):
        word = _option(call, *names)
        if word is not None and "env" in (word.value or word.raw):
            call.verdict.secret("/proc/*/environ")


# -- classes 4 and 8: git config and history -------------------------------------------------


def _rule_git_more(call: _Call) -> None:
    args = call.args
    index = 0
    elsewhere = False
    while index < len(args):
        value = args[index].value
        if value is None:
            break
        if value in ("-C", "--git-dir", "--work-tree", "-c", "--namespace", "--config-env"):
            elsewhere = elsewhere or value not in ("-c", "--config-env")
            index += 2
            continue
        if value.startswith(("--git-dir=", "--work-tree=")):
            elsewhere = True
        if not value.startswith("-"):
            break
        index += 1
    if index >= len(args) or args[index].value is None:
        return
    name = args[index].value or ""
    sub = _r._Call(call.analysis, call.verdict, "git", "git", args[index + 1 :], call.stdin)
    _history(sub, name)
    if sub.has_long("--ext-diff"):
        call.flag("medium", f"git {name} --ext-diff runs the external diff program configured")
    if name == "archive" and _option(sub, "-o", "--output") is not None:
        call.flag("medium", "git archive -o writes a file")
    _repository(call, name, elsewhere)


def _history(sub: _Call, name: str) -> None:
    first = next(iter(sub.positional_values()), None)
    if name == "push" and (
        sub.has_short("fd")
        or sub.has_long(
            "--force",
            "--force-with-lease",
            "--force-if-includes",
            "--mirror",
            "--delete",
            "--prune",
        )
        or any(v.startswith(("+", ":")) or ":+" in v for v in sub.positional_values())
        or any(v.startswith("+") or v.startswith(":") for v in sub.positional_values()[1:])
    ):
        sub.flag("high", "git push overwrites or deletes remote branches (history is lost)")
    elif name == "reset" and sub.has_long("--hard", "--merge", "--keep"):
        sub.flag("high", "git reset --hard discards uncommitted work for good")
    elif name == "checkout" and ("--" in sub.values() or "." in sub.positional_values()):
        sub.flag("medium", "git checkout -- overwrites uncommitted changes")
    elif name == "branch" and (sub.has_short("D") or (sub.has_short("d") and sub.has_short("f"))):
        sub.flag("high", "git branch -D deletes a branch even when it is not merged")
    elif name == "stash" and first in ("drop", "clear", "pop"):
        sub.flag("high" if first != "pop" else "medium", f"git stash {first} discards stashed work")
    elif name == "reflog" and first in ("expire", "delete"):
        sub.flag("high", f"git reflog {first} removes the record that lets lost commits be found")
    elif name == "gc" and any(v.startswith("--prune") for v in sub.values()):
        sub.flag("high", "git gc --prune deletes unreachable commits for good")
    elif name in ("filter-branch", "filter-repo", "replace"):
        sub.flag("high", f"git {name} rewrites history")
    elif name == "update-ref" and sub.has_short("d"):
        sub.flag("medium", "git update-ref -d deletes a ref")


def _repository(call: _Call, name: str, elsewhere: bool) -> None:
    """Judge the repository's own config: ``core.fsmonitor`` turns ``git status`` into a run."""
    context = call.analysis.context
    if context is None or not context.local or not call.analysis.cwd or elsewhere:
        why = "not checked"
    elif call.analysis.moved:
        why = "not checked (the command changes directory first)"
    else:
        config = repo_config(call.analysis.cwd)
        if config is None:
            return
        for hazard in hazards_for(config, name):
            call.flag(
                "high",
                f"repository config sets {hazard.key}: git {name} would run it "
                f"({_r._short(hazard.source)})",
            )
        if config.checked:
            return
        why = "not fully checked (an include could not be read)"
    call.flag("medium", f"repository config {why}: git {name} may run programs it names")
    call.ro = False


def _chain(*rules: _Rule | None) -> _Rule:
    present = [rule for rule in rules if rule is not None]

    def both(call: _Call) -> None:
        for rule in present:
            rule(call)

    return both


def register(rules: dict[str, _Rule], read_only: frozenset[str]) -> frozenset[str]:
    """Add these rules to ``rules`` (after any rule already there); return the read-only set."""
    extra: dict[str, _Rule] = {
        "rg": _rule_rg,
        "ag": _rule_rg,
        "ack": _rule_rg,
        "ugrep": _rule_rg,
        "sort": _rule_sort,
        "man": _rule_man,
        "bat": _rule_bat,
        "less": _rule_pager,
        "more": _rule_pager,
        "most": _rule_pager,
        "tar": _rule_tar_more,
        "zip": _rule_zip_more,
        "7z": _rule_zip_more,
        "xxd": _rule_xxd,
        "tree": _rule_tree,
        "base64": _rule_base64,
        "base32": _rule_base64,
        "script": _rule_script,
        "history": _rule_history,
        "journalctl": _rule_journalctl,
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
        "grep": _rule_grep,
        "cp": _rule_copy_more,
        "scp": _rule_copy_more,
        "rsync": _rule_copy_more,
        "find": _rule_find_more,
        "ps": _rule_ps,
        "git": _rule_git_more,
        "cd": _rule_cd,
        "fd": _rule_fd,
        "fdfind": _rule_fd,
        "let": _rule_let,
        "pushd": _rule_cd,
        "popd": _rule_cd,
    }
    for name in _TOOLCHAIN:
        extra[name] = _rule_toolchain
    for name in _EDITORS:
        extra[name] = _rule_editor
    for name, rule in extra.items():
        rules[name] = _chain(rules.get(name), rule)
    return read_only | READ_ONLY

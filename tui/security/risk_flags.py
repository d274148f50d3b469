"""Rules that judge a command by what its flags, builtins and repository config can do.

"Read-only" programs run other programs (``rg --pre``, ``sort --compress-program``, ``man -P``,
``tar --to-command``), write files (``xxd in out``, ``tree -o``, ``history -w``), plant code in
the shared shell for later (``printf -v PROMPT_COMMAND``, ``hash -p``, ``bind -x``), read
secrets by recursing into a home folder (``grep -r x ~``) or run what a cloned repository's
``.git/config`` names (``git status`` with ``core.fsmonitor``). Each rule here looks at the
flag, not the program's name. The shell builtins live in ``risk_shell``, git in ``risk_git``;
``register`` adds all of them when ``tui.security.risk`` is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.security import risk as _r
from tui.security import risk_git, risk_shell
from tui.security.risk_context import secret_inside

if TYPE_CHECKING:
    from tui.security.risk import _Call, _Word

_Rule = Callable[["_Call"], None]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


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


def _rule_toolchain(call: _Call) -> None:
    call.flag("low", f"{call.program} runs the project's own code (tests, builds, plugins)")
    call.ro = False


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
        "grep": _rule_grep,
        "cp": _rule_copy_more,
        "scp": _rule_copy_more,
        "rsync": _rule_copy_more,
        "find": _rule_find_more,
        "ps": _rule_ps,
        "fd": _rule_fd,
        "fdfind": _rule_fd,
    }
    for name in _TOOLCHAIN:
        extra[name] = _rule_toolchain
    for name in _EDITORS:
        extra[name] = _rule_editor
    extra.update(risk_shell.RULES)
    extra["git"] = risk_git.rule_git
    for name, rule in extra.items():
        rules[name] = _chain(rules.get(name), rule)
    return read_only | READ_ONLY

"""Rules that judge a command by what its flags, builtins and repository config can do.

"Read-only" programs run other programs (``rg --pre``, ``sort --compress-program``, ``man -P``,
``tar --to-command``), write files (``xxd in out``, ``tree -o``, ``history -w``), plant code in
the shared shell for later (``printf -v PROMPT_COMMAND``, ``hash -p``, ``bind -x``), read
secrets by recursing into a home folder (``grep -r x ~``) or run what a cloned repository's
``.git/config`` names (``git status`` with ``core.fsmonitor``). Each rule here looks at the
flag, not the program's name. The shell builtins live in ``shell_builtins``, git's history and
repository config in ``git_repo``; the dispatch runs these after a program's own rule.
"""

from __future__ import annotations

from tui.security.risk.call import Call, Rule
from tui.security.risk.context import secret_inside
from tui.security.risk.source import shorten
from tui.security.risk.tables.programs import EDITORS, TOOLCHAIN
from tui.security.risk.tables.subcommands import JOURNAL_WRITES
from tui.security.risk.words import Word, plain_word
from tui.security.risk.write_targets import judge_write_target


def _runs_program(call: Call, word: Word | None, label: str) -> None:
    """A flag whose value is a program (or command line) the tool runs: judge that."""
    if word is None:
        return
    call.code([word], label, "medium")


def _option(call: Call, *names: str) -> Word | None:
    return call.option_value(*names)


# -- class 1: programs run through a flag ----------------------------------------------------


def _rule_rg(call: Call) -> None:
    _runs_program(call, _option(call, "--pre"), "rg --pre runs a program on every file")
    _recursive_read(call, always=True)


def _rule_sort(call: Call) -> None:
    word = _option(call, "--compress-program")
    _runs_program(call, word, "sort --compress-program runs a program")


def _rule_man(call: Call) -> None:
    for names, what in (
        (("-P", "--pager"), "man -P runs a pager of the caller's choosing"),
        (("-H", "--html"), "man -H runs a browser of the caller's choosing"),
        (("--browser",), "man --browser runs a program"),
        (("-p", "--preprocessor"), ""),
    ):
        word = _option(call, *names)
        if word is not None and what:
            _runs_program(call, word, what)


def _rule_bat(call: Call) -> None:
    _runs_program(call, _option(call, "--pager"), "bat --pager runs a program")


def _rule_pager(call: Call) -> None:
    """less ``+!cmd`` runs a shell command on start; lesskey files can bind any."""
    for word in call.args:
        value = word.value if word.value is not None else word.approx
        if value.startswith("+") and ("!" in value or "|" in value):
            command = plain_word(value.lstrip("+:").lstrip("!|"))
            call.code([command], f"{call.program} + runs a shell command", "medium")
        elif value.startswith("++") or value.startswith("+"):
            call.flag("medium", f"{call.program} {value!r} runs commands of its own on start")
    if call.has_short("k") or call.has_long("--lesskey-file", "--lesskey-src"):
        call.flag("medium", f"{call.program} loads key bindings, which can run commands")


def _rule_tar_more(call: Call) -> None:
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
            call.code(
                [plain_word(command)], "tar --checkpoint-action=exec runs a command", "medium"
            )
    if _tar_creates(call):
        _recursive_read(call)


def _tar_creates(call: Call) -> bool:
    first = call.args[0].value if call.args else None
    letters = set(first) if first and not first.startswith("-") else set()
    for option in call.options():
        if not option.startswith("--"):
            letters |= set(option[1:])
    return bool(letters & set("cruA")) or call.has_long("--create", "--append", "--update")


def _rule_zip_more(call: Call) -> None:
    word = _option(call, "--unzip-command")
    for index, value in enumerate(call.values()):
        if value == "-TT" and index + 1 < len(call.args):
            word = call.args[index + 1]
        elif value.startswith("-TT") and len(value) > 3:
            word = plain_word(value[3:].removeprefix("="))
    _runs_program(call, word, "zip -TT runs a command to test the archive")
    if call.key == "zip" and (call.has_short("rR") or call.has_long("--recurse-paths")):
        _recursive_read(call)


# -- class 2: programs that write through a flag ---------------------------------------------


def _writes(call: Call, word: Word | None, verb: str) -> None:
    if word is None:
        return
    call.not_read_only()
    judge_write_target(call.verdict, word, verb, redirect=True)


def _rule_xxd(call: Call) -> None:
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


def _rule_tree(call: Call) -> None:
    _writes(call, _option(call, "-o"), "tree -o writes to")


def _rule_base64(call: Call) -> None:
    _writes(call, _option(call, "-o", "--output"), f"{call.program} writes to")


def _rule_script(call: Call) -> None:
    positionals = call.positionals()
    target = positionals[0] if positionals else plain_word("typescript")
    _writes(call, target, "script records the terminal into")


def _rule_history(call: Call) -> None:
    if call.has_short("cdanrwsp"):
        call.not_read_only()
        call.flag("medium", "history changes the shell's history or its file")
        if call.has_short("wa"):
            positionals = call.positionals()
            _writes(call, positionals[0] if positionals else None, "history writes to")


def _rule_journalctl(call: Call) -> None:
    if call.has_long(*JOURNAL_WRITES):
        call.flag("medium", "journalctl deletes, rotates or moves journal files")


def _rule_editor(call: Call) -> None:
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
            call.code(
                [plain_word(shell)], f"{call.program} runs a shell command on start", "medium"
            )
        elif command is not None and ("system(" in command or "shell" in command):
            call.flag("high", f"{call.program} runs code on start ({shorten(command)})")


def _rule_fd(call: Call) -> None:
    """fd's ``-x``/``-X`` run a command per match (like ``find -exec``)."""
    for index, word in enumerate(call.args):
        if word.value in ("-x", "--exec", "-X", "--exec-batch"):
            call.sub_judge(call.args[index + 1 :], f"{call.program} {word.value} runs")
            break
    home = call.judge.context.home if call.judge.context is not None else None
    positionals = [w.value or w.approx for w in call.positionals()]
    for path in positionals[1:] or ["."]:
        place = secret_inside(path, call.judge.cwd, home, call.judge.secret_places)
        if place is not None and call.has_short("xX"):
            call.verdict.secret(place)


def _rule_toolchain(call: Call) -> None:
    call.flag("low", f"{call.program} runs the project's own code (tests, builds, plugins)")
    call.ro = False


# -- class 5: secrets read by recursion or through another process ---------------------------


def _recursive_read(call: Call, *, always: bool = False) -> None:
    """A recursive read of a folder that holds a secret place reads that secret."""
    home = call.judge.context.home if call.judge.context is not None else None
    paths = [w.value if w.value is not None else w.approx for w in call.positionals()]
    if call.key in ("rg", "ag", "ack", "ugrep", "grep"):
        paths = paths[1:] if _option(call, "-e", "--regexp", "-f", "--file") is None else paths
        paths = paths or ["."]
    for path in paths:
        place = secret_inside(path, call.judge.cwd, home, call.judge.secret_places)
        if place is not None:
            call.verdict.secret(place)


def _rule_grep(call: Call) -> None:
    if (
        call.has_short("rR")
        or call.has_long("--recursive", "--dereference-recursive")
        or any(v in ("--directories=recurse",) for v in call.values())
    ):
        _recursive_read(call)


def _rule_copy_more(call: Call) -> None:
    if call.has_short("rRa") or call.has_long("--recursive", "--archive"):
        _recursive_read(call)


def _rule_find_more(call: Call) -> None:
    runs = {"-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf", "-fls", "-fprint0"}
    if any(v in runs for v in call.values()):
        starts = []
        for word in call.args:
            value = word.value or ""
            if value.startswith(("-", "(", "!")):
                break
            starts.append(word)
        home = call.judge.context.home if call.judge.context is not None else None
        for word in starts or [plain_word(".")]:
            place = secret_inside(
                word.value or word.approx, call.judge.cwd, home, call.judge.secret_places
            )
            if place is not None:
                call.verdict.secret(place)


def _rule_ps(call: Call) -> None:
    """``ps e``/``ps eww``/``ps -E`` print every process's environment, API keys included."""
    for value in call.values():
        bsd = not value.startswith("-") and value.isalpha()
        if (bsd and "e" in value) or value == "-E":
            call.verdict.secret("/proc/*/environ")
    for names in (("-o", "-O", "--format"),):
        word = _option(call, *names)
        if word is not None and "env" in (word.value or word.raw):
            call.verdict.secret("/proc/*/environ")


RULES: dict[str, Rule] = {
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
    **dict.fromkeys(TOOLCHAIN, _rule_toolchain),
    **dict.fromkeys(EDITORS, _rule_editor),
}
"""Run after any rule the program has of its own (see ``dispatch``)."""

"""Rules for programs that delete, copy, move, create, edit or archive files: the target
decides whether system files are at stake."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tui.security.risk.call import Call, Rule
from tui.security.risk.tables.programs import ARCHIVERS, COMPRESSORS
from tui.security.risk.words import Word, plain_word
from tui.security.risk.write_targets import judge_write_target, normalise_path, system_path


def check_targets(call: Call, words: Iterable[Word], verb: str, *, replaces: bool = False) -> None:
    for word in words:
        judge_write_target(call.verdict, word, verb, redirect=False, replaces=replaces)


def _rule_rm(call: Call) -> None:
    for target in call.positional_values():
        norm = normalise_path(target)
        if norm in ("/", "/*", "~", "~/*", "*", ".", "..", "$HOME", "${HOME}") or system_path(
            target
        ):
            call.flag("high", f"{call.program} targets {target}")
    if call.has_long("--no-preserve-root"):
        call.flag("high", "--no-preserve-root lets rm delete the whole file system")


def _rule_dd(call: Call) -> None:
    for value in call.values():
        if value.startswith("of="):
            check_targets(call, [plain_word(value[3:])], "dd writes to")


def _rule_copy(call: Call) -> None:
    """cp, ln, install, rsync: the destination decides whether system files are at stake."""
    target = call.option_value("-t", "--target-directory")
    positionals = call.positionals()
    replaces = call.key != "cp"
    if target is not None:
        check_targets(call, [target], f"{call.program} writes into", replaces=replaces)
    elif len(positionals) >= 2 or call.key == "ln":
        check_targets(call, positionals[-1:], f"{call.program} writes to", replaces=replaces)


def _rule_mv(call: Call) -> None:
    check_targets(call, call.positionals(), f"{call.program} moves", replaces=True)


def _rule_create(call: Call) -> None:
    check_targets(call, call.positionals(), f"{call.program} writes to")


def _rule_tee(call: Call) -> None:
    verb = "appends to" if call.has_short("a") or call.has_long("--append") else "writes to"
    for word in call.positionals():
        judge_write_target(call.verdict, word, f"tee {verb}", redirect=True)
    call.ro = call.verdict.risk == "low"


def _rule_sort(call: Call) -> None:
    output = call.option_value("-o", "--output")
    if output is not None:
        call.not_read_only()
        judge_write_target(call.verdict, output, "sort writes to", redirect=True)


def _rule_uniq(call: Call) -> None:
    positionals = call.positionals()
    if len(positionals) >= 2:
        call.not_read_only()
        judge_write_target(call.verdict, positionals[1], "uniq writes to", redirect=True)


_SED_EXEC = re.compile(r"/[gpiImM0-9w]*e[gpiImM0-9]*\s*($|[;}\n])|(^|[;{}\n])\s*[0-9$]*\s*e(\s|$)")
_SED_WRITE = re.compile(r"/[gpiImM0-9e]*w\s|(^|[;{}\n])\s*[0-9$]*\s*[wW]\s")


def _rule_sed(call: Call) -> None:
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
        check_targets(call, positionals, "sed -i edits")
    call.ro = not in_place and call.verdict.risk == "low"


_AWK_RUNS = re.compile(r"\bsystem\s*\(|\|\s*getline|\|&|\bprintf?\b[^;{}]*\|")
_AWK_WRITES = re.compile(r"\bprintf?\b[^;{}]*>")


def _rule_awk(call: Call) -> None:
    program: Word | None = None
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


def _rule_find(call: Call) -> None:
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


def _rule_tar(call: Call) -> None:
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
            check_targets(call, [directory], "tar extracts into")
    else:
        call.flag("medium", "tar writes an archive")


def _rule_unzip(call: Call) -> None:
    if call.has_short("ltvZp") and not call.has_short("d"):
        call.ro = True
        return
    call.flag("medium", "unzip extracts files and may overwrite them")
    directory = call.option_value("-d")
    if directory is not None:
        check_targets(call, [directory], "unzip extracts into")


def _rule_compress(call: Call) -> None:
    if call.has_short("clt") or call.has_long("--stdout", "--to-stdout", "--list", "--test"):
        call.ro = True
        return
    call.flag("medium", f"{call.program} replaces files with (de)compressed copies")


def _rule_archive(call: Call) -> None:
    if call.positional_values()[:1] in (["l"], ["t"]):
        call.ro = True
        return
    call.flag("medium", f"{call.program} writes or extracts an archive")


def _rule_permissions(call: Call) -> None:
    for target in call.positional_values():
        if normalise_path(target) == "/" or system_path(target):
            call.flag("high", f"{call.program} changes {target}")


RULES: dict[str, Rule] = {
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
    **dict.fromkeys(COMPRESSORS, _rule_compress),
    **dict.fromkeys(ARCHIVERS, _rule_archive),
}

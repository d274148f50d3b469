"""Rules for programs that run code: shells, interpreters, eval, sudo, env -S, ssh … Shell
code is parsed and judged as the commands it contains; other code is opaque and rated high."""

from __future__ import annotations

import shlex
from dataclasses import replace

from tui.security.risk.call import Call, Rule
from tui.security.risk.rules.packages import rule_packages
from tui.security.risk.source import shorten
from tui.security.risk.tables.programs import INFO_FLAGS, LANGS, SHELLS
from tui.security.risk.tables.subcommands import SSH_WITH_ARG
from tui.security.risk.tables.wrappers import SUDO
from tui.security.risk.unwrap import skip_options
from tui.security.risk.words import Word, plain_word


def stdin_code(call: Call, lang: str, *, shell: bool) -> None:
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
        call.judge.nested(call.verdict, stdin.text, label, "medium")
    elif stdin.kind in ("heredoc", "herestring"):
        call.flag("high", f"{name} runs {lang} code from a here-document, which can do anything")
    elif stdin.kind == "none":
        call.flag("medium", f"{name} reads {lang} code from its input")


def _substituted_script(call: Call, word: Word, what: str) -> bool:
    """``bash <(curl …)``: a script that is another command's output."""
    node = word.node
    if node is None or node.type != "process_substitution":
        return False
    if call.judge.contains_fetch(node):
        call.flag("high", f"runs a network download as a {what}")
    else:
        call.flag("high", f"runs another command's output as a {what}")
    return True


def _unread_script(call: Call, word: Word) -> None:
    """``python x.py``, ``bash x.sh``: a program whose text this check never sees."""
    what = shorten(word.raw)
    call.flag("low", f"{call.program} runs {what}, a script this check does not read")
    call.not_read_only()


def _rule_shell(call: Call) -> None:
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
        if value in INFO_FLAGS:
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
        stdin_code(call, "shell", shell=True)
        return
    if not _substituted_script(call, rest[0], "shell script"):
        _unread_script(call, rest[0])


def _rule_interpreter(call: Call) -> None:
    lang = LANGS[call.key]
    call.not_read_only()
    args = call.args
    index = 0
    while index < len(args):
        word = args[index]
        value = word.value
        if value is None:
            break
        if value in INFO_FLAGS or (value == "-v" and call.key != "python"):
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
            if any(c.node is not None and call.judge.contains_fetch(c.node) for c in code):
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
        stdin_code(call, lang.name, shell=False)
    elif not _substituted_script(call, rest[0], f"{lang.name} program"):
        _unread_script(call, rest[0])


def _rule_bun(call: Call) -> None:
    """bun is both a JavaScript runtime (``bun -e``) and a package manager (``bun add``)."""
    if any(v.split("=", 1)[0] in LANGS["bun"].code_options for v in call.options()):
        _rule_interpreter(call)
    else:
        rule_packages(call)


def _rule_deno(call: Call) -> None:
    call.not_read_only()
    verb = next(iter(call.positional_values()), "")
    if verb == "eval":
        call.flag("high", "deno eval runs inline JavaScript code, which can do anything")
    elif verb in ("install", "add", "remove", "uninstall", "upgrade", "compile"):
        call.flag("medium", f"deno {verb} changes installed packages or files")


def _rule_eval(call: Call) -> None:
    if call.args:
        call.code(call.args, "eval runs a string as shell code", "medium")


def _rule_trap(call: Call) -> None:
    positionals = call.positionals()
    if call.has_short("lp") or not positionals or positionals[0].value in ("-", ""):
        call.ro = True
        return
    call.code(positionals[:1], "trap sets shell code to run later", "low")


def _rule_source(call: Call) -> None:
    call.not_read_only()
    positionals = call.positionals()
    if not positionals:
        return
    if positionals[0].value in ("/dev/stdin", "-"):
        stdin_code(call, "shell", shell=True)
    elif not _substituted_script(call, positionals[0], "shell script"):
        _unread_script(call, positionals[0])


def _rule_watch(call: Call) -> None:
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


def _rule_flock(call: Call) -> None:
    command = call.option_value("-c", "--command")
    if command is not None:
        call.code([command], "flock -c runs a shell command string", "low")
        return
    positionals = call.positionals()
    start = call.args.index(positionals[0]) + 1 if positionals else len(call.args)
    call.sub_judge(call.args[start:], "flock runs")


def _rule_su(call: Call) -> None:
    command = call.option_value("-c", "--command")
    if command is not None:
        call.code([command], "su -c runs a command as another user", "high")


def _rule_sudo(call: Call) -> None:
    """Reached only when sudo does not simply wrap a command: a root shell, an editor, a list."""
    call.not_read_only()
    call.flag("high", f"{call.program} runs commands as root")
    if call.key == "sudo" and call.has_short("e"):
        call.flag("high", "sudo -e edits files as root")
        return
    spec = replace(SUDO, stop_letters=frozenset(), stop_long=frozenset())
    start, _ = skip_options(call.args, 0, spec)
    rest = call.args[start:]
    if call.has_short("is") or call.has_long("--login", "--shell"):
        if rest:
            call.code(rest, f"{call.program} runs a command through a root shell", "high")
        else:
            call.flag("high", f"{call.program} opens a root shell")
    elif rest:
        call.sub_judge(rest, f"{call.program} runs")


def _rule_env(call: Call) -> None:
    split = call.option_value("-S", "--split-string")
    if split is None:
        return
    call.not_read_only()
    if split.value is None:
        call.flag("high", "env -S runs a command line built at run time")
        return
    try:
        argv = [plain_word(part) for part in shlex.split(split.value)]
    except ValueError:
        call.flag("medium", "env -S has unbalanced quotes")
        return
    call.sub_judge(argv, "env -S runs")


def _rule_alias(call: Call) -> None:
    """An alias runs its body whenever its name is typed: judge the body."""
    for word in call.positionals():
        name, eq, body = (word.value or "").partition("=")
        if eq and body.strip():
            call.judge.nested(call.verdict, body, f"alias {name} runs a command", "low")
    call.ro = call.verdict.risk == "low"


def _rule_script(call: Call) -> None:
    command = call.option_value("-c", "--command")
    if command is not None:
        call.code([command], "script -c runs a shell command", "low")


def _rule_ssh(call: Call) -> None:
    """ssh is high anyway; the remote command's own reasons help the person judge it."""
    args = call.args
    index = 0
    while index < len(args) and (args[index].value or "").startswith("-"):
        index += 2 if args[index].value in SSH_WITH_ARG else 1
    remote = args[index + 1 :]
    if remote:
        call.code(remote, f"{call.program} runs a command on the remote machine", "high")


RULES: dict[str, Rule] = {
    **dict.fromkeys(LANGS, _rule_interpreter),
    "bun": _rule_bun,
    "alias": _rule_alias,
    "script": _rule_script,
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
    **dict.fromkeys(SHELLS, _rule_shell),
}

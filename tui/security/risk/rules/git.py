"""Rules for git's subcommands and its ``-c``/``config`` settings, some of which name a
program for git to run."""

from __future__ import annotations

import re

from tui.security.risk.call import Call, Rule
from tui.security.risk.source import shorten
from tui.security.risk.tables.subcommands import (
    GIT_DANGEROUS_KEYS,
    GIT_KNOWN,
    GIT_READ,
    GIT_REASONS,
)
from tui.security.risk.verdict import Risk, Verdict
from tui.security.risk.words import Word, plain_word

_GIT_DANGEROUS_PATTERN = re.compile(
    r"^(alias|pager|filter|credential|includeif|hook)\."
    r"|^diff\..*\.(command|textconv)$|^merge\..*\.driver$|^gpg\..*\.program$"
    r"|^remote\..*\.(uploadpack|receivepack|proxy)$|^(difftool|mergetool|browser|man)\..*\.(cmd|path)$"
    r"|^protocol\..*\.allow$|^submodule\..*\.update$|^url\..*\.insteadof$"
)
_GIT_SAFE_KEYS = re.compile(
    r"^(color|user|author|committer|init|advice|log|i18n|safe|column|blame|status|grep|gc|fetch)\."
    r"|^core\.(quotepath|autocrlf|safecrlf|abbrev|whitespace|filemode|ignorecase|longpaths)$"
    r"|^(diff\.(noprefix|renames|algorithm|colormoved|mnemonicprefix)|merge\.conflictstyle"
    r"|pull\.(rebase|ff)|commit\.gpgsign|tag\.gpgsign|push\.(default|autosetupremote)"
    r"|rebase\.(autosquash|autostash)|format\.pretty)$"
)


_GIT_NOT_COMMAND = re.compile(
    r"^(include\.path|core\.(hookspath|worktree)|protocol\..*allow|url\..*\.insteadof|includeif\..*)$"
)


def _git_config(
    call: Call,
    word: Word | None,
    via: str,
    value: Word | None = None,
    *,
    persistent: bool = False,
) -> None:
    """``git -c key=value`` and ``git config key value``: some keys name a program to run.

    For ``git -c`` the issue asks for "high" outright. A persistent ``git config`` is judged by
    the command it stores (at least medium): ``core.editor vim`` is ordinary, an alias that
    runs ``rm -rf ~`` is not.
    """
    if word is None:
        return
    text = word.value
    if text is None:
        call.flag("high", f"{via} sets configuration chosen at run time")
        return
    key, has_value, setting = text.partition("=")
    key = key.lower()
    if value is not None and not has_value:
        setting = value.value if value.value is not None else value.approx
    if key in GIT_DANGEROUS_KEYS or _GIT_DANGEROUS_PATTERN.search(key):
        floor: Risk = "medium" if persistent else "high"
        if persistent:
            call.flag(floor, f"{via} {key} stores a command that git will run later")
        else:
            call.flag(floor, f"{via} {key} can make git run any command")
        command = setting[1:] if setting.startswith("!") else setting
        if command.strip() and not _GIT_NOT_COMMAND.search(key):
            label = f"the {key} setting runs a command"
            call.judge.nested(call.verdict, command, label, floor, announce=False)
    elif not _GIT_SAFE_KEYS.search(key) and not persistent:
        call.flag("medium", f"{via} {key} changes git's configuration")


def _rule_git(call: Call) -> None:
    args = call.args
    index = 0
    while index < len(args):
        value = args[index].value
        if value is None:
            break
        if value == "-c":
            _git_config(call, args[index + 1] if index + 1 < len(args) else None, "git -c")
            index += 2
            continue
        if value.startswith("--config-env"):
            pair = value.partition("=")[2] or (
                (args[index + 1].value or "") if index + 1 < len(args) else ""
            )
            _git_config(call, plain_word(pair.partition("=")[0] + "="), "git --config-env")
            index += 1 if "=" in value else 2
            continue
        if value.startswith("--exec-path="):
            call.flag("high", "git --exec-path makes git run programs from another directory")
        if value in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"):
            index += 2
            continue
        if not value.startswith("-"):
            break
        index += 1
    if index >= len(args):
        call.ro = True
        return
    sub = args[index]
    if sub.value is None:
        call.flag("high", f"the git subcommand {shorten(sub.raw)!r} is chosen at run time")
        return
    sub_call = Call(call.judge, call.verdict, "git", "git", args[index + 1 :], call.stdin)
    _rule_git_sub(sub_call, sub.value)
    call.ro = _git_read_only(sub.value, args[index + 1 :], call) and call.verdict.risk == "low"


def _git_read_only(name: str, rest: list[Word], call: Call) -> bool:
    sub = Call(call.judge, Verdict(), "git", "git", rest, call.stdin)
    first = next(iter(sub.positional_values()), None)
    if name in GIT_READ:
        return not sub.has_long("--output", "--open-files-in-pager") and not (
            name == "grep" and sub.has_short("O")
        )
    if name == "branch":
        listing = sub.has_short("lar") or sub.has_long(
            "--list", "--all", "--remotes", "--contains", "--no-contains", "--merged"
        )
        writes = sub.has_short("dDmMcCfu") or sub.has_long(
            "--delete", "--move", "--copy", "--force", "--set-upstream-to", "--unset-upstream"
        )
        return not writes and (first is None or listing)
    if name == "tag":
        writes = sub.has_short("dasfmFu") or sub.has_long("--delete", "--annotate", "--sign")
        return not writes and (first is None or sub.has_short("l") or sub.has_long("--list"))
    if name == "remote":
        return first in (None, "show", "get-url")
    if name == "config":
        return first in ("get", "list") or (
            sub.has_long("--get", "--get-all", "--get-regexp", "--list", "--get-urlmatch")
            or sub.has_short("l")
        )
    if name in ("stash", "worktree", "notes"):
        return first in ("list", "show")
    if name == "reflog":
        return first in (None, "show", "exists")
    if name == "submodule":
        return first in (None, "status", "summary")
    if name == "bisect":
        return first in ("log", "view", "visualize")
    if name == "clean":
        return sub.has_short("n") or sub.has_long("--dry-run")
    return False


def _rule_git_sub(call: Call, name: str) -> None:
    values = call.values()
    if any(
        v.startswith(("--upload-pack", "--receive-pack", "--exec=")) or v.startswith("ext::")
        for v in values
    ) or (name == "clone" and call.has_short("u")):
        call.flag("high", f"git {name} is told to run a program of the caller's choosing")
    if name == "grep" and (call.has_short("O") or call.has_long("--open-files-in-pager")):
        call.flag("high", "git grep -O runs a program on the matching files")
    if name in GIT_READ or _git_read_only(name, call.args, call):
        if call.has_long("--output"):
            call.flag("medium", f"git {name} --output writes a file")
        return
    reason = GIT_REASONS.get(name)
    if name not in GIT_REASONS and name not in GIT_KNOWN:
        reason = f"git {name} is not a known read-only git command (it may be an alias)"
    call.flag("medium", reason or f"git {name} changes the repository")
    first = next(iter(call.positional_values()), None)
    if name == "clean" and (call.has_short("f") or call.has_long("--force")):
        extra = " and ignored ones" if call.has_short("xX") else ""
        call.flag("high", f"git clean -f permanently deletes untracked files{extra}")
    elif name == "push" and (
        call.has_short("fd")
        or call.has_long("--force", "--force-with-lease", "--mirror", "--delete", "--prune")
        or any(v.startswith(("+", ":")) for v in call.positional_values())
    ):
        call.flag("medium", "it force-pushes or deletes remote branches (rewrites remote history)")
    elif name == "reset" and call.has_long("--hard"):
        call.flag("medium", "git reset --hard discards uncommitted changes")
    elif name == "rebase":
        command = call.option_value("-x", "--exec")
        if command is not None:
            call.code([command], "git rebase --exec runs a shell command", "medium")
    elif name == "config":
        positionals = [p for p in call.positionals() if p.value not in ("set", "add")]
        if positionals:
            value = positionals[1] if len(positionals) > 1 else None
            _git_config(call, positionals[0], "git config", value=value, persistent=True)
    elif name == "submodule" and first == "foreach":
        rest = [p for p in call.positionals() if p.value != "foreach"]
        call.code(rest, "git submodule foreach runs a shell command", "medium")
    elif name == "bisect" and first == "run":
        start = next(i for i, a in enumerate(call.args) if a.value == "run") + 1
        call.sub_judge(call.args[start:], "git bisect run runs")
    elif name == "filter-branch":
        for option in ("--tree-filter", "--index-filter", "--msg-filter", "--commit-filter"):
            command = call.option_value(option)
            if command is not None:
                call.code([command], f"git filter-branch {option} runs a shell command", "medium")
    elif name in ("difftool", "mergetool"):
        command = call.option_value("-x", "--extcmd")
        if command is not None:
            call.code([command], f"git {name} --extcmd runs a shell command", "medium")


RULES: dict[str, Rule] = {"git": _rule_git}

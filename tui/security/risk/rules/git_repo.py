"""Rules for git beyond its subcommand table: history that cannot be recovered, and the
repository's own config, which can make a "read" like ``git status`` run a program.
The dispatch runs it after git's subcommand rule.
"""

from __future__ import annotations

from tui.security.gitconfig import hazards_for, repo_config
from tui.security.risk.call import Call, Rule
from tui.security.risk.source import shorten

# -- classes 4 and 8: git config and history -------------------------------------------------


def _rule_git(call: Call) -> None:
    """History loss, ``--ext-diff``, ``archive -o`` and the repository's config."""
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
    sub = Call(call.judge, call.verdict, "git", "git", args[index + 1 :], call.stdin)
    _history(sub, name)
    if sub.has_long("--ext-diff"):
        call.flag("medium", f"git {name} --ext-diff runs the external diff program configured")
    if name == "archive" and sub.option_value("-o", "--output") is not None:
        call.flag("medium", "git archive -o writes a file")
    _repository(call, name, elsewhere)


def _history(sub: Call, name: str) -> None:
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


def _repository(call: Call, name: str, elsewhere: bool) -> None:
    """Judge the repository's own config: ``core.fsmonitor`` turns ``git status`` into a run."""
    context = call.judge.context
    if context is None or not context.local or not call.judge.cwd or elsewhere:
        why = "not checked"
    elif call.judge.moved:
        why = "not checked (the command changes directory first)"
    else:
        config = repo_config(call.judge.cwd)
        if config is None:
            return
        for hazard in hazards_for(config, name):
            call.flag(
                "high",
                f"repository config sets {hazard.key}: git {name} would run it "
                f"({shorten(hazard.source)})",
            )
        if config.checked:
            return
        why = "not fully checked (an include could not be read)"
    call.flag("medium", f"repository config {why}: git {name} may run programs it names")
    call.ro = False


RULES: dict[str, Rule] = {"git": _rule_git}

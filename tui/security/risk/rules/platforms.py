"""Rules for the programs that drive containers, clusters, infrastructure, GitHub and tmux:
which verbs only read, which change or destroy."""

from __future__ import annotations

import re

from tui.security.risk.call import Call, Rule
from tui.security.risk.tables.subcommands import (
    DOCKER_GLOBAL_WITH_ARG,
    DOCKER_GROUPS,
    DOCKER_READ,
    GH_READ_VERBS,
    KUBECTL_READ,
    TMUX_COMMANDS,
    TMUX_READ,
    TMUX_WITH_ARG,
)
from tui.security.risk.words import Word
from tui.security.risk.write_targets import normalise_path, system_path


def _rule_docker(call: Call) -> None:
    args = call.args
    index = 0
    if call.key == "docker-compose":
        verb = "compose:" + next(iter(call.positional_values()), "")
    else:
        while index < len(args) and (args[index].value or "").startswith("-"):
            index += 2 if args[index].value in DOCKER_GLOBAL_WITH_ARG else 1
        words = [a.value or "" for a in args[index : index + 2]]
        verb = words[0] if words else ""
        if verb in DOCKER_GROUPS and len(words) > 1:
            verb = f"{verb}:{words[1]}"
    if verb in DOCKER_READ or not verb:
        call.ro = True
        return
    shown = verb.replace(":", " ")
    call.flag("medium", f"{call.program} {shown} changes containers, images or volumes")
    values = call.values()
    host_access = call.has_long("--privileged") or any(
        re.search(r"^--(pid|ipc|userns|uts)=host$|^--cap-add=(all|sys_admin)$", v, re.I)
        for v in values
    )
    for flag_index, value in enumerate(values):
        mount = None
        if value in ("-v", "--volume", "--mount") and flag_index + 1 < len(values):
            mount = values[flag_index + 1]
        elif value.startswith(("--volume=", "--mount=", "-v")) and len(value) > 2:
            mount = value.split("=", 1)[-1] if value.startswith("--") else value[2:]
        if mount is not None:
            source = re.sub(r"^(type=bind,)?(source|src)=", "", mount).split(":", 1)[0]
            source = source.split(",", 1)[0]
            if normalise_path(source) == "/" or system_path(source) or "docker.sock" in source:
                host_access = True
    if host_access:
        call.flag("high", f"{call.program} gives a container access to the host system")


def _rule_kubectl(call: Call) -> None:
    positionals = call.positional_values()
    verb = positionals[0] if positionals else ""
    if (
        verb in KUBECTL_READ
        or not verb
        or (
            verb == "config"
            and positionals[1:2] in (["view"], ["get-contexts"], ["current-context"])
        )
    ):
        call.ro = True
    elif verb == "delete":
        call.flag("high", "kubectl delete deletes cluster resources")
    else:
        call.flag("medium", f"kubectl {verb} changes the cluster")


def _rule_terraform(call: Call) -> None:
    verb = next(iter(call.positional_values()), "")
    if verb == "destroy" or (verb == "apply" and call.has_long("-destroy")):
        call.flag("high", f"{call.program} destroy deletes infrastructure")
    elif verb in ("plan", "show", "validate", "output", "version", "providers", "graph", ""):
        call.ro = verb != "plan" or not call.has_long("-out")
    else:
        call.flag("medium", f"{call.program} {verb} changes infrastructure or state")


def _rule_gh(call: Call) -> None:
    positionals = call.positional_values()
    top = positionals[0] if positionals else ""
    verb = positionals[1] if len(positionals) > 1 else ""
    if top == "api":
        method = call.option_value("-X", "--method")
        writes = call.has_short("fF") or call.has_long("--field", "--raw-field", "--input")
        if writes or (method is not None and (method.value or "").upper() != "GET"):
            call.flag("medium", "gh api sends a write request to GitHub")
        else:
            call.ro = True
    elif top == "repo" and verb == "delete":
        call.flag("high", "gh repo delete deletes a repository")
    elif verb in GH_READ_VERBS or top in ("status", "search", "version", "help", ""):
        call.ro = True
    else:
        call.flag("medium", f"gh {top} {verb} changes state on GitHub".replace("  ", " "))


def _rule_tmux(call: Call) -> None:
    """tmux can type into or start commands in other terminals: judge what it would run."""
    args = call.args
    index = 0
    while index < len(args) and (args[index].value or "").startswith("-"):
        if args[index].value == "-c" and index + 1 < len(args):
            call.code(args[index + 1 : index + 2], "tmux -c runs a shell command", "medium")
        index += 2 if args[index].value in ("-L", "-S", "-f", "-c") else 1
    verb = args[index].value if index < len(args) else None
    rest: list[Word] = []
    index += 1
    while index < len(args):
        value = args[index].value or ""
        if value.startswith("-") and value != "-" and not rest:
            index += 2 if value in TMUX_WITH_ARG else 1
            continue
        rest.append(args[index])
        index += 1
    if verb is None or verb in TMUX_READ:
        call.ro = True
    elif verb in ("send-keys", "send"):
        enter = {"Enter", "C-m", "KPEnter", "C-j"}
        typed = [w for w in rest if w.value not in enter]
        if any(w.value in enter for w in rest):
            call.code(typed, "tmux send-keys types a command into another terminal", "medium")
        else:
            call.flag("medium", "tmux send-keys types into another terminal")
    elif verb in TMUX_COMMANDS and rest:
        call.code(rest, f"tmux {verb} runs a shell command", "medium")
    else:
        call.flag("medium", f"tmux {verb} changes terminal sessions")


RULES: dict[str, Rule] = {
    "tmux": _rule_tmux,
    "docker": _rule_docker,
    "docker-compose": _rule_docker,
    "kubectl": _rule_kubectl,
    "terraform": _rule_terraform,
    "tofu": _rule_terraform,
    "gh": _rule_gh,
}

"""Rules for programs that change processes, services, the clock, the network settings, or
talk to other machines (kill, systemctl, crontab, ip, nc, rsync, curl, wget …)."""

from __future__ import annotations

import re

from tui.security.risk.call import Call, Rule
from tui.security.risk.rules.code import stdin_code
from tui.security.risk.rules.files import check_targets
from tui.security.risk.source import shorten
from tui.security.risk.tables.subcommands import NET_VERBS, SYSTEMCTL_HIGH, SYSTEMCTL_READ
from tui.security.risk.write_targets import harmless_target


def _rule_kill(call: Call) -> None:
    values = call.values()
    if call.has_short("lL") and len(values) <= 2:
        call.ro = True
        return
    targets: list[str] = []
    index = 0
    while index < len(values):
        value = values[index]
        if value == "--":
            targets.extend(values[index + 1 :])
            break
        if index == 0 and value.startswith("-"):
            index += 2 if value in ("-s", "-n") else 1
            continue
        targets.append(value)
        index += 1
    if any(t in ("1", "-1") for t in targets):
        call.flag("high", "kill targets init or every process")
    elif values[:1] == ["-0"] or values[:2] == ["-s", "0"]:
        call.ro = True
    else:
        call.flag("medium", "kill sends signals to processes")


def _rule_systemctl(call: Call) -> None:
    verb = next(iter(call.positional_values()), "")
    if verb in SYSTEMCTL_HIGH:
        call.flag("high", f"systemctl {verb} stops services or the machine")
    elif verb in SYSTEMCTL_READ or not verb:
        call.ro = True
    else:
        call.flag("medium", f"systemctl {verb} changes services")


def _rule_service(call: Call) -> None:
    positionals = call.positional_values()
    verb = positionals[1] if len(positionals) > 1 else ""
    if verb in ("stop", "disable", "kill"):
        call.flag("high", f"service {verb} stops a system service")
    elif verb == "status" or call.has_long("--status-all"):
        call.ro = True
    else:
        call.flag("medium", "service changes a system service")


def _rule_scheduler(call: Call) -> None:
    """at and batch read the commands to schedule from stdin, like a shell does."""
    if call.stdin.kind in ("pipe", "fetch", "heredoc", "herestring"):
        stdin_code(call, "shell", shell=True)
        call.flag("medium", f"{call.program} schedules commands to run later")


def _rule_crontab(call: Call) -> None:
    if call.positional_values()[:1] == ["-"] and call.stdin.kind in ("pipe", "fetch"):
        call.flag("high", "crontab installs piped text as scheduled commands")
    if call.has_short("r"):
        call.flag("high", "crontab -r deletes every scheduled job")
    elif call.has_short("l"):
        call.ro = True
    else:
        call.flag("medium", "crontab replaces the scheduled jobs")


def _rule_sysctl(call: Call) -> None:
    if (
        call.has_short("wp")
        or call.has_long("--write", "--load", "--system")
        or any("=" in v for v in call.positional_values())
    ):
        call.flag("high", "sysctl changes kernel settings")
    else:
        call.ro = True


def _rule_date(call: Call) -> None:
    if (
        call.has_short("s")
        or call.has_long("--set")
        or any(not v.startswith("+") for v in call.positional_values())
    ):
        call.flag("medium", "date changes the system clock")


def _rule_hostname(call: Call) -> None:
    if call.positional_values() or call.has_short("F") or call.has_long("--file"):
        call.flag("high", "hostname changes the machine's name")


def _rule_netconfig(call: Call) -> None:
    positionals = call.positional_values()
    changes = any(v in NET_VERBS for v in positionals)
    if call.key == "ifconfig":
        changes = changes or len(positionals) >= 2
    if changes:
        call.flag("high", f"{call.program} changes network configuration")
    else:
        call.ro = True


def _rule_nc(call: Call) -> None:
    if call.has_short("ec") or call.has_long("--exec", "--sh-exec", "--lua-exec"):
        call.flag("high", f"{call.program} -e gives a network peer a command to run")
    elif call.has_short("l") or call.has_long("--listen"):
        call.flag("medium", f"{call.program} listens for network connections")


def _rule_socat(call: Call) -> None:
    if any(re.search(r"(?i)\b(exec|system):", v) for v in call.values()):
        call.flag("high", "socat connects a network stream to a command")
    else:
        call.flag("medium", "socat relays network connections")


def _rule_rsync(call: Call) -> None:
    positionals = call.positionals()
    remote = [
        p.raw
        for p in positionals
        if p.value is not None
        and (re.match(r"^[^/:\s]+:", p.value) or p.value.startswith("rsync://"))
    ]
    if remote or call.has_short("e") or call.has_long("--rsh"):
        call.flag("high", f"rsync copies to or from another machine ({shorten(' '.join(remote))})")
    if any(o.startswith("--delete") or o.startswith("--remove-source") for o in call.options()):
        call.flag("high", "rsync deletes files")
    destination = positionals[-1:] if len(positionals) >= 2 else []
    check_targets(call, destination, "rsync writes to", replaces=True)


def _rule_curl(call: Call) -> None:
    output = call.option_value("-o", "--output")
    writes = (
        output is not None
        or call.has_short("oOJ")
        or call.has_long("--remote-name", "--remote-name-all", "--output-dir", "--create-dirs")
    )
    if writes:
        if output is not None and harmless_target(output.value or ""):
            pass
        else:
            call.flag("medium", "curl downloads to a file")
            if output is not None:
                check_targets(call, [output], "curl writes to")
    sends = call.has_short("dFT") or call.has_long(
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "--form",
        "--upload-file",
        "--json",
    )
    method = call.option_value("-X", "--request")
    if sends or (method is not None and (method.value or "").upper() not in ("GET", "HEAD")):
        call.flag("medium", "curl sends data to a server")
    if any(v.startswith("@") and len(v) > 1 for v in call.values()):
        call.flag("medium", "curl uploads a local file")


def _rule_wget(call: Call) -> None:
    values = call.values()
    output = call.option_value("-O", "--output-document")
    to_stdout = (output is not None and output.value in ("-", "/dev/null")) or any(
        v.endswith("O-") and not v.startswith("--") for v in values
    )
    if call.has_long("--spider") or to_stdout:
        pass
    else:
        call.flag("medium", "wget downloads to a file")
        if output is not None:
            check_targets(call, [output], "wget writes to")
    if call.has_long("--post-data", "--post-file", "--body-data", "--body-file", "--method"):
        call.flag("medium", "wget sends data to a server")


RULES: dict[str, Rule] = {
    "at": _rule_scheduler,
    "batch": _rule_scheduler,
    "kill": _rule_kill,
    "systemctl": _rule_systemctl,
    "service": _rule_service,
    "crontab": _rule_crontab,
    "sysctl": _rule_sysctl,
    "date": _rule_date,
    "hostname": _rule_hostname,
    "ip": _rule_netconfig,
    "ifconfig": _rule_netconfig,
    "route": _rule_netconfig,
    "nc": _rule_nc,
    "socat": _rule_socat,
    "rsync": _rule_rsync,
    "curl": _rule_curl,
    "wget": _rule_wget,
}

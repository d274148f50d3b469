"""Wrapper programs: how to find the command each one runs, and what running through it adds.
Plain data, read by ``risk.unwrap``."""

from __future__ import annotations

from dataclasses import dataclass

from tui.security.risk.verdict import Risk


@dataclass(frozen=True)
class WrapperSpec:
    """How to find the command a wrapper runs: which options take a value, what stops it."""

    with_arg: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False
    stop_letters: frozenset[str] = frozenset()
    stop_long: frozenset[str] = frozenset()


def spec(
    with_arg: str = "",
    positionals: int = 0,
    *,
    assignments: bool = False,
    stop: str = "",
    stop_long: str = "",
) -> WrapperSpec:
    return WrapperSpec(
        with_arg=frozenset(with_arg.split()),
        positionals=positionals,
        assignments=assignments,
        stop_letters=frozenset(stop),
        stop_long=frozenset(stop_long.split()),
    )


SUDO = spec(
    "-u -g -p -C -D -r -t -T -U -R -h --user --group --prompt --close-from --chdir --role "
    "--type --command-timeout --other-user --host",
    assignments=True,
    stop="ieslvKV",
    stop_long="--login --shell --edit --list --validate --version --help",
)
WRAPPERS: dict[str, WrapperSpec] = {
    "command": spec(stop="vV"),
    "builtin": spec(),
    "exec": spec("-a"),
    "env": spec(
        "-u -C --unset --chdir",
        assignments=True,
        stop="S",
        stop_long="--split-string --help --version",
    ),
    "nice": spec("-n --adjustment"),
    "nohup": spec(),
    "time": spec("-f -o --format --output"),
    "timeout": spec("-s -k --signal --kill-after", 1),
    "stdbuf": spec("-i -o -e --input --output --error"),
    "ionice": spec("-c -n -p -P -u --class --classdata", stop="pPu"),
    "taskset": spec("", 1, stop="p"),
    "chrt": spec("", 1, stop="p"),
    "setsid": spec(),
    "unbuffer": spec(),
    "caffeinate": spec("-t -w"),
    "strace": spec("-o -e -p -s -u -E -P -I -a -b -X -O -S", stop="p"),
    "ltrace": spec("-o -e -p -s -u -n -a -A -D -F -x", stop="p"),
    "valgrind": spec(),
    "xargs": spec(
        "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs --max-chars "
        "--max-lines --process-slot-var"
    ),
    "sudo": SUDO,
    "doas": spec("-u -C", stop="sL"),
    "pkexec": spec("--user"),
    "run0": spec("-u -g -D --user --group --chdir --setenv --unit --description"),
    "chroot": spec("--userspec --groups", 1),
    "busybox": spec(),
    "toybox": spec(),
    "coproc": spec(),
    "noglob": spec(),
    "nocorrect": spec(),
    "proxychains": spec("-f"),
    "proxychains4": spec("-f"),
    "torsocks": spec(),
    "catchsegv": spec(),
    "then": spec(),
    "do": spec(),
    "else": spec(),
    "elif": spec(),
    "!": spec(),
}
WRAPPER_RISK: dict[str, tuple[Risk, str]] = {
    "sudo": ("high", "{} runs the command as root"),
    "doas": ("high", "{} runs the command as root"),
    "pkexec": ("high", "{} runs the command as root"),
    "run0": ("high", "{} runs the command as root"),
    "chroot": ("high", "{} changes the root directory and needs root"),
}

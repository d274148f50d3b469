"""The one string sshd hands the remote login shell for each command.

Why it is its own module: this is where *what runs* on the remote host is decided, so it is
kept pure (no I/O, no asyncssh) and small enough to read whole.

* **The remote process group is ours to kill.** sshd starts each session's shell in a new
  session (``setsid``), so the shell's pid is the process group of everything the command
  starts. The line prints that pid in a marked header line (never shown), which the runner
  uses to stop the group on a timeout or cancel.
* **Two forms, one of them fast.** The first command on a connection goes through a portable
  ``/bin/sh`` wrapper (any login shell, fish included) that also reports the login shell.
  When that is bash, later commands are ``eval``-ed in the login bash itself: one process
  instead of three (sh, env, bash), which puts a round trip within a few percent of bare
  ``conn.run`` (``bench/ssh.py``).
* **The environment is the remote's, plus the policy's.** The policy reduces *this*
  machine's environment; its ``HOME``, ``PATH`` or ``USER`` would be wrong on another host,
  so those few names keep the remote login's values; every other exported variable is
  dropped (``env -i``, or an in-process ``unset`` loop in bash) and the policy's are set.
  Variables travel inside the command line because sshd drops ``env`` requests unless
  ``AcceptEnv`` allows them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

REMOTE_OWNED_ENV = (
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PATH",
    "PWD",
    "MAIL",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
)
"""Names that describe the machine they are set on: the remote login's values win."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

HEADER_MARK = "atui-pgid:"
"""Starts the header line, so output a login script prints before it is not mistaken for it."""

_ENTER_CWD = (
    'if [ -n "$d" ] && ! cd -- "$d" 2>/dev/null; then'
    f' if [ ! -e "$d" ]; then echo {HEADER_MARK}!missing;'
    f' elif [ ! -d "$d" ]; then echo {HEADER_MARK}!notdir;'
    f" else echo {HEADER_MARK}!denied; fi; exit 126; fi"
)
"""Enter ``$d`` (empty: stay in the home), or print why not as the header line and stop."""

_WRAPPER = "\n".join(
    [
        "d=$1 m=$2 c=$3; shift 3",
        _ENTER_CWD,
        f'echo "{HEADER_MARK}$$ ${{SHELL-}}"',
        "if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi",
        'if [ "$m" = k ]; then exec "$s" -c "$c"; fi',
        "exec env -i "
        + " ".join(f'${{{name}+"{name}=${name}"}}' for name in REMOTE_OWNED_ENV)
        + ' "$@" "$s" -c "$c"',
    ]
)
"""The portable form, run by ``/bin/sh`` whatever the login shell is (fish, csh …): enter the
cwd, print the process group id and the login shell, then ``exec`` bash (or sh) so the pid,
and so the group, stay the same. Arguments: cwd, ``k`` (keep the login environment) or ``e``
(``env -i`` with the remote-owned names plus ``NAME=value`` arguments), the command."""

_WRAPPER_PREFIX = "exec /bin/sh -c " + shlex.quote(_WRAPPER) + " atui-ssh "

_BASH_KEEP = "|".join((*REMOTE_OWNED_ENV, "SHLVL"))
_BASH_SCRUB = (
    "for _atui_n in "
    + " ".join(f"${{!{c}*}}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
    + f"; do case $_atui_n in {_BASH_KEEP}) ;; *) [[ ${{!_atui_n@a}} == *x* ]]"
    ' && unset -v "$_atui_n";; esac; done 2>/dev/null; unset -v _atui_n'
)
"""Bash ≥ 4.4 only: drop every exported variable but the remote-owned ones, in-process (what
``env -i`` does, without spawning ``env`` and another bash)."""

CWD_ERRORS = {
    "!missing": "does not exist",
    "!notdir": "is not a directory",
    "!denied": "cannot be entered (permission denied)",
}
"""Header values that say the working directory stopped the command, and in what words."""


def command_line(
    command: str,
    workdir: str | None,
    env: Mapping[str, str] | None,
    login_bash: bool = False,
) -> str:
    """The one string sshd hands the login shell.

    When the login shell is known to be bash, the command is ``eval``-ed in it: one bash
    instead of three processes (sh, env, bash), ≈1.5 ms less per command. Otherwise, and
    on the first command of a connection, the portable ``/bin/sh`` wrapper runs it.

    Args:
        command: The shell command line to run.
        workdir: Where it starts; None or empty stays in the login home.
        env: The whole environment (remote-owned names excepted); None keeps the login's.
        login_bash: The login shell was seen to be bash on this connection.
    """
    assignments = [
        shlex.quote(f"{name}={value}")
        for name, value in (env or {}).items()
        if name not in REMOTE_OWNED_ENV and _ENV_NAME.match(name)
    ]
    portable = _WRAPPER_PREFIX + " ".join(
        [
            shlex.quote(workdir or ""),
            "k" if env is None else "e",
            shlex.quote(command),
            *assignments,
        ]
    )
    if not login_bash:
        return portable
    # POSIX syntax, run before bash-only lines are even parsed: anything but bash ≥ 4.4
    # (a login shell that changed since we learnt it) takes the portable form.
    steps = [f"case ${{BASH_VERSION-}} in [5-9]*|4.[4-9]*) ;; *) {portable};; esac"]
    if workdir:
        steps.append(f"d={shlex.quote(workdir)}; {_ENTER_CWD}; unset -v d")
    steps.append(f'echo "{HEADER_MARK}$$"')
    if env is not None:
        steps.append(_BASH_SCRUB)
        if assignments:
            steps.append("export " + " ".join(assignments))
    steps.append(f"eval {shlex.quote(command)}")
    return "\n".join(steps)


__all__ = ["CWD_ERRORS", "HEADER_MARK", "REMOTE_OWNED_ENV", "command_line"]

"""Commands that need no network: a command run in a sandbox of its own gets none.

Full-auto gives commands the network through the host policy; each such command then also
starts a relay inside its sandbox (``tui/exec/sandbox/relay.py``). A command whose every part
is a program that never opens a connection of its own (``sleep``, ``ls``, ``grep`` …) gets the
same walls without the network instead: less to trust, nothing to start. This only ever takes
a power away, so a wrong entry here can break a command, never let one do more; anything the
rater cannot name (a variable as the program, a parse error, a function), anything that runs
other programs (``xargs``, ``find -exec``, ``sed``'s ``e``, shells, interpreters) and bash's
own ``/dev/tcp`` keep the network the mode gives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.security.risk.verdict import CommandRisk

NO_NETWORK_PROGRAMS = frozenset(
    {
        # shell builtins that run nothing else
        ":", "cd", "echo", "exit", "export", "false", "let", "local", "printf", "pwd", "read",
        "return", "set", "shift", "test", "true", "umask", "unset", "wait", "[", "[[",
        # coreutils and their kin: files, text and time, on this machine only
        "base64", "basename", "cat", "chmod", "cmp", "column", "comm", "cp", "csplit", "cut",
        "date", "df", "diff", "dirname", "du", "expand", "expr", "factor", "file", "fmt",
        "fold", "head", "hexdump", "join", "ln", "ls", "md5sum", "mkdir", "mktemp", "mv", "nl",
        "nproc", "od", "paste", "printenv", "readlink", "realpath", "rev", "rm", "rmdir", "seq",
        "sha1sum", "sha256sum", "sha512sum", "shuf", "sleep", "sort", "split", "stat", "tac",
        "tail", "tee", "touch", "tr", "truncate", "uname", "unexpand", "uniq", "wc", "which",
        "xxd", "yes",
        # search and compression tools that read and write local files only
        "bunzip2", "bzip2", "egrep", "fgrep", "grep", "gunzip", "gzip", "jq", "rg", "xz",
        "unxz", "zcat",
    }
)  # fmt: skip
"""Programs that open no connection of their own and run no other program."""
SOCKET_PATHS = ("/dev/tcp/", "/dev/udp/")
"""bash connects for a redirection to these itself, whatever the program."""


def needs_no_network(risk: CommandRisk) -> bool:
    """True when every part of the command is a program of ``NO_NETWORK_PROGRAMS``."""
    if risk.parse_error is not None or not risk.segments:
        return False
    if any(path in risk.command for path in SOCKET_PATHS):
        return False
    return all(segment.program in NO_NETWORK_PROGRAMS for segment in risk.segments)

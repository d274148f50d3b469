"""The sandbox on an SSH host: the same walls, built from what that host has.

Everything the local sandbox learns from this machine's file system — whether ``bwrap`` is
there and works, the home folder, which secret places exist, the Unix sockets, the
workspace's control files — is learnt on the host by one probe script over the connection,
and looked up again when it is older than ``REFRESH`` seconds. The argv is the local one
(``bwrap_argv``), run by the remote shell.

No network column: the host-policy proxy runs on this machine and does not reach a remote
sandbox, so every column there is offline, and the notice at start says so.
"""

from __future__ import annotations

import posixpath
import shlex
import time
from dataclasses import dataclass, field

from tui.exec.backend import ExecResult, ExecutionBackend
from tui.exec.sandbox.bwrap import NO_USERNS, TRUSTED_DIRS
from tui.exec.sandbox.places import ALWAYS_PRIVATE, CONTROL_NAMES, Places
from tui.exec.sandbox.sandbox import Sandbox
from tui.security.confinement import OUTSIDE, Confinement

REFRESH = 30.0
BWRAP_REFUSED = "bwrap: Can't"
"""How bubblewrap's own refusals begin when a mount of the walls fails."""
"""Seconds a host's places are trusted before the next command looks them up again."""

_PROBE_ARGS = (
    "--ro-bind / / --dev /dev --proc /proc --ro-bind /proc/sys /proc/sys --tmpfs /tmp "
    "--unshare-all {extra} --cap-drop ALL --die-with-parent --new-session -- true"
)


def _candidates(patterns: tuple[str, ...]) -> list[str]:
    """The secret patterns as shell words the remote shell expands (``~``: every home)."""
    words: list[str] = []
    for pattern in patterns:
        if pattern.startswith(("/proc", "/dev")):
            continue  # fresh in every sandbox
        if pattern == "~" or pattern.startswith("~/"):
            rest = shlex.quote(pattern[2:]) if len(pattern) > 2 else ""
            for home in ('"$HOME"', "/root", "/home/*"):
                words.append(f"{home}/{rest}" if rest else home)
        else:
            words.append(pattern.replace(" ", "\\ "))
    return words


def probe_script(patterns: tuple[str, ...], workspace: str) -> str:
    """One POSIX sh script that reports, one fact a line, what the sandbox needs to know."""
    finds = " ".join(f"{d}/bwrap" for d in TRUSTED_DIRS)
    lines = [
        f'b=""; for c in {finds}; do [ -x "$c" ] && {{ b=$c; break; }}; done',
        'printf "bwrap\\t%s\\n" "$b"',
        'printf "home\\t%s\\n" "$HOME"',
        'if command -v bash >/dev/null 2>&1; then echo "shell\\tbash"; fi',
        'if [ -n "$b" ]; then',
        f'  e=$("$b" {_PROBE_ARGS.format(extra="")} 2>&1) && echo "works" '
        '|| printf "broken\\t%s\\n" "$(printf %s "$e" | tail -n 1)"',
        f'  "$b" {_PROBE_ARGS.format(extra=" ".join(NO_USERNS))} 2>/dev/null && echo "no_userns"',
        "fi",
        f"for p in {' '.join(_candidates(patterns))}; do",
        '  if [ -L "$p" ] || [ -e "$p" ]; then',
        '    if [ -d "$p" ]; then printf "dir\\t%s\\n" "$p"; else printf "file\\t%s\\n" "$p"; fi',
        '    [ -L "$p" ] && printf "file\\t%s\\n" "$(readlink -f "$p")"',
        "  fi",
        "done 2>/dev/null",
        f"for p in {' '.join(ALWAYS_PRIVATE)}; do",
        '  [ -d "$p" ] && [ ! -L "$p" ] && printf "private\\t%s\\n" "$p"',
        "done",
        f"w={shlex.quote(workspace)}",
        f"for n in {' '.join(shlex.quote(n) for n in CONTROL_NAMES)}; do",
        '  [ -e "$w/$n" ] && printf "control\\t%s\\n" "$w/$n"',
        "done",
        "awk 'NR > 1 && $8 ~ /^\\// && $8 !~ /^\\/proc\\// { print $8 }' /proc/net/unix 2>/dev/null"
        ' | while IFS= read -r p; do [ -S "$p" ] && printf "socket\\t%s\\n" "$p"; done',
        "exit 0",
    ]
    return "\n".join(lines)


@dataclass
class RemoteSandbox(Sandbox):
    """The sandbox of the commands run on ``host`` (an SSH backend).

    Args:
        host: Where the probe runs (its own commands are never wrapped: ``OUTSIDE``).
        host_name: How notices name the host.
    """

    host: ExecutionBackend | None = None
    host_name: str = "the host"
    shell: str = "sh"
    """The remote shell commands run in inside the sandbox (bash where there is one)."""
    _places: Places | None = field(default=None, repr=False)
    _found_at: float = 0.0

    def __post_init__(self) -> None:
        self.network = False  # the proxy runs here; nothing carries it there yet

    async def start(self) -> str | None:
        """Probe the host once; what the person should hear (always something)."""
        if self._started:
            return None
        self._started = True
        if self.mode == "off":
            self.unavailable = 'the sandbox is off ([sandbox] mode = "off")'
            return f"{self.unavailable}: commands on {self.host_name} run unconfined"
        facts = await self._probe()
        # The same probe's places serve the first commands (one round trip less per host).
        self._places, self._found_at = _places_from(facts), time.monotonic()
        if facts.get("works") is not None and facts.get("bwrap"):
            self.bwrap = facts["bwrap"][0]
            self._no_userns = "no_userns" in facts
            return (
                f"sandbox on {self.host_name}: bubblewrap confines every command there; no "
                "network inside it (the host policy's proxy does not reach that host)"
            )
        found = facts.get("bwrap", [""])[0]
        problem = (
            f"bwrap cannot make namespaces there: {facts['broken'][0]}"
            if found and "broken" in facts
            else "bubblewrap (bwrap) is not installed there"
        )
        self.unavailable = problem
        if self.mode == "required":
            return (
                f"no sandbox on {self.host_name}: {problem}; "
                '[sandbox] mode = "required": no command will run'
            )
        return f"no sandbox on {self.host_name}: {problem}. The rater alone decides there"

    def look_again(self) -> None:
        """The next command's places are probed afresh, not taken from the last look."""
        self._found_at = float("-inf")

    async def places(self) -> Places:
        if self._places is None or time.monotonic() - self._found_at > REFRESH:
            facts = await self._probe()
            self._places = _places_from(facts)
            self._found_at = time.monotonic()
        return self._places

    async def _probe(self) -> dict[str, list[str]]:
        assert self.host is not None
        script = probe_script(tuple(self.patterns), str(self.workspace))
        result = await self.host.run(script, timeout=30, confinement=OUTSIDE)
        facts: dict[str, list[str]] = {}
        for line in result.stdout.splitlines():
            key, _, value = line.partition("\t")
            facts.setdefault(key.strip(), []).append(value)
        if facts.get("home"):
            self.home = facts["home"][0] or self.home
        if "shell" in facts:
            self.shell = "bash"
        return facts


def _places_from(facts: dict[str, list[str]]) -> Places:
    dirs = sorted(set(facts.get("dir", [])), key=len)
    hidden_dirs = [d for i, d in enumerate(dirs) if not _under(d, dirs[:i])]
    private = facts.get("private", [])
    files = [
        f
        for f in dict.fromkeys([*facts.get("file", []), *facts.get("socket", [])])
        if f and not _under(f, [*hidden_dirs, *private])
    ]
    return Places(
        hidden_dirs=[d for d in hidden_dirs if not _under(d, private)],
        hidden_files=files,
        protected=facts.get("control", []),
        private=private,
    )


def _under(path: str, roots: list[str]) -> bool:
    path = posixpath.normpath(path)
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


async def confined_command(
    sandbox: Sandbox | None, command: str, confinement: Confinement | None, cwd: str | None
) -> str:
    """``command`` as a remote shell runs it: inside ``sandbox``'s walls when there is one."""
    if sandbox is None:
        return command
    argv = [getattr(sandbox, "shell", "sh"), "-c", command]
    wrapped = await sandbox.wrap(argv, confinement, cwd=cwd)
    if wrapped == argv:
        return command
    if isinstance(sandbox, RemoteSandbox):
        hidden = set((await sandbox.places()).hidden_files)
        return covers_what_is_there(wrapped, hidden, sandbox._empty)
    return shlex.join(wrapped)


def covers_what_is_there(argv: list[str], hidden: set[str], empty: str) -> str:
    """``argv`` as a POSIX shell line that covers only the hidden files there at its start.

    The host's places are up to ``REFRESH`` seconds old, and files and sockets come and go
    meanwhile (a socket with the folder it was in, a history file being rewritten); bwrap
    refuses to cover a path whose folder is gone, and then nothing runs. A file that is no
    longer there has nothing to hide, so the host's shell checks each one just before bwrap
    starts. (A hidden *folder* gone still costs the one command ``after_confined`` explains.)
    """
    covers = [
        i
        for i in range(len(argv) - 2)
        if argv[i] == "--ro-bind" and argv[i + 1] == empty and argv[i + 2] in hidden
    ]
    if not covers or covers != list(range(covers[0], covers[-1] + 3, 3)):
        return shlex.join(argv)  # none, or not the one run ``bwrap_argv`` makes
    first, after = covers[0], covers[-1] + 3
    paths = shlex.join(argv[i + 2] for i in covers)
    cover = f'set -- "$@" --ro-bind {shlex.quote(empty)} "$p"'
    return (
        f"set -- {shlex.join(argv[:first])}; "
        f'for p in {paths}; do if [ -e "$p" ] || [ -L "$p" ]; then {cover}; fi; done; '
        f'exec "$@" {shlex.join(argv[after:])}'
    )


def after_confined(sandbox: Sandbox | None, result: ExecResult) -> ExecResult:
    """A command bwrap may have refused to start: the host's places are looked up afresh.

    The places are probed at most every ``REFRESH`` seconds; a hidden folder gone since makes
    bwrap refuse every command until the next look (files are checked as each command starts:
    ``covers_what_is_there``). Its message on stderr brings that look forward. A command can
    print the same words, and then it only costs a probe: nothing is run again.
    """
    failed = result.exit_code == 1 and BWRAP_REFUSED in result.stderr
    if isinstance(sandbox, RemoteSandbox) and sandbox.active and failed:
        sandbox.look_again()
        result.notices.append(
            f"if bubblewrap on {sandbox.host_name} refused to build the walls (its message "
            "above), nothing ran; the places it hides are looked up again for the next command"
        )
    return result

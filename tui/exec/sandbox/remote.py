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
import secrets
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tui.exec.backend import ExecResult, ExecutionBackend
from tui.exec.sandbox.bwrap import NO_USERNS, TRUSTED_DIRS
from tui.exec.sandbox.places import ALWAYS_PRIVATE, CONTROL_NAMES, Places
from tui.exec.sandbox.sandbox import Sandbox
from tui.security.confinement import OUTSIDE, Confinement

REFRESH = 30.0
"""Seconds a host's places are trusted before the next command looks them up again."""
BWRAP_REFUSED = "bwrap: Can't"
"""How bubblewrap's own refusals begin when a mount of the walls fails."""
STATUS_FD = 3
"""Where bwrap reports, on the host, whether it started the command (``--json-status-fd``)."""

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
        f'  "$b" --json-status-fd 1 {_PROBE_ARGS.format(extra="")} >/dev/null 2>&1'
        ' && echo "status_fd"',
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
    reports_start: bool = False
    """The host's bwrap says whether it started the command (``--json-status-fd``, 0.4+)."""
    _places: Places | None = field(default=None, repr=False)
    _found_at: float = 0.0
    _probe_notices: list[str] = field(default_factory=list, repr=False)
    """What the host said while probed (a reconnect, say): for the next command's result."""

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
            self.reports_start = "status_fd" in facts
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

    async def shell_line(
        self, wrapped: list[str], nonce: str | None = None, *, pane: bool = False
    ) -> str:
        """``wrapped`` (this sandbox's bwrap argv) as the line the host's shell runs: covering
        only the hidden files there as it starts (``host_line``)."""
        hidden = set((await self.places()).hidden_files)
        return host_line(wrapped, hidden, self._empty, nonce, pane=pane)

    def take_probe_notices(self) -> list[str]:
        """The notices the probes left since the last call, handed over once."""
        notices, self._probe_notices = self._probe_notices, []
        return notices

    async def _probe(self) -> dict[str, list[str]]:
        assert self.host is not None
        script = probe_script(tuple(self.patterns), str(self.workspace))
        result = await self.host.run(script, timeout=30, confinement=OUTSIDE)
        self._probe_notices.extend(result.notices)
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
    sandbox: Sandbox | None,
    command: str,
    confinement: Confinement | None,
    cwd: str | None,
    nonce: str | None = None,
) -> str:
    """``command`` as a remote shell runs it: inside ``sandbox``'s walls when there is one.

    With ``nonce`` (and a host bwrap that reports its start), the line says on stderr, with
    that nonce, when bwrap gave up before starting the command (``host_line``).
    """
    if sandbox is None:
        return command
    argv = [getattr(sandbox, "shell", "sh"), "-c", command]
    if not isinstance(sandbox, RemoteSandbox):
        wrapped = await sandbox.wrap(argv, confinement, cwd=cwd)
        return command if wrapped == argv else shlex.join(wrapped)
    reports = nonce is not None and sandbox.reports_start
    wrapped = await sandbox.wrap(
        argv, confinement, cwd=cwd, status_fd=STATUS_FD if reports else None
    )
    if wrapped == argv:
        return command
    return await sandbox.shell_line(wrapped, nonce if reports else None)


def host_line(
    argv: list[str], hidden: set[str], empty: str, nonce: str | None, *, pane: bool = False
) -> str:
    """``argv`` (bwrap's) as the POSIX shell line the host runs.

    *Only what is there is covered.* The host's places are up to ``REFRESH`` seconds old,
    and files and sockets come and go meanwhile (a socket with the folder it was in, a
    history file being rewritten); bwrap refuses to cover a path whose folder is gone, and
    then nothing runs. A file that is no longer there has nothing to hide, so the host's
    shell checks each one just before bwrap starts.

    *A refusal is told apart from the command's own failure.* A file can still go between
    that check and bwrap's mount. With ``nonce``, bwrap's status (``--json-status-fd``) is
    read by the host's shell through a pipe the command never holds: a ``child-pid`` line
    without an ``exit-code`` line means the walls were never built, and only then does
    the shell print the nonce. The nonce is chosen per command here and lives in the host
    shell's memory and arguments, which the command (in its own process namespace) cannot
    read, so no output of the command can claim a refusal: ``refused`` then runs it again.
    A ``pane``'s shell prints the mark on the pane's screen instead and holds the pane (30 s
    at most) for agent-tui to start it again (``PaneShells``).
    """
    covers = [
        i
        for i in range(len(argv) - 2)
        if argv[i] == "--ro-bind" and argv[i + 1] == empty and argv[i + 2] in hidden
    ]
    if covers and covers == list(range(covers[0], covers[-1] + 3, 3)):
        first, after = covers[0], covers[-1] + 3
        paths = shlex.join(argv[i + 2] for i in covers)
        cover = f'set -- "$@" --ro-bind {shlex.quote(empty)} "$p"'
        start = (
            f"set -- {shlex.join(argv[:first])}; "
            f'for p in {paths}; do if [ -e "$p" ] || [ -L "$p" ]; then {cover}; fi; done; '
            f'set -- "$@" {shlex.join(argv[after:])}'
        )
    else:  # none, or not the one run ``bwrap_argv`` makes
        start = f"set -- {shlex.join(argv)}"
    if nonce is None:
        return f'{start}; exec "$@"'
    said = shlex.quote(f"{_refusal_mark(nonce)}: {NOT_STARTED}")
    tell = (
        f"printf '\\r\\n%s\\r\\n' {said}; exec sleep 30" if pane else f"printf '%s\\n' {said} >&2"
    )
    return (
        f"{start}; exec 4>&1; "
        f's=$("$@" {STATUS_FD}>&1 >&4 4>&-); rc=$?; exec 4>&-; '
        f"case $rc:$s in 1:*'\"child-pid\"'*) case $s in *'\"exit-code\"'*) ;; "
        f"*) {tell};; esac;; esac; "
        'exit "$rc"'
    )


NOT_STARTED = "bubblewrap did not start the command"
"""What follows the mark (``agent-tui <nonce>: ``) when the host's shell vouches for a refusal."""


def _refusal_mark(nonce: str) -> str:
    return f"agent-tui {nonce}"


def new_nonce() -> str:
    """A mark no command can guess (``host_line``)."""
    return secrets.token_hex(16)


def refused(result: ExecResult, nonce: str) -> bool:
    """Whether the host said, with ``nonce``, that bwrap never started the command; its line
    is taken out of the output either way (it is agent-tui's, not the command's)."""
    mark = _refusal_mark(nonce)
    if mark not in result.stderr:
        return False
    lines = result.stderr.splitlines(keepends=True)
    result.stderr = "".join(line for line in lines if mark not in line)
    return result.exit_code == 1 and not (result.timed_out or result.cancelled)


async def run_confined(
    sandbox: Sandbox | None,
    command: str,
    confinement: Confinement | None,
    cwd: str | None,
    execute: Callable[[str], Awaitable[ExecResult]],
) -> ExecResult:
    """Run ``command`` through ``execute`` (the backend's own runner), inside the walls.

    A refusal the host's shell vouches for (``refused``) means nothing ran: the host's
    places are looked up afresh and the command runs once more, as the local sandbox does
    when a place changes while bwrap builds the walls. Without that vouching (a bwrap too
    old to report its start) a refusal only brings the next look forward (``after_confined``).
    """
    first_try = ""
    for attempt in range(2):
        nonce = new_nonce()
        line = await confined_command(sandbox, command, confinement, cwd, nonce)
        result = await execute(line)
        if isinstance(sandbox, RemoteSandbox):  # a reconnect the look made is said here
            result.notices[:0] = sandbox.take_probe_notices()
        if not (isinstance(sandbox, RemoteSandbox) and sandbox.reports_start):
            return after_confined(sandbox, result)
        host = sandbox.host_name
        if not refused(result, nonce):
            if attempt:
                result.notices.insert(
                    0,
                    f"the sandbox on {host} was built again: a place it hides changed while "
                    f"it was being built ({first_try})",
                )
            return result
        sandbox.look_again()
        said = result.stderr.strip().splitlines()
        first_try = said[-1] if said else "bwrap failed"
    result.notices.append(
        f"the sandbox on {host} could not be built, so the command did not run: {first_try}"
    )
    return result


def after_confined(sandbox: Sandbox | None, result: ExecResult) -> ExecResult:
    """A command bwrap may have refused to start, on a host whose bwrap cannot say so: the
    host's places are looked up afresh.

    A hidden folder gone since the last look makes bwrap refuse every command until the next
    one. Its message on stderr brings that look forward. A command can print the same words,
    and then it only costs a probe: nothing is run again.
    """
    failed = result.exit_code == 1 and BWRAP_REFUSED in result.stderr
    if isinstance(sandbox, RemoteSandbox) and sandbox.active and failed:
        sandbox.look_again()
        result.notices.append(
            f"if bubblewrap on {sandbox.host_name} refused to build the walls (its message "
            "above), nothing ran; the places it hides are looked up again for the next command"
        )
    return result

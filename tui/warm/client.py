"""The typed ``agent-tui -p`` command's side: hand the run to a warm process, or start one.

A run is handed over at most once and never both ways: until the warm process answers with
the process group it started, nothing of the run has started there, and any failure means the
ordinary start; once it has answered, this process only relays signals and the exit status.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found,unused-ignore]  # signal, without its enums
import _socket
import os
import sys
import time

from tui.warm.flags import headless
from tui.warm.place import (
    WINDOW,
    Place,
    key,
    private,
    switched_off,
    turned_off,
    warm_folder,
    without_secrets,
)
from tui.warm.wire import STREAMS, WireError, address, encode_request, peer_uid, receive, send

FORWARDED = (
    _signal.SIGINT,
    _signal.SIGTERM,
    _signal.SIGHUP,
    _signal.SIGQUIT,
    _signal.SIGUSR1,
    _signal.SIGUSR2,
)
"""Signals the typed command passes on to the run's process group, as a shell's Ctrl-C or a
``kill`` would have reached a run started the ordinary way."""
CONNECT_TIMEOUT = 2.0
"""Seconds to wait for a warm process to take the run before starting the ordinary way."""
SERVE = "from tui.launch import serve_warm; serve_warm()"
FORGET = 86400.0
"""Seconds after which a key's files are removed (and a refused key may be tried again)."""


def eligible(argv: list[str]) -> bool:
    """A ``-p`` run of the installed command with no terminal on any standard stream, on
    Linux (peer credentials, ``/proc`` and pidfds are Linux's)."""
    if sys.platform != "linux" or not headless(list(argv[1:])):
        return False
    if switched_off(os.environ):
        return False
    try:
        if any(os.isatty(fd) for fd in range(STREAMS)):
            return False
        for fd in range(STREAMS):
            os.fstat(fd)
    except OSError:  # a closed standard stream: nothing to hand over
        return False
    # The console script puts its own folder first on the search path; ``python -m tui``
    # puts the current folder there, which a warm process started elsewhere would not have.
    script_folder = os.path.dirname(os.path.abspath(argv[0])) if argv else ""
    return bool(sys.path) and os.path.abspath(sys.path[0] or ".") == script_folder


def here() -> Place | None:
    """This run's place, or None when its folder is not private to the user."""
    folder = warm_folder(os.environ)
    if not private(folder, make=True) or turned_off(folder):
        return None
    return Place(folder, key(sys.path[1:], os.getcwd(), os.environ))


def hand_over(argv: list[str]) -> None:
    """Run ``argv`` in a warm process if one is ready for it, and then never return.

    Otherwise note the run, start a warm process for the next one if this is the second of its
    kind within ``WINDOW``, and return: the caller starts the ordinary way.
    """
    try:
        if not eligible(argv):
            return
        place = here()
        if place is None:
            return
        sock = _connect(place)
        group = None if sock is None else _start(sock, argv)
    except Exception:  # anything odd before the run started: it starts the ordinary way
        return
    if sock is not None and group is not None:
        _relay(sock, group)  # never returns
    if sock is not None:
        sock.close()
    try:
        _note(place)
    except Exception:  # remembering is a nicety; the run itself must not suffer for it
        return


def _connect(place: Place) -> _socket.socket | None:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        with address(place.socket) as where:
            sock.connect(where)
        if peer_uid(sock) != os.getuid():
            raise OSError("a socket held by another user")
    except OSError:
        sock.close()
        return None
    return sock


def _start(sock: _socket.socket, argv: list[str]) -> int | None:
    """Send the run; the warm process's group once it started it, else None."""
    try:
        send(sock, encode_request(argv, os.getcwd(), dict(os.environ)), fds=list(range(STREAMS)))
        answer, _ = receive(sock)
    except (WireError, OSError):
        return None
    if len(answer) == 2 and answer[0] == "group" and answer[1].isdigit() and int(answer[1]) > 1:
        return int(answer[1])
    return None


def _relay(sock: _socket.socket, group: int) -> None:
    """Pass signals on to ``group`` until the run's status arrives, then end the same way."""

    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(group, signum)
        except OSError:
            pass

    for signum in FORWARDED:
        _signal.signal(signum, forward)
    sock.settimeout(None)
    try:
        status, _ = receive(sock)
    except WireError:
        # The warm process's keeper of this run is gone (killed): so must the run be.
        try:
            os.killpg(group, _signal.SIGKILL)
        except OSError:
            pass
        os.write(2, b"agent-tui: the warm process running this command ended unexpectedly\n")
        os._exit(1)
    _end_like(status)


def _end_like(status: list[str]) -> None:
    how, number = [*status, "", ""][:2]
    value = int(number) if number.isdigit() else -1
    if how == "signal" and value > 0:
        for signum in FORWARDED:
            _signal.signal(signum, _signal.SIG_DFL)
        _signal.signal(value, _signal.SIG_DFL)
        os.kill(os.getpid(), value)
        os._exit(128 + value)
    os._exit(value if how == "exit" and 0 <= value < 256 else 1)


def _note(place: Place) -> None:
    """Remember this run; if one of its kind ran within ``WINDOW``, start a warm process."""
    try:
        last: float | None = os.stat(place.seen).st_mtime
    except OSError:
        last = None
    try:
        with open(place.seen, "a"):
            os.utime(place.seen)
    except OSError:
        return
    if last is None:
        _prune(place.folder)
    if last is None or time.time() - last > WINDOW or os.path.exists(place.refused):
        return
    _spawn(place)


def _prune(folder: str) -> None:
    """Forget keys no run has had for ``FORGET`` seconds: a folder that changes every time
    (a build's temporary checkout) would otherwise leave a file a run behind."""
    now = time.time()
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                if not entry.name.endswith((".seen", ".refused", ".json", ".lock")):
                    continue
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime > FORGET:
                        os.unlink(entry.path)
                except OSError:
                    pass
    except OSError:
        pass


def _spawn(place: Place) -> None:
    """Start the warm process detached (its own session, no terminal, reparented at once)."""
    argv = [sys.executable, "-P", "-c", SERVE, place.key]
    try:
        middle = os.fork()
    except OSError:
        return
    if middle == 0:  # pragma: no cover - the intermediate process, gone at once
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in range(STREAMS):
                    os.dup2(null, fd)
                # A descriptor the caller left open (a pipe's writing end) must not live on in
                # a process that outlives this run: the caller would never see its end.
                os.closerange(STREAMS, max(os.sysconf("SC_OPEN_MAX"), 1024))
                # It never holds a key: what a run needs comes with the run.
                os.execve(sys.executable, argv, without_secrets(os.environ))
        finally:
            os._exit(0)
    try:
        os.waitpid(middle, 0)
    except ChildProcessError:
        pass

"""The warm process: agent-tui imported once, then one fork per run handed to it.

Each run gets two processes. The keeper (forked first, in a session of its own) tells the
typed command its process group, starts the run and waits: it relays the run's exit status,
and if the typed command dies (killed, so it cannot pass the signal on) it kills the run's
whole group, as the kernel would have had the run been started the ordinary way. The run
(forked by the keeper) takes the command's standard streams, folder, environment and command
line and returns from ``serve`` to ``tui.launch``, which starts it as a fresh process would.

The warm process itself never runs anything of a run's: it takes no settings, no keys and no
input but the request, checks the asking process is the same user, and ends when idle for
``IDLE`` seconds, when its socket is removed or replaced, or when it finds it cannot serve its
key (then it says so in ``refused`` and none is started again).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tui.warm.client import FORWARDED
from tui.warm.place import IDLE, Place, key, private, warm_folder
from tui.warm.wire import (
    STREAMS,
    WireError,
    address,
    close_all,
    decode_request,
    peer_uid,
    receive,
    send,
)

TICK = 1.0
"""Seconds between looks at the socket file and the idle time."""
REQUEST_TIMEOUT = 5.0
"""Seconds a connected client has to send its request."""
NAME = "agent-tui-warm"
"""The warm process's name in ``ps`` and ``pgrep``."""


@dataclass(frozen=True)
class Request:
    """A run as the typed command sent it."""

    argv: list[str]
    cwd: str
    environ: dict[str, str]

    @classmethod
    def parse(cls, words: list[str]) -> Request | None:
        decoded = decode_request(words)
        return None if decoded is None else cls(*decoded)


def serve(given: str, preload: Callable[[], None]) -> Request:
    """Serve runs of the key ``given``. Returns only in a run's own process, with the run's
    streams, folder, environment and command line in place; the warm process ends in here."""
    folder = warm_folder(os.environ)
    if not private(folder):
        os._exit(0)
    place = Place(folder, given)
    try:
        lock = os.open(place.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another warm process has this key
        os._exit(0)
    _name(NAME)
    same = key(sys.path, os.getcwd(), os.environ) == given
    preload()
    if not same or threading.active_count() != 1:
        # Started by a client whose start differs from ours (or the imports started a
        # thread, which a fork would not carry): never serve, never be started again.
        with contextlib.suppress(OSError), open(place.refused, "a"):
            pass
        os._exit(0)
    gc.collect()
    gc.freeze()  # what the imports made stays shared with every fork, never scanned again
    runs = 0
    _status(place, runs)  # before the socket: whoever finds the socket finds this too
    listener, inode = _listen(place)
    last = time.monotonic()
    while True:
        ready, _, _ = select.select([listener], [], [], TICK)
        _reap()
        if _socket_inode(place) != inode:
            _end(place)
        if not ready:
            if time.monotonic() - last > IDLE:
                with contextlib.suppress(OSError):
                    os.unlink(place.socket)
                _end(place)
            continue
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        last = time.monotonic()
        taken = _take(conn)
        if taken is None:
            conn.close()
            continue
        request, fds = taken
        runs += 1
        _status(place, runs)
        if os.fork() == 0:
            listener.close()
            os.close(lock)
            _keep(conn, request, fds)
            return request
        conn.close()
        close_all(fds)


def _take(conn: socket.socket) -> tuple[Request, list[int]] | None:
    """The request of a client of this user, with its three standard streams; else None."""
    try:
        if peer_uid(conn) != os.getuid():
            return None
        conn.settimeout(REQUEST_TIMEOUT)
        message, fds = receive(conn, fds=STREAMS)
    except (OSError, WireError):
        return None
    request = Request.parse(message)
    if request is None or len(fds) != STREAMS:
        close_all(fds)
        with contextlib.suppress(OSError, WireError):
            send(conn, ["refused", "not a request"])
        return None
    return request, fds


def _keep(conn: socket.socket, request: Request, fds: list[int]) -> None:
    """The keeper: returns only in the run it forks."""
    os.setsid()
    group = os.getpid()
    for signum in FORWARDED:
        signal.signal(signum, signal.SIG_IGN)  # meant for the run; the keeper outlives them
    try:
        conn.settimeout(None)
        send(conn, ["group", str(group)])
    except WireError:  # the client is gone before anything started
        os._exit(0)
    run = os.fork()
    if run == 0:
        conn.close()
        _become(request, fds)
        return
    close_all(fds)
    try:
        pidfd = os.pidfd_open(run)
    except (AttributeError, OSError):  # a kernel before 5.3: relay the status, nothing more
        _, status = os.waitpid(run, 0)
        with contextlib.suppress(WireError):
            send(conn, _answer(status))
        os._exit(0)
    while True:
        ready, _, _ = select.select([conn.fileno(), pidfd], [], [])
        if pidfd in ready:
            _, status = os.waitpid(run, 0)
            with contextlib.suppress(WireError):
                send(conn, _answer(status))
            os._exit(0)
        if conn.fileno() in ready:
            try:
                alive = conn.recv(1)
            except OSError:
                alive = b""
            if not alive:  # the typed command died without passing anything on
                os.killpg(group, signal.SIGKILL)
                os._exit(0)


def _answer(status: int) -> list[str]:
    if os.WIFSIGNALED(status):
        return ["signal", str(os.WTERMSIG(status))]
    return ["exit", str(os.waitstatus_to_exitcode(status))]


def _become(request: Request, fds: list[int]) -> None:
    """Take on the run: its streams, folder, environment, command line and signals."""
    for signum in FORWARDED:
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    close_all([fd for fd in fds if fd >= STREAMS])
    try:
        os.chdir(request.cwd)
    except OSError as error:
        os.write(2, f"agent-tui: cannot enter {request.cwd!r}: {error.strerror}\n".encode())
        os._exit(1)
    os.environ.clear()
    os.environ.update(request.environ)
    time.tzset()
    sys.argv[:] = request.argv
    _name(os.path.basename(request.argv[0]))


def _listen(place: Place) -> tuple[socket.socket, int]:
    """Bind beside the final name and rename over it: a client never meets a half-made socket,
    and a dead process's leftover is replaced."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    spare = f"{place.socket}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(spare)
    with address(spare) as where:
        listener.bind(where)
    os.chmod(spare, 0o600)
    listener.listen(16)
    os.replace(spare, place.socket)
    return listener, os.stat(place.socket).st_ino


def _socket_inode(place: Place) -> int | None:
    try:
        return os.stat(place.socket).st_ino
    except OSError:
        return None


def _reap() -> None:
    """Collect keepers that ended (each ends with its run)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _status(place: Place, runs: int) -> None:
    data = json.dumps({"pid": os.getpid(), "runs": runs})
    with contextlib.suppress(OSError):
        spare = f"{place.status}.{os.getpid()}"
        with open(spare, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(spare, place.status)


def _end(place: Place) -> None:
    """The warm process ends; its status goes with it (unless a newer one wrote it since)."""
    try:
        with open(place.status, encoding="utf-8") as handle:
            if json.load(handle).get("pid") == os.getpid():
                os.unlink(place.status)
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(0)


def _name(name: str) -> None:
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(name[:15])

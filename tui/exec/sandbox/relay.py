"""Inside a sandbox with network: listen on its loopback, carry each connection to the proxy.

Run as a program by path, with the standard library only (``python -I -S relay.py SOCKET
PORT -- COMMAND...``), because it runs *inside* the sandbox, where the sandbox has no network
of its own: programs there reach ``127.0.0.1:PORT`` (``HTTP(S)_PROXY``, ``ALL_PROXY``), and
this relay copies bytes to the host-policy proxy's Unix socket bound in from outside, which
decides where, if anywhere, they go.

It binds before anything else runs, then forks: the child serves (in a session of its own,
its standard streams on ``/dev/null`` so it never holds the command's output open), the parent
becomes the command with ``exec``. The command stays the sandbox's main process, and when it
ends the sandbox's PID namespace ends the relay with it.
"""

from __future__ import annotations

# The C modules under ``socket`` and ``threading``: this runs once per sandboxed command with
# network, before the command itself, and those two wrappers (enum and all) would triple the
# interpreter's start-up.
import _socket
import _thread
import os
import sys

CHUNK = 65536


def _pump(source: _socket.socket, sink: _socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end, how in ((sink, _socket.SHUT_WR), (source, _socket.SHUT_RD)):
            try:
                end.shutdown(how)
            except OSError:
                pass


def _pump_then_release(
    source: _socket.socket, sink: _socket.socket, done: _thread.LockType
) -> None:
    try:
        _pump(source, sink)
    finally:
        done.release()


def _carry(client: _socket.socket, proxy_path: str) -> None:
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(proxy_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back_done = _thread.allocate_lock()
    back_done.acquire()
    _thread.start_new_thread(_pump_then_release, (upstream, client, back_done))
    _pump(client, upstream)
    back_done.acquire()  # the way back has finished too
    client.close()
    upstream.close()


def _serve(listener: _socket.socket, proxy_path: str) -> None:
    while True:
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # socket.accept, without its wrapper
        client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
        _thread.start_new_thread(_carry, (client, proxy_path))


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: relay.py SOCKET PORT -- COMMAND...", file=sys.stderr)
        return 2
    proxy_path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            _serve(listener, proxy_path)
        finally:
            os._exit(0)
    listener.close()
    os.execvp(command[0], command)
    return 127  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

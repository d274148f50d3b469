"""Messages between a run and a warm process on a Unix socket: a length, then words joined by
NUL (a command line and an environment are NUL-free by nature), the run's standard streams
passed alongside as file descriptors.

Not JSON: the client sends the first message before anything else is loaded, and ``json``
brings ``re`` with it. ``_socket`` rather than ``socket`` for the same reason (its enums).
"""

from __future__ import annotations

import _socket
import os
import struct

_HEADER = struct.Struct("!I")
MAX_MESSAGE = 4 << 20
"""Bytes: a command line and an environment fit many times over."""
STREAMS = 3
"""Standard input, output and error."""
SHORT_ENOUGH = 100
"""Bytes of a socket path used as it is (the kernel's limit is 107)."""
_INT = struct.calcsize("i")


class WireError(Exception):
    """The other end went away or sent something that is not a message."""


def send(sock: _socket.socket, words: list[str], fds: list[int] | None = None) -> None:
    data = "\0".join(words).encode("utf-8", "surrogateescape")
    header = _HEADER.pack(len(data))
    try:
        if fds:
            rights = struct.pack(f"{len(fds)}i", *fds)
            sock.sendmsg([header], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
        else:
            sock.sendall(header)
        sock.sendall(data)
    except OSError as error:
        raise WireError(f"could not send: {error}") from error


def receive(sock: _socket.socket, *, fds: int = 0) -> tuple[list[str], list[int]]:
    """One message and the descriptors that came with it (closed here if it is not valid)."""
    received: list[int] = []
    try:
        if fds:
            header, ancillary, _flags, _address = sock.recvmsg(
                _HEADER.size, _socket.CMSG_SPACE(fds * _INT)
            )
            for level, kind, data in ancillary:
                if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                    usable = len(data) - len(data) % _INT
                    received += struct.unpack(f"{usable // _INT}i", data[:usable])
        else:
            header = sock.recv(_HEADER.size)
    except OSError as error:
        raise WireError(f"could not receive: {error}") from error
    try:
        if not header:
            raise WireError("the other end closed the connection")
        header += _exactly(sock, _HEADER.size - len(header))
        (size,) = _HEADER.unpack(header)
        if size > MAX_MESSAGE:
            raise WireError(f"a message of {size} bytes")
        words = _exactly(sock, size).decode("utf-8", "surrogateescape").split("\0")
    except WireError:
        close_all(received)
        raise
    return words, received


def _exactly(sock: _socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except OSError as error:
            raise WireError(f"could not receive: {error}") from error
        if not chunk:
            raise WireError("the other end closed the connection")
        data += chunk
    return data


def close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def peer_uid(sock: _socket.socket) -> int:
    """The user id of the process at the other end (``SO_PEERCRED``)."""
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def encode_request(argv: list[str], cwd: str, environ: dict[str, str]) -> list[str]:
    return ["run", cwd, str(len(argv)), *argv, *(f"{k}={v}" for k, v in environ.items())]


def decode_request(words: list[str]) -> tuple[list[str], str, dict[str, str]] | None:
    """``argv``, ``cwd`` and ``environ`` of a run request, or None for anything else."""
    if len(words) < 3 or words[0] != "run" or not words[2].isdigit():
        return None
    count = int(words[2])
    argv = words[3 : 3 + count]
    if count < 1 or len(argv) != count:
        return None
    environ: dict[str, str] = {}
    for pair in words[3 + count :]:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            return None
        environ[name] = value
    return argv, words[1], environ


class address:
    """A name ``bind`` and ``connect`` accept for ``path``: Unix socket names end at 107 bytes,
    and a data folder can be deeper than that, so a long one is reached through an open
    descriptor of its folder (``/proc/self/fd/N/name``), closed again after."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> str:
        if len(os.fsencode(self.path)) < SHORT_ENOUGH:
            return self.path
        self.fd = os.open(os.path.dirname(self.path), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        return f"/proc/self/fd/{self.fd}/{os.path.basename(self.path)}"

    def __exit__(self, *_: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

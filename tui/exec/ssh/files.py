"""Remote files over SFTP, with the same errors and the same atomic writes as locally.

Why it is built this way: a file is written to a temporary name and renamed over the
target (``posix-rename@openssh.com``), so readers never see half a file; a symlink's target
is updated, an existing file keeps its mode, and a file nobody may write stays protected (a
rename alone would bypass its mode). SFTP's error codes become the ``OSError`` subclasses
the local backend raises, so tools need not know where a file lives. A server without SFTP
never reaches this module: the backend falls back to ``CommandBackend``'s shell file I/O.
"""

from __future__ import annotations

import errno
import os
import posixpath
import secrets
from typing import cast

import asyncssh

from tui.exec.backend import BackendError
from tui.exec.ssh.connection import Connection, Link


class SftpFiles:
    """Reads and writes files on the host through the connection's SFTP client.

    Args:
        connection: The host's connection (for the name in messages).
        default_cwd: Where relative paths start; None starts them at the login home.
    """

    def __init__(self, connection: Connection, *, default_cwd: str | None) -> None:
        self._connection = connection
        self._default_cwd = default_cwd

    async def read(self, link: Link, sftp: asyncssh.SFTPClient, path: str) -> bytes:
        """Whole file contents. Raises FileNotFoundError, IsADirectoryError, PermissionError."""
        remote = await self._remote_path(link, sftp, path)
        try:
            async with sftp.open(remote, "rb") as handle:
                return cast(bytes, await handle.read())
        except asyncssh.SFTPError as exc:
            raise await self._file_error(sftp, exc, remote, path) from None
        except (asyncssh.Error, OSError) as exc:
            raise BackendError(
                f"{self._connection.display}: reading {path} failed: {exc}"
            ) from None

    async def write(
        self,
        link: Link,
        sftp: asyncssh.SFTPClient,
        path: str,
        data: bytes,
        make_parents: bool,
    ) -> None:
        """Replace ``path`` with ``data`` atomically, creating parent folders when asked."""
        remote = await self._remote_path(link, sftp, path)
        try:
            await self._write_atomic(sftp, remote, data, make_parents)
        except asyncssh.SFTPError as exc:
            raise await self._file_error(sftp, exc, remote, path) from None
        except (asyncssh.Error, OSError) as exc:
            if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
                raise
            raise BackendError(
                f"{self._connection.display}: writing {path} failed: {exc}"
            ) from None

    async def _remote_path(self, link: Link, sftp: asyncssh.SFTPClient, path: str) -> str:
        """``~`` is the remote home; relative paths start at ``default_cwd`` (else the home)."""
        if path == "~" or path.startswith("~/"):
            if link.home is None:
                link.home = await sftp.realpath(".")
            return posixpath.join(link.home, path[2:])
        if self._default_cwd is not None and not posixpath.isabs(path):
            return posixpath.join(self._default_cwd, path)
        return path

    async def _write_atomic(
        self, sftp: asyncssh.SFTPClient, path: str, data: bytes, make_parents: bool
    ) -> None:
        """Write a temporary file next to the target and rename it over the target.

        As locally: a symlink's target is updated, an existing file keeps its mode, and a
        file nobody may write stays protected (a rename alone would bypass its mode).
        """
        path, mode = await _existing(sftp, path)
        directory = posixpath.dirname(path) or "."
        if make_parents:
            await sftp.makedirs(directory, exist_ok=True)
        temp = posixpath.join(directory, f".{posixpath.basename(path)}.{secrets.token_hex(6)}.tmp")
        try:
            async with sftp.open(temp, "xb") as handle:
                await handle.write(data)
                if mode is not None:
                    await handle.chmod(mode)
                try:
                    await handle.fsync()
                except asyncssh.SFTPOpUnsupported:
                    pass
            await _rename_over(sftp, temp, path)
        except BaseException:
            try:
                await sftp.remove(temp)
            except (asyncssh.Error, OSError):
                pass
            raise

    async def _file_error(
        self, sftp: asyncssh.SFTPClient, exc: asyncssh.SFTPError, remote: str, path: str
    ) -> OSError | BackendError:
        if isinstance(exc, (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath)):
            return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        if isinstance(exc, (asyncssh.SFTPPermissionDenied, asyncssh.SFTPWriteProtect)):
            return PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        if isinstance(exc, asyncssh.SFTPFileIsADirectory):
            return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if isinstance(exc, asyncssh.SFTPConnectionLost):
            return BackendError(
                f"lost the connection to {self._connection.display} during a file transfer"
            )
        try:
            if await sftp.isdir(remote):  # OpenSSH opens a directory, then fails to read it
                return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        except (asyncssh.Error, OSError):
            pass
        return PermissionError(errno.EIO, f"{exc.reason}", path)


async def _existing(sftp: asyncssh.SFTPClient, path: str) -> tuple[str, int | None]:
    """The real path to write and the mode to keep (None for a new file)."""
    try:
        attrs = await sftp.lstat(path)
    except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath):
        return path, None
    if attrs.type == asyncssh.FILEXFER_TYPE_SYMLINK:
        path = await sftp.realpath(path)
        try:
            attrs = await sftp.stat(path)
        except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath):
            return path, None
    if attrs.type == asyncssh.FILEXFER_TYPE_DIRECTORY:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    mode = (attrs.permissions or 0) & 0o7777
    if attrs.permissions is not None and not mode & 0o222:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    return path, mode if attrs.permissions is not None else None


async def _rename_over(sftp: asyncssh.SFTPClient, temp: str, path: str) -> None:
    try:
        await sftp.posix_rename(temp, path)
    except asyncssh.SFTPOpUnsupported:
        # Plain SFTPv3 rename refuses to replace: not atomic, but the best there is.
        if await sftp.exists(path):
            await sftp.remove(path)
        await sftp.rename(temp, path)


__all__ = ["SftpFiles"]

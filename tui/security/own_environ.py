"""The model's API key, held in memory and gone from this process's own environment.

Why: every command agent-tui runs is a child of it (or of a tmux server it started), and a
child can read its parent's ``/proc/<pid>/environ`` — as root no permission bit stops it. So
once the key is read, it must leave both places a child could find it:

- ``os.environ`` (and libc's ``environ``), which every child would inherit;
- the environment block the kernel shows as ``/proc/self/environ``. That is the bytes the
  process started with, on its stack; ``unsetenv`` does not touch them. We overwrite the
  ``NAME=value`` bytes in place through ``/proc/self/mem``, as setproctitle-like tools do: it
  costs microseconds, where re-executing without the key would cost a whole Python start-up.

The values stay reachable in this process through :func:`process_environ`, which the settings
loader and the provider factory read, so switching provider later still finds its key.
"""

from __future__ import annotations

import os
import sys
from collections import ChainMap
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "PROVIDER_KEY_VARIABLES",
    "held_keys",
    "hold_provider_keys",
    "process_environ",
    "provider_key_values",
    "warn",
    "wipe_environ_block",
]

PROVIDER_KEY_VARIABLES: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AGENT_TUI_PROVIDER__API_KEY",
)
"""Every variable that can carry a model provider's key (the factory checks it knows no other)."""

_ENV_START_FIELD = 50
"""``/proc/<pid>/stat`` field numbers (1-based, see proc(5)) of the environment block bounds."""

_held: dict[str, str] = {}


def held_keys() -> Mapping[str, str]:
    """The key variables taken out of the environment, by name (empty before holding)."""
    return dict(_held)


def provider_key_values() -> list[str]:
    """Every model provider key this process knows of (held or still in the environment),
    for the writers that must never store one: longest first, so a key that contains
    another is replaced whole. Values shorter than 8 characters are not keys."""
    values = {v for name, v in process_environ().items() if name in PROVIDER_KEY_VARIABLES}
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def process_environ() -> Mapping[str, str]:
    """This process's environment as the user gave it: ``os.environ`` plus the held keys.

    For reading settings and choosing a provider only; never hand it to a child process.
    """
    return ChainMap(os.environ, _held) if _held else os.environ


def hold_provider_keys(proc: Path = Path("/proc/self")) -> str | None:
    """Move the provider key variables from the environment into memory and wipe them from
    ``proc``'s environment block. Returns a one-line warning when the block could not be wiped
    (no ``/proc``, a kernel that refuses the write), or None.
    """
    names = [name for name in PROVIDER_KEY_VARIABLES if name in os.environ]
    for name in names:
        _held[name] = os.environ.pop(name)  # pop also unsetenv()s: no child inherits it
    if not names:
        return None
    try:
        left = wipe_environ_block(PROVIDER_KEY_VARIABLES, proc)
    except (OSError, ValueError) as error:
        return f"could not wipe the API key from {proc}/environ ({error}); a command could read it"
    if left:
        return f"{', '.join(left)} still readable in {proc}/environ after wiping it"
    return None


def wipe_environ_block(names: Iterable[str], proc: Path = Path("/proc/self")) -> list[str]:
    """Overwrite with NUL bytes every ``NAME=value`` entry of ``names`` in the process's
    original environment block; returns the names still visible in ``environ`` afterwards.

    Raises:
        OSError: ``/proc`` is missing or the memory cannot be read or written.
        ValueError: ``stat`` has no environment bounds (a kernel older than 3.5, or no access).
    """
    prefixes = tuple(f"{name}=".encode() for name in names)
    start, end = _environ_bounds(proc)
    fd = os.open(proc / "mem", os.O_RDWR)
    try:
        block = os.pread(fd, end - start, start)
        offset = 0
        for entry in block.split(b"\0"):
            if entry.startswith(prefixes):
                os.pwrite(fd, bytes(len(entry)), start + offset)
            offset += len(entry) + 1
    finally:
        os.close(fd)
    shown = (proc / "environ").read_bytes().split(b"\0")
    return [prefix[:-1].decode() for prefix in prefixes if any(e.startswith(prefix) for e in shown)]


def _environ_bounds(proc: Path) -> tuple[int, int]:
    stat = (proc / "stat").read_bytes()
    # The command name (field 2) may hold spaces and parentheses: count after the last ")".
    fields = stat[stat.rindex(b")") + 2 :].split()
    first = _ENV_START_FIELD - 3  # fields[0] is field 3
    if len(fields) <= first + 1:
        raise ValueError("no environment bounds in stat")
    start, end = int(fields[first]), int(fields[first + 1])
    if not 0 < start < end:
        raise ValueError("no environment bounds in stat")
    return start, end


def warn(message: str | None) -> None:
    """The one-line stderr warning of the CLI's contract, when there is one."""
    if message:
        print(f"agent-tui: warning: {message}", file=sys.stderr)

"""Which container engine (docker or podman) knows a container, and what state it is in.

Why it is its own module: finding the engine is a question asked of the engines' command-line
clients before anything runs, and answering it needs nothing of the backend. Engines are
asked concurrently, so a docker CLI without a daemon costs no extra time, and nothing about
the container's state is cached: the next call works as soon as it runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
from collections.abc import Iterable, Mapping

from tui.exec.backend import BackendError

ENGINES = ("docker", "podman")
"""Probed in this order; the first whose ``container inspect NAME`` succeeds is used."""

PROBE_TIMEOUT = 15.0
"""Seconds for one engine probe or in-container ``kill``; a remote daemon may be slow."""


async def capture(
    argv: list[str], *, env: Mapping[str, str] | None = None, timeout: float = PROBE_TIMEOUT
) -> tuple[int | None, str, str]:
    """Run a short engine command; (exit code or None when it hung or is missing, out, err)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        return None, "", exc.strerror or str(exc)
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        return None, "", f"no answer within {timeout:g} s"
    finally:
        if process.returncode is None:  # timed out, or our caller was cancelled
            process.kill()
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def run_quietly(argv: list[str], env: Mapping[str, str] | None) -> None:
    """``capture`` without an event loop (from a thread), and without the answer."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            timeout=PROBE_TIMEOUT,
            check=False,
        )


def first_line(text: str) -> str:
    """The first non-blank line, stripped: an engine's error in a few words."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


async def container_status(
    engine: str, container: str, *, env: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """``running``, ``exited``, ``paused``… or None when ``engine`` has no such container.

    Returns the status and the engine's own words (its error when the status is None).
    """
    argv = [engine, "container", "inspect", "--format", "{{.State.Status}}", container]
    code, out, err = await capture(argv, env=env)
    if code == 0 and out.strip():
        return out.strip().splitlines()[0], ""
    return None, first_line(err) or f"exit status {code}"


async def detect_engine(
    container: str,
    *,
    candidates: Iterable[str] = ENGINES,
    env: Mapping[str, str] | None = None,
) -> str:
    """The first installed engine (by ``candidates`` order) that knows ``container``.

    Engines are asked concurrently, so a docker CLI without a daemon costs no extra time.

    Raises:
        BackendError: no engine is installed, or none of them has that container.
    """
    candidates = tuple(candidates)
    installed = [engine for engine in candidates if shutil.which(engine)]
    if not installed:
        raise BackendError(
            f"{' nor '.join(candidates)}: none is installed, so {container!r} is unreachable."
        )
    answers = await asyncio.gather(
        *(container_status(engine, container, env=env) for engine in installed)
    )
    for engine, (status, _) in zip(installed, answers, strict=True):
        if status is not None:
            return engine
    said = "; ".join(
        f"{engine}: {why}" for engine, (_, why) in zip(installed, answers, strict=True)
    )
    raise BackendError(f"No container named {container!r} ({said}).")


__all__ = [
    "ENGINES",
    "PROBE_TIMEOUT",
    "capture",
    "container_status",
    "detect_engine",
    "first_line",
    "run_quietly",
]

"""Round trip of ``true`` through each execution backend, next to its raw floor in the same run.

One function per backend; ``main`` runs those whose tools are installed (others: skipped with
the reason). Each pair is measured interleaved in rounds so machine noise hits both alike.

* tmux: ``TmuxBackend.run("true")`` (control mode, prompt markers, output read from
  ``%output``) against the floor a script would use: a bare ``tmux send-keys`` of
  ``true; tmux wait-for -S CH`` into a plain pane, then ``tmux wait-for CH``, on the same
  socket. Target: median ≤ 8 ms.

* SSH (bench/ssh.py) and podman (bench/podman.py) run as their own scripts from here.

    python bench/backends.py [--calls 100] [--rounds 5] [--only tmux|ssh|podman]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``tui`` importable
    sys.path.insert(0, str(ROOT))

from tui.exec.local import LocalBackend
from tui.exec.tmux.backend import TmuxBackend

SHELL = "bash --norc --noprofile"


@dataclass
class Figure:
    name: str
    samples: list[float]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples) * 1000

    @property
    def p90_ms(self) -> float:
        ordered = sorted(self.samples)
        return ordered[int(len(ordered) * 0.9) - 1] * 1000

    def line(self) -> str:
        return (
            f"  {self.name:<28} median {self.median_ms:7.2f} ms   p90 {self.p90_ms:7.2f} ms"
            f"   ({len(self.samples)} calls)"
        )


async def timed(call: Callable[[], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def interleave(
    calls: int, rounds: int, contenders: dict[str, Callable[[], Awaitable[None]]]
) -> list[Figure]:
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    per_round = max(1, calls // rounds)
    while min(len(s) for s in samples.values()) < calls:
        for name, call in contenders.items():
            for _ in range(per_round):
                samples[name].append(await timed(call))
    return [Figure(name, values[:calls]) for name, values in samples.items()]


# -- tmux ------------------------------------------------------------------------------------


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}


async def _tmux(socket_name: str, *args: str, check: bool = True) -> None:
    process = await asyncio.create_subprocess_exec(
        "tmux", "-L", socket_name, *args, env=_clean_env(),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    if await process.wait() != 0 and check:
        raise SystemExit(f"tmux {' '.join(args)} failed")


async def bench_tmux(calls: int, rounds: int) -> list[Figure]:
    socket_name = f"atui-bench-{secrets.token_hex(4)}"
    workdir = tempfile.mkdtemp(prefix="agent-tui-bench-")
    backend = TmuxBackend(
        LocalBackend(default_cwd=workdir),
        socket_name=socket_name,
        shell=SHELL,
        owner="atui-bench",
        config="/dev/null",
        default_cwd=workdir,
        env=_clean_env(),
    )
    try:
        await backend.start()
        # A plain pane (no markers) for the floor, on the same server.
        await _tmux(socket_name, "new-session", "-d", "-s", "raw", "-x", "200", "-y", "50", SHELL)
        channel = "atui-bench"

        async def floor() -> None:
            waiter = await asyncio.create_subprocess_exec(
                "tmux", "-L", socket_name, "wait-for", channel, env=_clean_env()
            )
            await _tmux(socket_name, "send-keys", "-t", "raw:", f"true; tmux wait-for -S {channel}",
                        "Enter")  # fmt: skip
            await waiter.wait()

        async def ours() -> None:
            result = await backend.run("true", timeout=10)
            if result.exit_code != 0:
                raise SystemExit(f"TmuxBackend.run failed: {result}")

        for _ in range(10):  # warm up both paths
            await floor()
            await ours()
        return await interleave(
            calls, rounds, {"raw send-keys + wait-for": floor, "TmuxBackend.run": ours}
        )
    finally:
        await backend.close()
        await _tmux(socket_name, "kill-server", check=False)


# -- driver ----------------------------------------------------------------------------------

Bench = Callable[[int, int], Awaitable[list[Figure]]]
BENCHES: dict[str, tuple[Bench, Callable[[], str | None]]] = {
    "tmux": (bench_tmux, lambda: None if shutil.which("tmux") else "tmux is not installed"),
}
"""name → (benchmark, why it cannot run here or None)."""


SCRIPTS = {
    "ssh": (
        ["bench/ssh.py"],
        lambda: (
            None
            if shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")
            else "sshd is not installed"
        ),
    ),
    "podman": (
        ["bench/podman.py"],
        lambda: None if shutil.which("podman") else "podman is not installed",
    ),
}
"""Backends whose benchmark needs a server or an image of its own: run as their own scripts
(each starts and removes what it needs), so one command still gives every figure."""


def run_script(argv: list[str], calls: int) -> None:
    import subprocess

    subprocess.run(
        [sys.executable, str(ROOT / argv[0]), "--calls", str(calls), *argv[1:]],
        cwd=ROOT,
        check=False,
    )


async def main(calls: int, rounds: int, only: list[str] | None) -> None:
    for name, (argv, missing) in SCRIPTS.items():
        if only and name not in only:
            continue
        reason = missing()
        if reason:
            print(f"{name}: skipped ({reason})")
            continue
        print(f"{name}:", flush=True)
        await asyncio.to_thread(run_script, argv, calls)
    for name, (bench, unavailable) in BENCHES.items():
        if only and name not in only:
            continue
        reason = unavailable()
        if reason:
            print(f"{name}: skipped ({reason})")
            continue
        print(f"{name}:")
        for figure in await bench(calls, rounds):
            print(figure.line())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", action="append", help="run only this backend (repeatable)")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds, args.only))

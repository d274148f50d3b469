"""Cost of ``ContainerBackend.run("true")`` against a bare ``podman exec NAME true``.

The backend adds a wrapper (``sh`` that announces its process group, enters the working
directory and execs the shell) and output supervision on top of one ``podman exec``; this
shows what that costs. The three sides run the same number of times, interleaved in rounds
so machine noise hits them alike. A throwaway image and container are built and removed.

    python bench/podman.py [--calls 100] [--image busybox|hostlike]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.container_image import (
    busybox_rootfs,
    hostlike_rootfs,
    import_image,
    podman_missing_reason,
    remove_container,
    start_container,
    write_containers_conf,
)
from tui.exec.container.backend import ContainerBackend

Call = Callable[[], Awaitable[None]]


async def bare_exec(argv: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    await process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"{argv} failed with {process.returncode}")


async def backend_run(backend: ContainerBackend) -> None:
    result = await backend.run("true")
    if result.exit_code != 0:
        raise SystemExit(f"ContainerBackend.run failed: {result}")


async def timed(call: Call) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def measure(name: str, calls: int, rounds: int) -> None:
    backend = ContainerBackend(name, engine="podman")
    sides: dict[str, Call] = {
        "bare podman exec NAME true": lambda: bare_exec(["podman", "exec", name, "true"]),
        "bare podman exec NAME sh -c true": lambda: bare_exec(
            ["podman", "exec", name, "sh", "-c", "true"]
        ),
        "ContainerBackend.run('true')": lambda: backend_run(backend),
    }
    for call in sides.values():  # warm the engine's caches and our imports
        for _ in range(3):
            await call()
    times: dict[str, list[float]] = {label: [] for label in sides}
    per_round = max(1, calls // rounds)
    while len(times["ContainerBackend.run('true')"]) < calls:
        for label, call in sides.items():
            for _ in range(per_round):
                times[label].append(await timed(call))
    medians = {label: statistics.median(values) * 1000 for label, values in times.items()}
    bare = medians["bare podman exec NAME true"]
    for label, median in medians.items():
        print(f"{label:34}: median {median:7.1f} ms over {len(times[label])} calls")
    ours = medians["ContainerBackend.run('true')"]
    print(f"{'ratio backend / bare':34}: {ours / bare:.3f}")


def main(calls: int, rounds: int, image_kind: str) -> None:
    """Build a throwaway image and container, measure, and remove both whatever happens."""
    reason = podman_missing_reason()
    if reason is not None:
        raise SystemExit(reason)
    workdir = Path(tempfile.mkdtemp(prefix="agent-tui-bench-podman-"))
    os.environ["CONTAINERS_CONF"] = str(write_containers_conf(workdir))
    tag = f"localhost/agent-tui-bench-{image_kind}:{secrets.token_hex(4)}"
    rootfs = busybox_rootfs() if image_kind == "busybox" else hostlike_rootfs()
    try:
        import_image(tag, rootfs, workdir)
        container = start_container(tag, hostlike=image_kind == "hostlike")
        try:
            print(f"podman, {image_kind} container, {calls} calls in {rounds} rounds")
            asyncio.run(measure(container.name, calls, rounds))
        finally:
            remove_container(container.name)
    finally:
        subprocess.run(["podman", "rmi", "-f", tag], capture_output=True, check=False)
        (workdir / "containers.conf").unlink()
        workdir.rmdir()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--image", choices=["busybox", "hostlike"], default="busybox")
    args = parser.parse_args()
    main(args.calls, args.rounds, args.image)

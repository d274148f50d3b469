"""Cost of one tool call through registry + policy + local backend, against a bare subprocess.

Both sides spawn ``bash -c true`` the same number of times in the same run, interleaved in
rounds so machine noise hits both alike; the figure that matters is the ratio of medians.

    python bench/dispatch.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a plain checkout: make ``tui`` importable
    sys.path.insert(0, str(ROOT))

from tui.exec.local import LocalBackend
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.context import ToolContext
from tui.tools.loops import LoopMemory
from tui.tools.registry import ToolRegistry

TRUE = '{"command": "true", "risk": "low", "mutation": false, "privesc": false, "why": "bench"}'
"""A run_shell call with Buddy's required safety metadata."""

SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


async def bare_call() -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        SHELL,
        "-c",
        "true",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )
    await process.communicate()
    return time.perf_counter() - started


async def tool_call(registry: ToolRegistry, ctx: ToolContext) -> float:
    started = time.perf_counter()
    result = await registry.execute("run_shell", TRUE, ctx)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise SystemExit(f"run_shell failed: {result.text}")
    return elapsed


async def main(calls: int, rounds: int) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="agent-tui-bench-"))
    policy = SecurityPolicy(workspace, approval_mode=ApprovalMode.FULL_AUTO)
    # The same call a few hundred times on purpose: the loop detectors would stop it.
    registry = ToolRegistry(builtin_tools(), loops=LoopMemory(0, 0))
    backend = LocalBackend(default_cwd=str(workspace))
    ctx = ToolContext("bench", "run_shell", backend, policy)
    for _ in range(10):  # warm caches, imports, the parser
        await bare_call()
        await tool_call(registry, ctx)
    bare: list[float] = []
    ours: list[float] = []
    per_round = max(1, calls // rounds)
    while len(bare) < calls:
        for _ in range(per_round):
            bare.append(await bare_call())
        for _ in range(per_round):
            ours.append(await tool_call(registry, ctx))
    bare_ms = statistics.median(bare) * 1000
    ours_ms = statistics.median(ours) * 1000
    print(f"bare asyncio subprocess : median {bare_ms:7.3f} ms over {len(bare)} calls")
    print(f"run_shell via registry  : median {ours_ms:7.3f} ms over {len(ours)} calls")
    print(f"ratio                   : {ours_ms / bare_ms:.3f}  (target <= 1.2)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))

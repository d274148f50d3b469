"""What the sandbox costs: ``run_shell true`` inside and outside it, locally and in the pane.

Four contenders in one run, interleaved in rounds so machine noise hits them alike, each a
real ``run_shell`` call through the registry and policy (auto-edit mode, so nothing asks):

* local, outside: ``LocalBackend`` with no sandbox (the floor);
* local, inside: the same with the sandbox: a fresh bwrap per command;
* tmux, outside: ``TmuxBackend`` whose pane shell runs unconfined;
* tmux, inside: the same with the pane's shell started inside the sandbox.

Targets: the local median grows by at most 5 ms; the pane's by about nothing (its shell is
already inside: a command typed there pays no spawn).

    python bench/sandbox.py [--calls 200] [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a plain checkout: make ``tui`` importable
    sys.path.insert(0, str(ROOT))

from tui.exec.backend import ExecutionBackend
from tui.exec.local import LocalBackend
from tui.exec.sandbox.sandbox import Sandbox
from tui.exec.tmux.backend import TmuxBackend
from tui.security.confinement import SandboxFacts
from tui.security.permissions import ApprovalMode
from tui.security.policy import SecurityPolicy
from tui.security.secrets import SECRET_PATHS
from tui.tools.builtin.catalog import builtin_tools
from tui.tools.context import ToolContext
from tui.tools.loops import LoopMemory
from tui.tools.registry import ToolRegistry

TRUE = '{"command": "true", "risk": "low", "mutation": false, "privesc": false, "why": "bench"}'
"""A run_shell call with Buddy's required safety metadata."""

SHELL = "bash --norc --noprofile"
Call = Callable[[], Awaitable[None]]


def caller(workspace: Path, backend: ExecutionBackend, sandbox: Sandbox | None) -> Call:
    facts = sandbox.facts() if sandbox is not None else SandboxFacts()
    policy = SecurityPolicy(workspace, approval_mode=ApprovalMode.AUTO_EDIT, sandbox=facts)
    if sandbox is not None:
        sandbox.approval_mode = lambda: policy.approval_mode
    # The same call hundreds of times on purpose: the loop detectors would stop it.
    registry = ToolRegistry(builtin_tools(backend), loops=LoopMemory(0, 0))

    async def call() -> None:
        ctx = ToolContext("bench", "run_shell", backend, policy)
        result = await registry.execute("run_shell", TRUE, ctx)
        if result.is_error or "exit code: 0" not in result.text:
            raise SystemExit(f"run_shell failed: {result.text}")

    return call


async def main(calls: int, rounds: int) -> None:
    if shutil.which("bwrap") is None:
        raise SystemExit("bubblewrap is not installed: apt-get install -y bubblewrap")
    workspace = Path(tempfile.mkdtemp(prefix="agent-tui-bench-"))
    sandbox = Sandbox(workspace, patterns=SECRET_PATHS)
    said = await sandbox.start()
    if said:
        raise SystemExit(said)
    contenders: dict[str, Call] = {
        "local, outside": caller(workspace, LocalBackend(default_cwd=str(workspace)), None),
        "local, inside": caller(
            workspace, LocalBackend(default_cwd=str(workspace), sandbox=sandbox), sandbox
        ),
    }
    sockets: list[str] = []
    panes: list[TmuxBackend] = []
    if shutil.which("tmux"):
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        for name, box in (("tmux, outside", None), ("tmux, inside", sandbox)):
            socket_name = f"atui-bench-{os.getpid()}-{len(sockets)}"
            sockets.append(socket_name)
            backend = TmuxBackend(
                LocalBackend(default_cwd=str(workspace), sandbox=box),
                socket_name=socket_name,
                shell=SHELL,
                config="/dev/null",
                default_cwd=str(workspace),
                env=env,
                sandbox=box,
            )
            await backend.start()
            panes.append(backend)
            contenders[name] = caller(workspace, backend, box)
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    per_round = max(1, calls // rounds)
    try:
        for call in contenders.values():  # warm up: first spawns, first pane commands
            await call()
        while min(len(s) for s in samples.values()) < calls:
            for name, call in contenders.items():
                for _ in range(per_round):
                    started = time.perf_counter()
                    await call()
                    samples[name].append(time.perf_counter() - started)
    finally:
        for backend in panes:
            await backend.close()
        for socket_name in sockets:
            killer = await asyncio.create_subprocess_exec(
                "tmux", "-L", socket_name, "kill-server", stderr=asyncio.subprocess.DEVNULL
            )
            await killer.wait()
        await sandbox.close()
        shutil.rmtree(workspace, ignore_errors=True)
    medians = {name: statistics.median(values[:calls]) * 1000 for name, values in samples.items()}
    print(f"run_shell true, {calls} calls each, interleaved in {rounds} rounds (medians):")
    for name, median in medians.items():
        print(f"  {name:<16} {median:7.2f} ms")
    local = medians["local, inside"] - medians["local, outside"]
    ratio = medians["local, inside"] / medians["local, outside"]
    print(f"  local: the sandbox adds {local:+.2f} ms a command ({ratio:.2f}x); target <= 5 ms")
    if "tmux, inside" in medians:
        pane = medians["tmux, inside"] - medians["tmux, outside"]
        ratio = medians["tmux, inside"] / medians["tmux, outside"]
        print(f"  tmux:  the sandbox adds {pane:+.2f} ms a command ({ratio:.2f}x); target ~0")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.rounds))

"""Figures for what faults and load cost, each beside a raw baseline measured in the same run.

1. **Concurrent starts.** N instances (``open_target`` with tmux, each a fresh interpreter,
   released together by a barrier) each run ``echo`` in their pane and close: how many worked,
   and the wall time, against one instance alone.
2. **Resume after a 2 GiB output.** ``agent-tui -p … --continue`` on a session whose one
   command printed 2 GiB: wall, CPU and peak RSS, against a fresh ``agent-tui -p`` (no session
   to read), both against the scripted model server; and the session file's size.
3. **The first command judged.** The first ``run_shell`` rating in a fresh interpreter, cold
   and after the rater was loaded in the background (as the loop does once its first request
   is out).

    python bench/faults.py [--instances 20] [--skip-big]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``tests`` and ``tui`` importable
    sys.path.insert(0, str(ROOT))

from tests.test_tmux_instances import instance_main
from tests.tmux_helpers import kill_server, new_socket_name

AGENT_TUI = Path(sys.executable).with_name("agent-tui")


def concurrent_starts(count: int) -> None:
    base = new_socket_name()
    folder = Path(tempfile.mkdtemp(prefix="atui-bench-"))
    context = multiprocessing.get_context("spawn")
    try:
        for label, many in (("one instance alone", 1), (f"{count} at the same moment", count)):
            barrier = context.Barrier(many)
            results = context.Queue()
            workers = []
            for index in range(many):
                workspace = folder / f"{label[:3]}-{index}"
                workspace.mkdir()
                args = (base, str(workspace.resolve()), barrier, results)
                workers.append(context.Process(target=instance_main, args=args))
            started = time.perf_counter()
            for worker in workers:
                worker.start()
            said = [results.get(timeout=300) for _ in workers]
            took = time.perf_counter() - started
            for worker in workers:
                worker.join(30)
            worked = sum(1 for workspace, text in said if text == f"at:{workspace}")
            print(f"  {label}: {worked}/{many} worked, {took:.2f} s wall (spawn included)")
    finally:
        kill_server(base)


_MEASURE = """
import json, os, subprocess, sys, time
started = time.perf_counter()
quiet = subprocess.DEVNULL
child = subprocess.Popen(sys.argv[1:], stdin=quiet, stdout=quiet, stderr=quiet)
_, status, usage = os.wait4(child.pid, 0)
figures = {"code": os.waitstatus_to_exitcode(status), "wall": time.perf_counter() - started}
figures.update(cpu=usage.ru_utime + usage.ru_stime, rss=usage.ru_maxrss / 1024)
print(json.dumps(figures))
"""


def measured(command: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Figures of one process, started from a small parent (the forking process's peak RSS
    would otherwise count as the child's)."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def resume_after_big_output() -> None:
    from tests.scripted_server import ScriptedServer

    folder = Path(tempfile.mkdtemp(prefix="atui-bench-"))
    workspace = folder / "project"
    workspace.mkdir()
    (folder / "config").mkdir()
    (folder / "config" / "config.toml").write_text("[agent]\noutput_disk_cap = 1048576\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_TUI_"))}
    env.update(
        AGENT_TUI_CONFIG_DIR=str(folder / "config"),
        AGENT_TUI_DATA_DIR=str(folder / "data"),
        OPENAI_API_KEY="sk-bench",
    )
    command = "head -c 2147483648 /dev/zero | tr '\\0' x; echo done"
    call = {"id": "big", "name": "run_shell", "arguments": json.dumps({"command": command})}
    steps = [{"tool_calls": [call]}, {"text": "made it"}, {"text": "fresh"}, {"text": "resumed"}]
    with ScriptedServer(steps, record_bodies=False) as server:
        base = [str(AGENT_TUI), "--provider", "openai", "--model", "m"]
        base += ["--base-url", server.openai_base_url, "--approval-mode", "full-auto"]
        started = time.perf_counter()
        subprocess.run(
            [*base, "-p", "make output"], env=env, cwd=workspace, check=True, capture_output=True
        )
        print(f"  the 2 GiB run itself: {time.perf_counter() - started:.1f} s")
        (session,) = (folder / "data" / "sessions").glob("*/*.jsonl")
        size = session.stat().st_size
        fresh = measured([*base, "-p", "hello"], env, workspace)
        resumed = measured([*base, "-p", "go on", "--continue"], env, workspace)
    # The fresh run made a second session; the resumed one read the big session's file.
    print(f"  session file after a 2 GiB output: {size:,} bytes")
    for label, figures in (("fresh -p (baseline)", fresh), ("resume --continue", resumed)):
        print(
            f"  {label}: exit {figures['code']}, wall {figures['wall']:.2f} s, "
            f"CPU {figures['cpu']:.2f} s, peak RSS {figures['rss']:.0f} MB"
        )
    print(
        f"  resume / fresh: wall {resumed['wall'] / fresh['wall']:.2f}x, "
        f"peak RSS {resumed['rss'] / fresh['rss']:.2f}x"
    )


_JUDGE = """
import sys, threading, time
from tui.security.policy import SecurityPolicy
if sys.argv[1] == "warm":
    from tui.security.risk.warm import warm
    loader = threading.Thread(target=warm)
    loader.start()
    loader.join()
started = time.perf_counter()
from tui.security.risk.assess import assess_command
assess_command("ls -la src")
print((time.perf_counter() - started) * 1000)
"""


def first_command_judged(rounds: int = 5) -> None:
    figures = {}
    for mode in ("cold", "warm"):
        runs = [
            float(
                subprocess.run(
                    [sys.executable, "-c", _JUDGE, mode],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for _ in range(rounds)
        ]
        figures[mode] = sorted(runs)[len(runs) // 2]
    print(
        f"  first command judged: cold {figures['cold']:.1f} ms (baseline), after the "
        f"background load {figures['warm']:.2f} ms ({figures['warm'] / figures['cold']:.3f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--skip-big", action="store_true", help="skip the 2 GiB output")
    args = parser.parse_args()
    print("concurrent tmux starts:")
    concurrent_starts(args.instances)
    if not args.skip_big:
        print("resume after a 2 GiB output:")
        resume_after_big_output()
    print("the rater:")
    first_command_judged()


if __name__ == "__main__":
    main()

"""What the agent loop costs per tool call, against the bare work it cannot avoid.

A tool-calling turn is, at its core, one HTTP round trip to the model plus one subprocess.
Everything else (streaming assembly, events, the transcript, policy, hooks, the envelope) is
the loop's overhead, so the baseline measured here in the same run, against the same loopback
server, is exactly that core: ``httpx`` POST + read of a streamed answer, then a bare
``asyncio.create_subprocess_exec("bash", "-c", "true")``. Three figures:

* 50 sequential ``run_shell true`` calls, one per model response, in-process (``build_session``
  in full-auto, so it measures the loop and not interpreter start-up), beside the baseline;
* 2 turns of 5 parallel ``sleep 1`` calls (the floor is 2 s; target <= 2.3 s);
* the same 50 calls through the real ``agent-tui -p`` command, start-up included.

    python bench/loop.py [--calls 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: make ``tests.scripted_server`` importable

from tests.scripted_server import ScriptedServer
from tui.config import load_settings
from tui.wiring import build_session

SHELL = "bash"
META = {"risk": "low", "mutation": False, "privesc": False, "why": "bench"}
"""Buddy's safety metadata, required by run_shell."""


def shell_step(index: int, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command, **META})
    return {"tool_calls": [{"id": f"call_{index}", "name": "run_shell", "arguments": arguments}]}


def true_script(calls: int) -> list[dict[str, Any]]:
    # Each call its own command: the same one repeated is a loop the detectors stop.
    return [*(shell_step(i, f"true # {i}") for i in range(calls)), {"text": "all done"}]


def parallel_script(turns: int, width: int) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for turn in range(turns):
        calls = [
            {
                "id": f"call_{turn}_{i}",
                "name": "run_shell",
                "arguments": json.dumps({"command": f"sleep 1 # {turn}.{i}", **META}),
            }
            for i in range(width)
        ]
        steps.append({"tool_calls": calls})
    steps.append({"text": "slept"})
    return steps


# -- baseline ----------------------------------------------------------------------------------


async def baseline(server: ScriptedServer, calls: int) -> float:
    """``calls`` x (one streamed HTTP round trip + one bare subprocess), in seconds.

    The answer is read up to its ``[DONE]`` marker, as the provider does. (Reading on to the
    final empty chunk instead costs ~40 ms here: the scripted server leaves Nagle on, so that
    last tiny write waits for the client's delayed ACK.)
    """
    server.add(*(shell_step(i, f"true # {i}") for i in range(calls)))
    body = {
        "model": "bench",
        "messages": [{"role": "user", "content": "go"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    url = f"{server.openai_base_url}/chat/completions"
    async with httpx.AsyncClient() as client:
        started = time.perf_counter()
        for _ in range(calls):
            async with client.stream("POST", url, json=body) as response:
                response.raise_for_status()
                seen = b""
                async for chunk in response.aiter_bytes():
                    seen = seen[-16:] + chunk
                    if b"data: [DONE]" in seen:
                        break  # where any SSE client stops reading, the provider included
            process = await asyncio.create_subprocess_exec(
                SHELL,
                "-c",
                "true",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            await process.communicate()
        return time.perf_counter() - started


# -- the loop ----------------------------------------------------------------------------------


async def run_loop(server: ScriptedServer, workspace: Path, script: list[dict[str, Any]]) -> float:
    """One user turn through a fresh session playing ``script``; seconds for ``submit``."""
    server.add(*script)
    loaded = load_settings(
        workspace,
        overrides={
            "provider": {
                "name": "openai",
                "model": "bench",
                "base_url": server.openai_base_url,
                "api_key": "bench-key",
            },
            "approval": {"mode": "full-auto"},
            "agent": {"max_turns": len(script) + 1},
        },
    )
    session = build_session(workspace, loaded)
    try:
        started = time.perf_counter()
        outcome = await session.submit("benchmark")
        elapsed = time.perf_counter() - started
    finally:
        await session.aclose()
    if outcome.reason != "completed":
        raise SystemExit(f"the loop ended with {outcome.reason}: {outcome.error}")
    return elapsed


def run_cli(server: ScriptedServer, workspace: Path, calls: int) -> float:
    """The whole ``agent-tui -p`` command for the same 50 calls, interpreter start-up included."""
    server.add(*true_script(calls))
    command = [
        str(Path(sys.executable).with_name("agent-tui")),
        "-p",
        "benchmark",
        "--base-url",
        server.openai_base_url,
        "--model",
        "bench",
        "--approval-mode",
        "full-auto",
        "--max-turns",
        str(calls + 1),
    ]
    env = dict(os.environ, OPENAI_API_KEY="bench-key")
    elapsed, done = timed_run(command, workspace, env)
    if done.returncode != 0 or done.stdout.strip() != b"all done":
        raise SystemExit(f"agent-tui failed ({done.returncode}): {done.stderr.strip()!r}")
    return elapsed


def timed_run(
    command: list[str], workspace: Path, env: dict[str, str]
) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """Exec → exit of ``command`` in its own session, no input, output kept, in seconds."""
    started = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        start_new_session=True,
        check=False,
    )
    return time.perf_counter() - started, done


# -- main --------------------------------------------------------------------------------------


async def main(calls: int, rounds: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="agent-tui-bench-"))
    os.environ["AGENT_TUI_CONFIG_DIR"] = str(home / "config")
    os.environ["AGENT_TUI_DATA_DIR"] = str(home / "data")
    workspace = home / "workspace"
    workspace.mkdir()
    with ScriptedServer() as server:
        await baseline(server, 5)  # warm: imports, connection set-up, the page cache
        await run_loop(server, workspace, true_script(5))
        bare: list[float] = []
        loop: list[float] = []
        for _ in range(rounds):  # interleaved so machine noise hits both alike
            bare.append(await baseline(server, calls))
            loop.append(await run_loop(server, workspace, true_script(calls)))
        parallel = await run_loop(server, workspace, parallel_script(2, 5))
        cli = run_cli(server, workspace, calls)

    bare_s, loop_s = statistics.median(bare), statistics.median(loop)
    print(f"{calls} sequential run_shell `true` calls, median of {rounds} rounds:")
    print(
        f"  baseline (httpx round trip + bare subprocess): {bare_s:6.3f} s"
        f"  = {bare_s / calls * 1000:6.2f} ms per call"
    )
    print(
        f"  agent loop in-process (build_session):         {loop_s:6.3f} s"
        f"  = {loop_s / calls * 1000:6.2f} ms per call"
    )
    print(
        f"  ratio loop / baseline:                          {loop_s / bare_s:6.2f}"
        f"  (+{(loop_s - bare_s) / calls * 1000:.2f} ms per call)"
    )
    print(f"2 turns x 5 parallel `sleep 1`:                  {parallel:6.3f} s  (target <= 2.3 s)")
    print(
        f"agent-tui -p subprocess, {calls} calls:             {cli:6.3f} s"
        f"  = {cli / loop_s:.2f} x the in-process loop (start-up {cli - loop_s:+.2f} s)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))

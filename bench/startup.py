"""How fast ``agent-tui`` starts and stops, beside what any Python program on this machine pays.

The machine is shared and noisy, so every figure is measured in the same run as its baseline
and reported as a ratio too:

* **first request**: exec of ``agent-tui -p`` → its first request reaching the loopback model
  server, for a command run before: as a person gets it, handed to a warm process
  (``tui.warm``), and with warm start off, its first request remembered and so sent ahead of
  start-up (``tui.agent.providers.ahead``); baseline: a bare ``python -c`` that imports
  ``httpx2`` and sends one request to the same server (and ``python -c pass``, exec → exit),
  and the stack's floor: the same request sent from ``asyncio`` after defining and validating
  one pydantic model, which any program built on these three libraries pays before its first
  line of its own. **first request, nothing remembered**: the same with an empty data folder
  each time (a new command line, workspace, configuration or day), paired with the bare
  request again.
* **exit**: the final ``stream-json`` event read on the pipe → the process reaped; baseline:
  the same for ``python -c 'print(1)'``.
* **first frame**: exec of the full-screen app in an 80x24 pseudo-terminal → the first frame
  holding the prompt drawn; baseline: ``python -c pass``.
* **2 turns x 5 parallel ``sleep 1``** end to end through ``agent-tui -p`` (the floor is 2 s),
  as a person gets it (a warm process by then) and with warm start off.
* ``-X importtime``: what each package costs to import on the ``-p`` path.

Targets: first request ≤ 1.5 times the bare ``httpx`` request of the same round, exit ≤ 50 ms after
the final event, first frame ≤ 0.3 s, parallel sleeps ≤ 2.3 s. The first request is judged by
its ratio: on a shared machine the load moves both alike, not the seconds.

    python bench/startup.py [--rounds 7] [--checkout DIR]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: make ``tests.scripted_server`` importable

from bench.loop import parallel_script, timed_run
from tests.scripted_server import RecordedRequest, ScriptedServer

AGENT_TUI = [str(Path(sys.executable).with_name("agent-tui"))]
"""How agent-tui is started: the installed command, or ``python -m tui`` from ``--checkout``."""
TARGETS = {"exit": 0.050, "first frame": 0.3, "parallel sleeps": 2.3}
"""Figures judged in seconds."""
RATIO_TARGETS = {"first request": 1.5}
"""Figures judged by their ratio to the baseline measured beside them."""
FRAME_TEXT = b"Ask anything"
"""Drawn by the first frame at 80x24: the prompt's placeholder, there before the session is."""


BARE_APP = """
from textual.app import App
from textual.widgets import Input, Static


class Bare(App[None]):
    BINDINGS = [("ctrl+q", "quit")]

    def compose(self):
        yield Static("Ask anything")
        yield Input()


Bare().run()
"""
"""The floor for a first frame: Textual itself drawing one line of text and an input."""


FLOOR = """
import asyncio
import httpx2 as httpx
from pydantic import BaseModel


class Message(BaseModel):
    role: str
    content: str


async def main():
    message = Message(role="user", content="hi").model_dump()
    body = {{"model": "bench", "stream": True, "messages": [message]}}
    async with httpx.AsyncClient() as client:
        await client.post({url!r}, json=body)


asyncio.run(main())
"""
"""The floor under any first request here: asyncio, pydantic and httpx imported, one model
defined and validated, one request sent; what agent-tui adds is the rest."""


ESCAPES = re.compile(
    rb"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z])"
)
"""Terminal control sequences (CSI, OSC, charset), dropped before looking for text."""


class TimedServer(ScriptedServer):
    """The scripted server, noting when each request arrived on the shared monotonic clock."""

    def __init__(self) -> None:
        super().__init__(record_bodies=False)
        self.arrivals: list[float] = []

    def record(self, request: RecordedRequest) -> None:
        self.arrivals.append(time.monotonic())
        super().record(request)


def headless_command(server: TimedServer, prompt: str, *extra: str) -> list[str]:
    return [
        *AGENT_TUI,
        "-p",
        prompt,
        "--base-url",
        server.openai_base_url,
        "--model",
        "bench",
        "--approval-mode",
        "full-auto",
        *extra,
    ]


def spawn(command: list[str], workspace: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def until_request(
    server: TimedServer, command: list[str], workspace: Path, env: dict[str, str]
) -> float:
    """Exec → the next request's arrival, in seconds; the process is then left to finish."""
    seen = len(server.arrivals)
    started = time.monotonic()
    process = spawn(command, workspace, env)
    if not server.wait_for_requests(len(server.requests) + 1, timeout=30):
        process.kill()
        raise SystemExit(f"no request from {command[0]}: {process.communicate()[1][-400:]!r}")
    arrived = server.arrivals[seen]
    process.communicate(timeout=60)
    return arrived - started


def last_line_to_exit(command: list[str], workspace: Path, env: dict[str, str]) -> float:
    """The last line read on stdout → the process reaped."""
    process = spawn(command, workspace, env)
    assert process.stdout is not None
    last = time.monotonic()
    for _line in process.stdout:
        last = time.monotonic()
    process.wait(timeout=60)
    ended = time.monotonic()
    if process.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {process.stderr.read()[-400:]!r}")  # type: ignore[union-attr]
    return ended - last


def first_frame(command: list[str], workspace: Path, env: dict[str, str], text: bytes) -> float:
    """Exec in an 80x24 pseudo-terminal → ``text`` drawn; then the app is sent ctrl+q."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=workspace,
        env=env,
        stdin=child,
        stdout=child,
        stderr=child,
        start_new_session=True,
    )
    os.close(child)
    seen = b""
    drawn: float | None = None
    deadline = started + 30
    while drawn is None and time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        seen = (seen + chunk)[-65536:]
        if text in ESCAPES.sub(b"", seen):  # styles may split the words on the wire
            drawn = time.monotonic()
    for key in (b"\x11", b"\x11"):
        if process.poll() is None:
            with open(os.devnull, "wb"):
                os.write(main, key)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    os.close(main)
    if drawn is None:
        raise SystemExit(f"no frame with {text!r} from {command[0]}: {seen[-300:]!r}")
    return drawn - started


def whole(command: list[str], workspace: Path, env: dict[str, str]) -> float:
    elapsed, done = timed_run(command, workspace, env)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({done.returncode}): {done.stderr[-400:]!r}")
    return elapsed


def import_costs(command: list[str], workspace: Path, env: dict[str, str]) -> dict[str, float]:
    """Self time of every import on the path, summed per package (``tui`` per room)."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "tui",
            *command[len(AGENT_TUI) :],
        ],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    totals: dict[str, float] = defaultdict(float)
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = (part.strip() for part in line[12:].split("|"))
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "tui" and len(parts) > 1 else parts[0]
        # Imports running in two threads at once nest into each other's timings, which can
        # leave a negative "self": such a line says nothing of its module and is skipped.
        totals[key] += max(0, int(self_us)) / 1e6
    return dict(totals)


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def paired(
    rounds: int, measure: Callable[[], float], baseline: Callable[[], float]
) -> tuple[float, float, float]:
    """Median of each, and the median of the per-round ratios (drift cancels pair by pair)."""
    ours: list[float] = []
    base: list[float] = []
    for _ in range(rounds):
        ours.append(measure())
        base.append(baseline())
    ratios = [a / b for a, b in zip(ours, base, strict=True)]
    return median(ours), median(base), median(ratios)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--checkout", type=Path, help="time `python -m tui` from this checkout (e.g. an older one)"
    )
    args = parser.parse_args()
    if args.checkout is not None:
        AGENT_TUI[:] = [sys.executable, "-m", "tui"]
    home = Path(tempfile.mkdtemp(prefix="agent-tui-startup-"))
    workspace = home / "workspace"
    workspace.mkdir()
    env = dict(
        os.environ,
        OPENAI_API_KEY="bench-key",
        AGENT_TUI_CONFIG_DIR=str(home / "config"),
        AGENT_TUI_DATA_DIR=str(home / "data"),
        TERM="xterm-256color",
    )
    env.pop("TMUX", None)
    env.pop("AGENT_TUI_AGENT__WARM_START", None)
    unwarmed = dict(env, AGENT_TUI_AGENT__WARM_START="false")
    """The same runs started the ordinary way every time (sent ahead once remembered)."""
    # An installed agent-tui runs from compiled bytecode; a checkout whose environment says
    # not to write it would time the compiler instead (the warm-up rounds write it).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.checkout is not None:
        env["PYTHONPATH"] = str(args.checkout.resolve())
    python = sys.executable
    rows: list[tuple[str, float, str, float, float]] = []
    with TimedServer() as server:

        def ours_request() -> float:
            server.add({"text": "hello"})
            return until_request(server, headless_command(server, "hi"), workspace, env)

        def cold_request() -> float:
            server.add({"text": "hello"})
            fresh = dict(env, AGENT_TUI_DATA_DIR=tempfile.mkdtemp(dir=home, prefix="data-"))
            return until_request(server, headless_command(server, "hi"), workspace, fresh)

        def bare_request() -> float:
            server.add({"text": "hello"})
            url = f"{server.openai_base_url}/chat/completions"
            body = "{'model': 'bench', 'stream': True, 'messages': []}"
            code = f"import httpx2; httpx2.post({url!r}, json={body})"
            return until_request(server, [python, "-c", code], workspace, env)

        def floor_request() -> float:
            server.add({"text": "hello"})
            url = f"{server.openai_base_url}/chat/completions"
            return until_request(server, [python, "-c", FLOOR.format(url=url)], workspace, env)

        def python_pass() -> float:
            return whole([python, "-c", "pass"], workspace, env)

        for _ in range(2):  # warm the page cache and the bytecode
            ours_request()
            bare_request()
        ours, base, ratio = paired(args.rounds, ours_request, bare_request)
        rows.append(("first request", ours, "bare httpx request", base, ratio))

        def unwarmed_request() -> float:
            server.add({"text": "hello"})
            return until_request(server, headless_command(server, "hi"), workspace, unwarmed)

        for _ in range(2):  # remembered and confirmed under this environment too
            unwarmed_request()
        sent, base, ratio = paired(args.rounds, unwarmed_request, bare_request)
        rows.append(("  warm start off", sent, "bare httpx request", base, ratio))
        cold, base, ratio = paired(args.rounds, cold_request, bare_request)
        rows.append(("  nothing remembered", cold, "bare httpx request", base, ratio))
        floor = median([floor_request() for _ in range(args.rounds)])
        rows.append(("  beside the floor", ours, "asyncio+pydantic+httpx", floor, ours / floor))
        passed = median([python_pass() for _ in range(args.rounds)])
        rows.append(("  beside python -c pass", ours, "python -c pass", passed, ours / passed))

        def ours_exit() -> float:
            server.add({"text": "hello"})
            command = headless_command(server, "hi", "--output-format", "stream-json")
            return last_line_to_exit(command, workspace, env)

        def bare_exit() -> float:
            return last_line_to_exit([python, "-c", "print(1)"], workspace, env)

        ours, base, ratio = paired(args.rounds, ours_exit, bare_exit)
        rows.append(("exit", ours, "python -c print(1)", base, ratio))

        def ours_frame() -> float:
            command = [*AGENT_TUI, "--base-url", server.openai_base_url, "--model", "bench"]
            return first_frame(command, workspace, env, FRAME_TEXT)

        ours, base, ratio = paired(max(3, args.rounds // 2), ours_frame, python_pass)
        rows.append(("first frame", ours, "python -c pass", base, ratio))

        def bare_frame() -> float:
            return first_frame([python, "-c", BARE_APP], workspace, env, FRAME_TEXT)

        bare = median([bare_frame() for _ in range(max(3, args.rounds // 2))])
        rows.append(("  beside a bare app", ours, "bare Textual app", bare, ours / bare))

        def ours_sleeps(environ: dict[str, str] = env) -> float:
            server.add(*parallel_script(2, 5))
            command = headless_command(server, "sleep", "--max-turns", "5")
            return whole(command, workspace, environ)

        ours, base, ratio = paired(3, ours_sleeps, python_pass)
        rows.append(("parallel sleeps", ours, "python -c pass", base, ratio))
        cold = median([ours_sleeps(unwarmed) for _ in range(3)])
        rows.append(("  warm start off", cold, "python -c pass", base, cold / base))
        server.add({"text": "hello"})
        costs = import_costs(headless_command(server, "hi"), workspace, env)
    shutil.rmtree(home, ignore_errors=True)

    print(f"{'figure':<22}{'ours':>9}  {'target':>7}  {'baseline':<22}{'base':>8}{'ratio':>8}")
    for name, value, base_name, base_value, ratio in rows:
        target = TARGETS.get(name)
        ratio_target = RATIO_TARGETS.get(name)
        mark = "" if target is None else ("ok" if value <= target else "over")
        target_text = f"{target:.3f}" if target is not None else ""
        if ratio_target is not None:
            mark = "ok" if ratio <= ratio_target else "over"
            target_text = f"{ratio_target:.1f}x"
        base_text = f"{base_value:.3f}" if base_value else ""
        print(
            f"{name:<22}{value:9.3f}  {target_text:>7}  {base_name:<22}{base_text:>8}"
            f"{ratio:8.2f}  {mark}"
        )
    print("\nimport self-time on the -p path (s), largest first:")
    for name, seconds in sorted(costs.items(), key=lambda item: -item[1])[:20]:
        print(f"  {name:<28}{seconds:7.3f}")
    print(f"  {'total':<28}{sum(costs.values()):7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

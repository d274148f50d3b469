"""A long session against a model with a real window: does the context stay inside it, and at
what cost?

500 steps, each a real ``run_shell`` call whose result is ~5 KB, against a loopback model server
that enforces a 100k-token window (body bytes / 4) and refuses anything larger with its API's
real context-length error. The session runs through ``build_session`` and the real loop, with
the window told to it (``[provider] context_window``), so compaction is what keeps it going.

Printed per wire format: wall time, peak RSS (of this process, which also hosts the server),
compactions by stage, summary requests, requests refused as too long, the largest request in
bytes and estimated tokens (never over the window), mean bytes per request, total bytes sent,
what resending the whole uncompacted conversation each time would have sent instead, and how
much of what was sent repeated the start of the request before it byte for byte (what a
provider's prefix cache can serve instead of reading it again).

    python bench/long_session.py [--steps 500] [--result-bytes 5000] [--window 100000]
                                 [--api openai|openai-responses|anthropic|both]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make ``tests`` and ``tui`` importable
    sys.path.insert(0, str(ROOT))

from tests.scripted_server import ScriptedServer
from tui.agent.context_window import message_chars
from tui.agent.transcript import SessionStore
from tui.config import load_settings
from tui.events import Compacted, Event
from tui.wiring import build_session


@dataclass
class Figures:
    api: str
    steps_run: int
    wall_s: float
    peak_rss_mb: float
    stubs: int
    summaries: int
    summary_requests: int
    refused: int
    requests: int
    max_bytes: int
    mean_bytes: float
    total_bytes: int
    naive_bytes: int
    prefix_bytes: int
    window: int


def script(steps: int, result_bytes: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for n in range(1, steps + 1):
        command = f"echo step-{n} >> steps.log && head -c {result_bytes} /dev/zero | tr '\\0' y"
        arguments = json.dumps(
            {"command": command, "risk": "low", "mutation": False, "privesc": False, "why": "step"}
        )
        out.append(
            {"tool_calls": [{"id": f"call_{n}", "name": "run_shell", "arguments": arguments}]}
        )
    out.append({"text": "all steps done"})
    return out


async def run(api: str, steps: int, result_bytes: int, window: int, root: Path) -> Figures:
    workspace = root / api / "work"
    workspace.mkdir(parents=True)
    os.environ["AGENT_TUI_CONFIG_DIR"] = str(root / api / "config")
    os.environ["AGENT_TUI_DATA_DIR"] = str(root / api / "data")
    compactions: list[Compacted] = []
    with ScriptedServer(
        script(steps, result_bytes),
        window_tokens=window,
        summary_text="Numbered steps ran; each appended its line to steps.log.",
        record_bodies=False,
    ) as server:
        overrides = {
            "provider": {
                "name": api,
                "model": "scripted-model",
                "base_url": server.base_url if api == "anthropic" else server.openai_base_url,
                "api_key": "bench-key",
                "context_window": window,
            },
            "approval": {"mode": "full-auto"},
        }
        session = build_session(workspace, load_settings(workspace, overrides=overrides, env={}))

        def listen(event: Event) -> None:
            if isinstance(event, Compacted):
                compactions.append(event)

        session._bus.add_listener(listen)
        started = time.perf_counter()
        try:
            outcome = await session.submit(f"run the {steps} steps")
        finally:
            wall = time.perf_counter() - started
            transcript = session._transcript.path
            await session.aclose()
        if outcome.reason != "completed":
            raise SystemExit(f"{api}: the session ended with {outcome.reason}: {outcome.error}")
        sizes = [int(r.body["bytes"]) for r in server.requests if r.body.get("tools")]
        prefix = sum(int(r.body["shared_prefix"]) for r in server.requests if r.body.get("tools"))
        refused, summary_requests = server.rejected, server.summary_requests
    saved = SessionStore(root / api / "data" / "sessions").read(transcript.stem).saved_messages
    # Resending everything each time: request k carries the fixed part and messages 0..k.
    fixed = sizes[0] - sum(message_chars(m) for m in saved[:1])
    naive, grown = 0, fixed
    for message in saved:
        grown += message_chars(message)
        if message.role == "user" or message.role == "tool":
            naive += grown
    ran = (workspace / "steps.log").read_text().split()
    assert ran == [f"step-{n}" for n in range(1, steps + 1)], "a step was lost or ran twice"
    return Figures(
        api=api,
        steps_run=len(ran),
        wall_s=wall,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        stubs=sum(c.stage == "stubs" for c in compactions),
        summaries=sum(c.stage == "summary" for c in compactions),
        summary_requests=summary_requests,
        refused=refused,
        requests=len(sizes),
        max_bytes=max(sizes),
        mean_bytes=sum(sizes) / len(sizes),
        total_bytes=sum(sizes),
        naive_bytes=naive,
        prefix_bytes=prefix,
        window=window,
    )


def table(rows: list[Figures]) -> str:
    head = (
        "api", "steps", "wall s", "peak RSS MB", "compactions (stubs+summary)", "summary reqs",
        "refused", "requests", "max bytes/req (tokens/window)", "mean bytes/req", "total MB sent",
        "uncompacted would send MB", "prefix-cacheable MB",
    )  # fmt: skip
    lines = [head]
    for f in rows:
        lines.append(
            (
                f.api,
                str(f.steps_run),
                f"{f.wall_s:.1f}",
                f"{f.peak_rss_mb:.0f}",
                f"{f.stubs + f.summaries} ({f.stubs}+{f.summaries})",
                str(f.summary_requests),
                str(f.refused),
                str(f.requests),
                f"{f.max_bytes:,} ({f.max_bytes // 4:,}/{f.window:,})",
                f"{f.mean_bytes:,.0f}",
                f"{f.total_bytes / 1e6:.1f}",
                f"{f.naive_bytes / 1e6:.1f}",
                f"{f.prefix_bytes / 1e6:.1f} ({f.prefix_bytes / f.total_bytes:.0%})",
            )
        )
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--result-bytes", type=int, default=5_000)
    parser.add_argument("--window", type=int, default=100_000)
    parser.add_argument(
        "--api", choices=["openai", "openai-responses", "anthropic", "both"], default="both"
    )
    args = parser.parse_args()
    apis = ["openai", "anthropic"] if args.api == "both" else [args.api]
    rows = []
    with tempfile.TemporaryDirectory(prefix="long-session-") as tmp:
        for api in apis:
            rows.append(
                asyncio.run(run(api, args.steps, args.result_bytes, args.window, Path(tmp)))
            )
    print(table(rows))


if __name__ == "__main__":
    main()

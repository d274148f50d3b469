"""The core never imports Textual: the agent, tools and backends must run with no UI at all."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import tui

REPO = Path(__file__).resolve().parents[1]


def core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(tui.__path__, prefix="tui."):
        if info.name.startswith(("tui.ui.", "tui.__main__")) or info.name == "tui.ui":
            continue
        names.append(info.name)
    return names


def test_core_modules_do_not_import_textual() -> None:
    modules = core_modules()
    assert "tui.tools.registry" in modules and "tui.security.policy" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(leaked))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"textual imported by the core: {out.stdout}"


def test_version_is_fast_and_textual_free() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tui", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("agent-tui ")
    imported = [line.split("|")[-1].strip() for line in out.stderr.splitlines() if "|" in line]
    assert not [name for name in imported if name.startswith("textual")]
    assert not [name for name in imported if name.startswith(("httpx", "pydantic"))]


def test_the_price_table_loads_only_when_a_price_is_needed() -> None:
    """genai-prices takes ~0.3 s to import: building a session must not pay for it."""
    code = (
        "import sys\n"
        "import tui.agent.loop, tui.session, tui.cli, tui.agent.pricing\n"
        "print('genai_prices' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_rater_loads_while_the_first_request_is_out() -> None:
    """Not at start-up (building a session must not pay for it), and loaded by the time the
    first tool call is judged: a fresh interpreter, a real model server that answers the first
    request with a command after 0.3 s, and a before-tool callback that looks."""
    code = """
import asyncio, json, sys
from pathlib import Path
import tempfile
from tests.scripted_server import ScriptedServer
from tui.config import load_settings
from tui.wiring import build_session

async def main():
    workspace = Path(tempfile.mkdtemp())
    call = {"id": "c1", "name": "run_shell", "arguments": json.dumps({"command": "true"})}
    with ScriptedServer([
        {"text": "", "tool_calls": [call], "delay_between_events": 0.05},
        {"text": "done"},
    ]) as server:
        overrides = {"provider": {"name": "openai", "model": "m", "api_key": "k",
                                  "base_url": server.openai_base_url},
                     "approval": {"mode": "full-auto"}}
        session = build_session(workspace, load_settings(workspace, overrides=overrides, env={}))
        at_start = "tui.security.risk.assess" in sys.modules
        seen = []
        from tui.security.risk.warm import is_warm
        async def look(info):
            seen.append(is_warm())
        session._loop.hooks.before_tool.append(look)
        await session.submit("go")
        await session.aclose()
        print(json.dumps({"at_start": at_start, "at_first_call": seen}))

asyncio.run(main())
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"at_start": False, "at_first_call": [True]}, out.stderr[-2000:]


def test_one_http_stack() -> None:
    """httpx2 and httpcore2 only: the first-generation httpx/httpcore (and their certifi CA
    bundle) are not imported by any module, so a clean install does not need them."""
    code = (
        "import importlib, sys\n"
        f"for name in {core_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "import tui.ui.app\n"
        "stack = ('httpx', 'httpcore', 'certifi')\n"
        "old = sorted(m for m in sys.modules if m.split('.')[0] in stack)\n"
        "print(','.join(old))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the old HTTP stack was imported: {out.stdout}"

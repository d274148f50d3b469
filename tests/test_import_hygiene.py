"""The core never imports Textual: the agent, tools and backends must run with no UI at all."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import tui


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

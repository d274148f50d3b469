"""The house rules hold: the import contracts in pyproject.toml, and no module over 600 lines.

The contracts (layers from the command line down to the events, a UI that talks only to the
session, no terminal library outside the UI, execution and security below the tools, no import
circles) are checked by ``lint-imports`` on the real import graph, every run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 600


def lint_imports() -> str:
    beside = Path(sys.executable).with_name("lint-imports")
    return str(beside) if beside.exists() else (shutil.which("lint-imports") or str(beside))


def test_import_contracts_hold() -> None:
    done = subprocess.run(
        [lint_imports(), "--no-cache"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout's graph, not an install's
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = done.stdout + done.stderr
    assert "Contracts:" in report, report[-2000:]
    assert done.returncode == 0 and "0 broken" in report, report[report.find("Broken") :][:6000]


def test_no_module_over_600_lines() -> None:
    sizes = {
        path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (REPO / "tui").rglob("*.py")
    }
    assert len(sizes) > 100  # the walk found the package
    over = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert over == {}, f"modules over {MAX_LINES} lines: {over}"

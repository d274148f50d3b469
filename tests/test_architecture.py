"""The house rules hold: the import contracts in pyproject.toml, no module over 600 lines but
a short list of exceptions with their reasons, and the types check (``mypy --strict`` over
the package and its tests).

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

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 600
LONG_MODULES: dict[str, str] = {}
"""The modules allowed past ``MAX_LINES``, each with its reason, which must be that a split
would only forward: one file passing calls to the other, a reader following every call
across both. Short on purpose (``MAX_LONG_MODULES``); a module leaves it once it is short."""
MAX_LONG_MODULES = 5


def lint_imports() -> str:
    beside = Path(sys.executable).with_name("lint-imports")
    return str(beside) if beside.exists() else (shutil.which("lint-imports") or str(beside))


def check(command: list[str]) -> tuple[int, str]:
    """Run a checker on this checkout (its own graph and files, not an install's)."""
    done = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_import_contracts_hold() -> None:
    code, report = check([lint_imports(), "--no-cache"])
    assert "Contracts:" in report, report[-2000:]
    assert code == 0 and "0 broken" in report, report[report.find("Broken") :][:6000]


def module_sizes() -> dict[str, int]:
    """Lines of every module of the package, by its path from the checkout."""
    return {
        path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (REPO / "tui").rglob("*.py")
    }


def test_no_module_over_600_lines_but_the_listed() -> None:
    sizes = module_sizes()
    assert len(sizes) > 100  # the walk found the package
    over = {
        name: lines
        for name, lines in sizes.items()
        if lines > MAX_LINES and name not in LONG_MODULES
    }
    assert over == {}, f"modules over {MAX_LINES} lines, not in LONG_MODULES: {over}"


def test_the_long_list_is_short_and_true() -> None:
    """Each exception still exists, is still long (else it leaves the list) and says why."""
    sizes = module_sizes()
    assert len(LONG_MODULES) <= MAX_LONG_MODULES, sorted(LONG_MODULES)
    stale = {name: sizes.get(name) for name in LONG_MODULES if sizes.get(name, 0) <= MAX_LINES}
    assert stale == {}, f"listed in LONG_MODULES but gone or short: {stale}"
    unexplained = [name for name, why in LONG_MODULES.items() if len(why.split()) < 5]
    assert unexplained == [], f"LONG_MODULES entries without a reason: {unexplained}"


@pytest.mark.slow
@pytest.mark.timeout(600)  # a cold mypy run over some 450 modules, on a shared machine
def test_types_check() -> None:
    """``mypy --strict`` (``[tool.mypy]``) over the package and its tests, in one run: a narrow
    method's promise to its callers is only as good as the types that say what it takes and
    gives, and a test that calls it wrongly tests something else."""
    # No cache: a fresh run writes one it never reads, a fifth of its time.
    code, report = check([sys.executable, "-m", "mypy", "--cache-dir", os.devnull, "tui", "tests"])
    assert code == 0 and "Success: no issues found" in report, report[-6000:]

"""styles/ ships inside the wheel and is found from a plain, non-editable install."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_carries_styles_and_finds_them_installed(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("agent_tui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n for n in names if n.startswith("tui/styles/") and n.endswith(".tcss"))
    assert shipped == sorted(f"tui/styles/{p.name}" for p in (ROOT / "styles").glob("*.tcss"))

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import tui.locations as l; "
        "d = l.styles_dir(); print(d); print(sorted(p.name for p in d.glob('*.tcss')))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code, str(target)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    where, files = out.stdout.splitlines()
    assert Path(where) == target / "tui" / "styles"
    assert "app.tcss" in files

"""The distribution as a person installs it: ``agent-tui-cli`` gives the ``agent-tui`` command.

A built wheel carries the styles and the licence; a clean virtual environment installs it by
name and gets a working command, with no second HTTP stack and nothing declared but unused;
``uv tool install .`` and ``pipx install .`` give the same command. Slow: these build and
install for real (the dependencies come from the package index).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "agent-tui-cli"
WHEEL_GLOB = "agent_tui_cli-*.whl"


def build_wheel(folder: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = folder.glob(WHEEL_GLOB)
    return wheel


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, built once per run for the tests that look into it and
    install it (neither changes it): the first test process to need it builds it, holding a
    lock in the run's temporary folder that the others wait on."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / "packaging-wheel"
    folder.mkdir(exist_ok=True)
    with open(shared / "packaging-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted(folder.glob(WHEEL_GLOB))
        return built[0] if built else build_wheel(folder)


def test_the_distribution_is_named_and_licensed_for_what_it_says() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"]["agent-tui"] == "tui.launch:console"
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    names = " ".join(project["dependencies"])
    # One HTTP stack, and nothing declared that nothing imports.
    assert "httpx2" in names and "httpx>" not in names and "httpx=" not in names
    assert "pydantic-settings" not in names
    readme = (ROOT / "README.md").read_text()
    assert f"pipx install {DISTRIBUTION}" in readme and f"uv tool install {DISTRIBUTION}" in readme


@pytest.mark.slow
def test_wheel_carries_styles_and_licence_and_finds_them_installed(
    wheel: Path, tmp_path: Path
) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n for n in names if n.startswith("tui/styles/") and n.endswith(".tcss"))
    assert shipped == sorted(f"tui/styles/{p.name}" for p in (ROOT / "styles").glob("*.tcss"))
    licence = [n for n in names if n.endswith("/licenses/LICENSE")]
    assert licence, names[-10:]
    assert b"MIT License" in zipfile.ZipFile(wheel).read(licence[0])

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


def clean_env(home: Path) -> dict[str, str]:
    """No virtual environment of ours leaks in; the tool folders are the test's own."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix)
    )
    env["HOME"] = str(home)
    env["AGENT_TUI_CONFIG_DIR"] = str(home / "config")
    env["AGENT_TUI_DATA_DIR"] = str(home / "data")
    return env


def works(command: Path, env: dict[str, str], cwd: Path) -> None:
    """The installed command answers, lists its tools and finds its styles."""
    out = subprocess.run(
        [str(command), "--version"], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.startswith("agent-tui "), out.stderr
    out = subprocess.run(
        [str(command), "tools"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "run_shell" in out.stdout, out.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_clean_venv_installs_it_by_name_from_the_wheel(wheel: Path, tmp_path: Path) -> None:
    wheels = wheel.parent
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = clean_env(tmp_path)
    install = subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "-q",
            "--find-links",
            str(wheels),
            f"{DISTRIBUTION}==0.1.0",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=800,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    works(venv / "bin" / "agent-tui", env, tmp_path)
    code = (
        "import importlib.util as u, tui.locations as l\n"
        "print(l.styles_dir())\n"
        "unused = ('httpx', 'httpcore', 'pydantic_settings', 'dotenv')\n"
        "print([m for m in unused if u.find_spec(m)])\n"
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    styles, leftovers = out.stdout.splitlines()
    assert styles.startswith(str(venv)) and styles.endswith("tui/styles")
    assert leftovers == "[]", f"installed but never used: {leftovers}"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("installer", ["uv", "pipx"])
def test_tool_installers_give_the_command(tmp_path: Path, installer: str) -> None:
    found = shutil.which(installer) or str(Path(sys.executable).with_name(installer))
    if not Path(found).exists():
        pytest.skip(f"{installer} is not installed (pip install '.[test]' brings it)")
    env = clean_env(tmp_path)
    bin_dir = tmp_path / "bin"
    if installer == "uv":
        env.update(
            UV_TOOL_DIR=str(tmp_path / "tools"),
            UV_TOOL_BIN_DIR=str(bin_dir),
            UV_CACHE_DIR=str(tmp_path / "cache"),
        )
        command = [found, "tool", "install", str(ROOT)]
    else:
        env.update(
            PIPX_HOME=str(tmp_path / "pipx"),
            PIPX_BIN_DIR=str(bin_dir),
            PIPX_MAN_DIR=str(tmp_path / "man"),
        )
        command = [found, "install", str(ROOT)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (bin_dir / "agent-tui").exists()
    works(bin_dir / "agent-tui", env, tmp_path)

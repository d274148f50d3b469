"""Private temp folders: a killed agent-tui's are removed by the next one to end, a live one's
never.

Real processes: each child makes a folder as agent-tui does and holds it; one is killed with
SIGKILL (nothing of it runs after), the other stays alive while the next folder is made.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tui import scratch
from tui.scratch import LOCK, private_folder, remove_private_folder

HOLDER = (
    "import sys, time\n"
    "from tui.scratch import private_folder\n"
    "print(private_folder('probe'), flush=True)\n"
    "time.sleep(120)\n"
)


def holder(temp: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process that made a ``probe`` folder in ``temp`` and holds it; the folder."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    return child, Path(child.stdout.readline().strip())


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(scratch, "_swept", set())
    return tmp_path


def test_a_killed_processs_folders_go_when_the_next_one_ends_and_a_live_ones_stay(
    temp: Path,
) -> None:
    killed, left = holder(temp)
    alive, kept = holder(temp)
    lockless = temp / "agent-tui-probe-older"  # an older agent-tui's, or one a moment from its lock
    lockless.mkdir()
    other_kind = temp / "agent-tui-other-x"
    other_kind.mkdir()
    (other_kind / LOCK).touch()
    try:
        assert left.is_dir() and kept.is_dir() and (left / LOCK).exists()
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(timeout=10)
        mine = Path(private_folder("probe"))
        assert mine.is_dir() and mine.stat().st_mode & 0o777 == 0o700
        assert left.is_dir()  # making one walks nothing: start-up stays as it was
        remove_private_folder(str(mine))
        assert not mine.exists() and not left.exists()
        assert kept.is_dir() and lockless.is_dir() and other_kind.is_dir()
    finally:
        alive.kill()
        alive.wait(timeout=10)


def test_a_lock_file_swapped_for_a_link_is_not_followed(temp: Path) -> None:
    """A folder a sandboxed program could write (the browser's) may hold anything: a link
    in place of the lock is not opened, and the folder is left as it is."""
    target = temp / "elsewhere"
    target.write_text("kept")
    folder = temp / "agent-tui-probe-linked"
    folder.mkdir()
    (folder / LOCK).symlink_to(target)
    remove_private_folder(private_folder("probe"))
    assert folder.is_dir() and target.read_text() == "kept"

"""What the app looks like, frame by frame, in the states people screenshot.

Scenes are deterministic (frozen clock, fixed event timestamps, cursor blink off); see
``tests/snapshot_apps/scenes.py``. Update with ``pytest tests/test_ui_snapshots.py
--snapshot-update`` and look at the SVGs before committing them.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pytest
from pytest_textual_snapshot import node_to_report_path

from tests.snapshot_apps.scenes import SIZE, scene
from tests.snapshot_apps.svg_text import mismatch
from tests.snapshot_apps.truth_scenes import TRUTH_SCENES

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def snap_compare(snap_compare: Any, request: pytest.FixtureRequest) -> Callable[..., bool]:
    """The plugin's comparison, failing with what differs on screen rather than ``False``."""

    def compare(app: Any, **options: Any) -> bool:
        if snap_compare(app, **options):
            return True
        # What the plugin keeps for its report: (result, accepted SVG, this run's SVG, …).
        kept = pickle.loads(node_to_report_path(request.node).read_bytes())
        raise AssertionError(f"snapshot mismatch: {mismatch(kept[1], kept[2])}")

    return compare


def compare(snap_compare: Any, name: str, size: tuple[int, int] = SIZE) -> bool:
    make, play = scene(name)
    return bool(snap_compare(make(), terminal_size=size, run_before=play))


class TestDiffs:
    def test_edit_approval_shows_a_coloured_numbered_diff(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "diff_approval")

    def test_edit_result_block_shows_the_diff(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "diff_result")


class TestMainScreen:
    def test_idle(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "idle")

    def test_streaming_text(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "streaming")

    def test_running_tool(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "running_tool")

    def test_mirror_with_colours(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "mirror")

    def test_no_provider(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "no_provider")

    def test_adapter_tools_and_a_scheduled_job(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "adapters")

    def test_completion_popup_on_slash(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "completion")


class TestScreens:
    def test_approval_modal_long_multi_segment_command(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "approval")

    def test_grants(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "grants")

    def test_workspace_trust(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "trust")

    def test_pager_search_marks_matches(self, snap_compare: Any) -> None:
        assert compare(snap_compare, "pager_search")


SIZES = [(60, 20), (80, 24), (120, 40), (200, 60)]


class TestTerminalSizes:
    """Every size a person uses: the answers, the form's pattern and buttons, nothing cut."""

    @pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
    @pytest.mark.parametrize("name", ["working", "approval", "always", "grants"])
    def test_scene_at_size(self, snap_compare: Any, name: str, size: tuple[int, int]) -> None:
        assert compare(snap_compare, name, size)


TRUTH_SIZES = [(60, 20), (80, 24), (200, 60)]


class TestApprovalsTellTheWholeTruth:
    """The last line of every diff (or a "more below" mark), a new file's one line, every rule
    of a 13-segment command, the wait for answers, a hostile ``why`` on one line above the
    command: at the smallest, the usual and a large terminal."""

    @pytest.mark.parametrize("size", TRUTH_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
    @pytest.mark.parametrize("name", TRUTH_SCENES)
    def test_truth_scene_at_size(self, snap_compare: Any, name: str, size: tuple[int, int]) -> None:
        assert compare(snap_compare, name, size)

"""The collector held back while the command starts, set back once the first session is built."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer
from tui import startup_gc
from tui.config import load_settings
from tui.wiring import build_session


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """The thresholds as the test found them, set back after it (and nothing left held)."""
    before = gc.get_threshold()
    yield before
    startup_gc._held = None
    gc.set_threshold(*before)
    gc.unfreeze()


def test_held_then_released(thresholds: tuple[int, int, int]) -> None:
    startup_gc.hold()
    startup_gc.hold()  # a second hold keeps the thresholds to set back
    assert gc.get_threshold() == (startup_gc.HELD_THRESHOLD, *thresholds[1:])
    assert gc.isenabled()  # still collecting, only rarely
    frozen = gc.get_freeze_count()
    startup_gc.release()  # what was made so far goes into the permanent generation
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() > frozen


def test_release_without_hold_changes_nothing(thresholds: tuple[int, int, int]) -> None:
    frozen = gc.get_freeze_count()
    startup_gc.release()
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() == frozen


async def test_the_first_session_built_releases_it(
    tmp_path: Path, thresholds: tuple[int, int, int]
) -> None:
    with ScriptedServer([]) as server:
        loaded = load_settings(
            tmp_path,
            overrides={
                "provider": {
                    "name": "openai",
                    "model": "m",
                    "base_url": server.openai_base_url,
                    "api_key": "k",
                }
            },
        )
        startup_gc.hold()
        session = build_session(tmp_path, loaded)
        try:
            assert gc.get_threshold() == thresholds
        finally:
            await session.aclose()

"""The agent's tmux pane is the size of the box that mirrors it, at any terminal size.

A real tmux server on a private socket, the real app under Pilot: the terminal is resized
and the pane's own size (``tmux display -p``) must follow the mirror's inner size; the zoom
key gives the pane the whole terminal and gives it back.
"""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import pytest

from tests.test_tmux_tools import tmux_backend
from tests.test_ui_app import app_for, make_session, send, until
from tests.tmux_helpers import kill_server, new_socket_name, tmux

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
    pytest.mark.timeout(90),
]


async def test_the_pane_follows_the_mirror_and_the_zoom(workspace: Path) -> None:

    socket = new_socket_name()
    backend = tmux_backend(socket, workspace)
    app = app_for(make_session(workspace, None, backend=backend))
    pane_sizes: list[str] = []

    async def pane_size() -> str:
        assert app.panes.target is not None
        size = await tmux(
            socket, "display", "-p", "-t", app.panes.target, "#{pane_width}x#{pane_height}"
        )
        pane_sizes.append(size.strip())
        return size.strip()

    async def follows(what: str) -> str:
        """Wait until tmux reports the mirror's inner size for the pane (and the frame too)."""
        box = app.mirror.inner_size()
        expected = f"{box[0]}x{box[1]}"
        last = ""
        for _ in range(300):
            last = await pane_size()
            frame = app.mirror.mirror.frame
            if last == expected and frame is not None and (frame.width, frame.height) == box:
                return expected
            await pilot.pause(0.02)
        raise AssertionError(f"{what}: the pane is {last}, the mirror box is {expected}")

    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, app, "!echo ready")
            await until(pilot, lambda: app.mirror.mirror.frame is not None, "a first frame")
            wide = await follows("at 120x40")
            assert wide != "200x50"  # the old fixed size, seen through a small box

            await pilot.resize_terminal(200, 60)
            bigger = await follows("at 200x60")
            assert bigger != wide

            await pilot.resize_terminal(80, 24)
            await pilot.press("f6")  # stacked: the mirror's tab
            await follows("at 80x24, stacked")

            await pilot.press("f5")
            assert app.panels.zoomed
            zoomed = await follows("zoomed")
            # The whole terminal but the mirror's border and the footer.
            assert zoomed == f"{80 - 2}x{24 - 2 - 1}"

            await pilot.press("f5")
            assert not app.panels.zoomed
            assert await follows("unzoomed") != zoomed
    finally:
        await backend.close()
        kill_server(socket)


@pytest.mark.parametrize("size", [(60, 20), (80, 24)], ids=["60x20", "80x24"])
async def test_the_answers_and_the_pattern_stay_on_screen(size: tuple[int, int]) -> None:
    """A long command in a small terminal: the keys, the pattern input and its buttons show."""
    from tests.snapshot_apps.scenes import scene

    make, play = scene("approval")
    app = make()
    async with app.run_test(size=size) as pilot:
        await play(pilot)
        screen = app.screen.region

        def on_screen(selector: str) -> bool:
            region = app.screen.query_one(selector).region
            return region.area > 0 and screen.contains_region(region)

        await until(pilot, lambda: on_screen("#approval-keys"), "the answer keys on screen")
        await pilot.press("a")
        for part in ("#always-pattern", "#always-ok", "#always-back", "#kind-pattern"):
            await until(pilot, partial(on_screen, part), f"{part} on screen")
        assert app.screen.query_one("#always-pattern").region.width >= 20

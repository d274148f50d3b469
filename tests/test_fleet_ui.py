"""The app on a fleet: one approval with the hosts, per-host rows, the host list, the grid.

Pilot against the real app, the scripted model server and four real sshd hosts from an
Ansible inventory, each with its own tmux session over its own connection (the app opens
tmux where a host has it, as for one host) and its own bwrap sandbox.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fleet_support import FleetLab, lab_for_module
from tests.sandbox_support import SKIP_REASON, bwrap_works
from tests.scripted_server import ScriptedServer
from tests.test_ui_app import app_for, approval_ready, send, shell_step, turn_done, until
from tui.config import load_settings
from tui.exec.tmux.backend import TmuxBackend
from tui.exec.tmux.server import Place
from tui.fleet_target import open_fleet
from tui.security.confinement import OUTSIDE
from tui.session import AgentSession
from tui.targets import TargetChoice
from tui.ui.approval.modal import ApprovalScreen
from tui.ui.fleet.grid import HostCell
from tui.ui.tools.host_rows import HostRow
from tui.wiring import build_session

pytestmark = [
    pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON),
    pytest.mark.timeout(180),
]

HOSTS = ["web01", "web02", "web03", "web04"]
WAIT = 30.0


@pytest.fixture(scope="module")
def lab() -> Iterator[FleetLab]:
    yield from lab_for_module(4)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


async def fleet_app_session(lab: FleetLab, server: ScriptedServer, here: Path) -> AgentSession:
    from tui.locations import config_dir

    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "config.toml").write_text(lab.config_toml())
    provider: dict[str, Any] = {
        "name": "openai",
        "model": "scripted",
        "base_url": server.openai_base_url,
        "api_key": "test-key",
    }
    loaded = load_settings(here, overrides={"provider": provider, "approval": {"mode": "ask"}})
    choice = TargetChoice(inventory=str(lab.inventory))
    target = await open_fleet(choice, loaded.settings, Path(lab.workspace), interactive=True)
    return build_session(
        target.workspace,
        loaded,
        target=target,
    )


def cell_text(cell: HostCell) -> str:
    frame = cell.pane.frame
    return "\n".join(frame.lines) if frame is not None else ""


async def test_fan_out_in_the_app_hosts_rows_list_grid_focus_and_take_over(
    lab: FleetLab, server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(lab.home))
    here = tmp_path / "here"
    here.mkdir()
    command = "mktemp w-XXXXXXXX >/dev/null && echo made-$((6*7))"
    server.add(shell_step(command, hosts="all", why="one file per host"), {"text": "Done."})
    session = await fleet_app_session(lab, server, here)
    app = app_for(session)
    async with app.run_test(size=(200, 60)) as pilot:
        # The host list and a grid cell per host, before anything ran.
        await until(pilot, lambda: set(app.hosts.order) == set(HOSTS), "the host list")
        grid = app.fleet.grid
        assert grid is not None and list(grid.cells) == HOSTS
        assert app.mirror.has_class("-grid") and "fleet" in str(app.mirror.border_title)
        await send(pilot, app, "make a file on every host")
        screen = await approval_ready(pilot, app, timeout=WAIT)
        hosts = str(screen.query_one("#approval-hosts").render())
        assert "on 4 hosts of 'all'" in hosts and "web 4" in hosts and "prod 4" in hosts
        keys = screen.query_one("#approval-keys")
        await until(pilot, lambda: "h  some hosts" in str(keys.render()), "the h key")
        # h: every host ticked; untick web02, allow the others.
        await pilot.press("h")
        await until(pilot, lambda: screen.form == "hosts", "the hosts form")
        await pilot.press("down", "space", "enter")
        await turn_done(pilot, app, 2, server)
        assert not isinstance(app.screen, ApprovalScreen)
        rows = app.tools.host_rows.get("call_1")
        assert rows is not None and list(rows.rows) == HOSTS
        status = {name: row.status for name, row in rows.rows.items()}
        assert status == {"web01": "ok", "web02": "refused", "web03": "ok", "web04": "ok"}
        # A row opens to that host's own output.
        row = rows.rows["web03"]
        assert "made-42" in str(row.render()) and "whole output" not in str(row.render())
        row.focus()
        await pilot.press("enter")
        await until(pilot, lambda: "whole output: " in str(row.render()), "the row's output")
        assert "call_1-web03" in str(row.render())
        assert isinstance(app.focused, HostRow)
        # The host list: every host's last exit code and the kernel behind it.
        listed = str(app.hosts.render())
        assert listed.count("kernel") == 4
        await until(
            pilot,
            lambda: all(
                "made-42" in cell_text(grid.cells[name]) for name in ("web01", "web03", "web04")
            ),
            "every allowed host's pane in the grid",
            WAIT,
        )
        assert "made-42" not in cell_text(grid.cells["web02"])
        # One key focuses the highlighted host full-size; take-over types into its pane.
        grid.cells["web03"].focus()
        await pilot.press("f7")
        await until(pilot, lambda: not app.mirror.has_class("-grid"), "the focused host")
        frame = app.mirror.mirror.frame
        assert frame is not None and frame.actor.startswith("ssh:web03/")
        assert "host web03" in str(app.mirror.border_title)
        await pilot.press("ctrl+t")
        assert app.panes.holding
        for key in [*"echo typed-$((1+2))", "enter"]:
            await pilot.press(key if key != " " else "space")
        await until(
            pilot,
            lambda: "typed-3" in "\n".join(app.mirror.mirror.frame.lines),  # type: ignore[union-attr]
            "the person's command in web03's pane",
            WAIT,
        )
        assert "typed-3" in cell_text(grid.cells["web03"])
        assert "typed-3" not in cell_text(grid.cells["web01"])
        # The tmux tools take a host too: the agent reads what the person typed there.
        from tui.tools.context import ToolContext

        ctx = ToolContext("capture", "tmux_capture_pane", session._backend, session._policy)
        pane = app.mirror.mirror.frame.pane_id  # type: ignore[union-attr]
        arguments = {"host": "web03", "target": pane}
        seen = await session._registry.execute("tmux_capture_pane", arguments, ctx)
        assert not seen.is_error and "typed-3" in seen.text, seen.text
        assert seen.text.startswith(f"pane {pane} (ssh:web03/tmux:{pane})")
        default = await session._registry.execute("tmux_capture_pane", {"host": "web01"}, ctx)
        assert "ssh:web01/" in default.text and "typed-3" not in default.text
        await pilot.press("ctrl+right_square_bracket")
        assert not app.panes.holding
        await pilot.press("f7")
        assert app.mirror.has_class("-grid")
        # A host's tmux server killed from outside: its cell keeps the last frame, faded, and
        # says the pane is gone; focused full-size, the mirror says so too.
        opened = session._fleet.opened("web04") if session._fleet is not None else None
        assert opened is not None and isinstance(opened.backend, TmuxBackend)
        kill = Place(opened.ssh, opened.backend.socket_name, "/dev/null").argv("kill-server")
        await opened.ssh.run(shlex.join(kill), timeout=WAIT, confinement=OUTSIDE)
        cell = grid.cells["web04"]
        await until(pilot, lambda: cell.gone is not None, "web04's cell to hear of it", WAIT)
        assert cell.has_class("-gone") and "pane gone" in str(cell.border_subtitle)
        assert "made-42" in cell_text(cell)  # the last frame stays
        assert grid.cells["web01"].gone is None
        cell.focus()
        await pilot.press("f7")
        await until(pilot, lambda: not app.mirror.has_class("-grid"), "web04 full-size")
        assert app.mirror.gone is not None and "pane gone" in str(app.mirror.border_subtitle)

"""``agent-tui -p`` on a fleet: ``--ssh`` given several times, ``--inventory``, ``--limit``.

The real command in a subprocess (no terminal, nothing on stdin), the scripted model server,
three real sshd hosts: the flags are contracts, so they are tested as a script uses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fleet_support import FleetLab, lab_for_module
from tests.sandbox_support import SKIP_REASON, bwrap_works
from tests.sshd import DEFAULT_USER
from tests.test_headless_cli import Cli, ServerProcess, cli, headless, model_server, reason_lines
from tests.test_loop import result_text, shell, tools_step

__all__ = ["cli", "model_server"]  # fixtures used by name

pytestmark = [pytest.mark.skipif(not bwrap_works(), reason=SKIP_REASON), pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def lab() -> Iterator[FleetLab]:
    yield from lab_for_module(3)


def configured(cli: Cli, lab: FleetLab, extra: str = "") -> None:
    config = Path(cli.env["AGENT_TUI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(lab.config_toml(extra))
    cli.env["HOME"] = str(lab.home)


def test_ssh_given_several_times_fans_out(
    cli: Cli, lab: FleetLab, model_server: Callable[..., ServerProcess]
) -> None:
    configured(cli, lab)
    server = model_server(
        [
            tools_step(shell("call_fan", "uname -s", hosts="all")),
            {"text": "Every host runs Linux."},
        ]
    )
    flags = [
        arg
        for server_ in lab.servers.values()
        for arg in ("--ssh", f"{DEFAULT_USER}@{server_.host}:{server_.port}")
    ]
    done = cli.run(
        *headless(server, "which kernel?", *flags, "--workspace", lab.workspace),
        "--output-format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "Every host runs Linux."
    _, second = server.requests()
    text = result_text(second, "call_fan")
    assert "ran on 3 of 3 hosts matching 'all'" in text and "(3 hosts): exit 0" in text
    # The model was told the hosts and how to reach them.
    system = second.body["messages"][0]["content"]
    assert "fleet of 3 SSH hosts" in str(system) and "127.0.0.2" in str(system)


def test_inventory_with_limit_and_a_host_that_asks(
    cli: Cli, lab: FleetLab, model_server: Callable[..., ServerProcess]
) -> None:
    configured(cli, lab, '[fleet.hosts.web02]\napproval_mode = "read-only"\n')
    server = model_server(
        [
            tools_step(shell("call_fan", "mktemp w-XXXXXXXX >/dev/null && echo made", hosts="web")),
            {"text": "Made where allowed."},
        ]
    )
    done = cli.run(
        *headless(server, "make files", "--inventory", str(lab.inventory)),
        *("--limit", "web[0:1]", "--workspace", lab.workspace, "--approval-mode", "full-auto"),
    )
    assert done.returncode == 0, done.stderr
    text = result_text(server.requests()[1], "call_fan")
    # web03 is outside --limit; web02's own mode is read-only: refused there, web01 runs it.
    assert "ran on 1 of 2 hosts matching 'web'" in text, text
    assert "== web01: exit 0" in text and "web02" in text and "read-only" in text


def test_an_unreadable_inventory_is_a_one_line_failure(
    cli: Cli, model_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server = model_server([{"text": "never asked"}])
    done = cli.run(*headless(server, "hi", "--inventory", str(tmp_path / "missing.ini")))
    assert done.returncode == 1
    assert reason_lines(done.stderr) == [
        f"agent-tui: inventory {tmp_path / 'missing.ini'} is not a file"
    ]
    assert server.requests() == []

"""Copying from the real app running inside tmux: the OSC 52 it writes becomes a tmux buffer.

The installed ``agent-tui`` runs in a pane of a private tmux server with ``set-clipboard on``
(tmux then takes an application's OSC 52 as a paste buffer and forwards it outward). A scripted
model answers; ``Ctrl+Y`` copies that answer; the buffer tmux made must hold it exactly — so
the bytes crossed a real terminal, not a patched writer.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.test_headless_cli import AGENT_TUI, Cli, ServerProcess, cli, model_server
from tests.tmux_helpers import clean_env, kill_server, new_socket_name
from tests.waiting import until_blocking

__all__ = ["cli", "model_server"]  # fixtures used here by name

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]
ANSWER = "copied through tmux: ünïcode & <angles>"


@pytest.fixture
def socket_name() -> Iterator[str]:
    name = new_socket_name()
    yield name
    kill_server(name)


def tmux(socket_name: str, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-L", socket_name, *args],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    )
    return done.stdout if done.returncode == 0 else ""


APP_WAIT = 30.0
"""Seconds for the app, run in a real terminal, to start and to answer."""


def test_ctrl_y_reaches_a_tmux_buffer_through_osc52(
    cli: Cli, model_server: Callable[..., ServerProcess], socket_name: str, tmp_path: Path
) -> None:
    server = model_server([{"text": ANSWER}])
    command = [
        str(AGENT_TUI),
        "--no-tmux",
        "--provider",
        "openai",
        "--model",
        "scripted-model",
        "--base-url",
        server.openai_url,
    ]
    env_args = [arg for key, value in cli.env.items() for arg in ("-e", f"{key}={value}")]
    size = ["-x", "120", "-y", "40", "-c", str(cli.workspace)]
    session = ["new-session", "-d", *size, *env_args, "--", *command]
    subprocess.run(
        ["tmux", "-L", socket_name, "-f", "/dev/null", *session],
        env=clean_env(),
        check=True,
        timeout=10,
    )
    # tmux takes an application's OSC 52 as a buffer only with this on (default: external).
    tmux(socket_name, "set", "-g", "set-clipboard", "on")

    def pane() -> str:
        return tmux(socket_name, "capture-pane", "-p")

    until_blocking(lambda: "scripted-model" in pane(), "the app", APP_WAIT, every=0.05)
    tmux(socket_name, "send-keys", "-l", "say it")
    tmux(socket_name, "send-keys", "Enter")
    until_blocking(lambda: "copied through tmux" in pane(), "the answer", APP_WAIT, every=0.05)
    before = tmux(socket_name, "list-buffers")
    tmux(socket_name, "send-keys", "C-y")
    until_blocking(
        lambda: tmux(socket_name, "list-buffers") != before, "a new buffer", APP_WAIT, every=0.05
    )
    assert tmux(socket_name, "show-buffer") == ANSWER
